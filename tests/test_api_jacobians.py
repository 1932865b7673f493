"""jacfwd and jacrev as compiled dispatchers: shapes and layouts against central differences,
calls from njit code, one dispatcher per function and argnums, pickling."""

import math
import pickle

import numba
import numpy as np
import pytest

import moonlite
from moonlite import driver


def central_jacobian(f, args: tuple, argnum: int, h: float = 1e-6) -> np.ndarray:
    """d f(*args) / d args[argnum], shape out.shape + arg.shape; fresh copies per evaluation."""
    def at(x):
        fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        fresh[argnum] = x
        return np.asarray(f(*fresh), dtype=float)

    x = args[argnum]
    columns = []
    for k in range(np.size(x)):
        step = np.zeros(np.size(x))
        step[k] = h
        if np.ndim(x):
            step = step.reshape(x.shape)
            plus, minus = x + step, x - step
        else:
            plus, minus = x + h, x - h
        columns.append((at(plus) - at(minus)) / (2 * h))
    out_shape = np.shape(f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args]))
    return np.stack(columns, axis=-1).reshape(out_shape + np.shape(x))


@numba.njit
def matrix_out(x, scale):
    """A (3, n) output from an n-vector: each row a different smooth function."""
    out = np.empty((3, x.shape[0]))
    for i in range(x.shape[0]):
        out[0, i] = math.sin(x[i]) * scale
        out[1, i] = x[i] * x[(i + 1) % x.shape[0]]
        out[2, i] = math.exp(-x[i] * scale)
    return out


@numba.njit
def smooth_of_matrix(A, s):
    total = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            total += math.tanh(A[i, j] * s) * A[i, 0]
    return total


@numba.njit
def writes_its_input(x, a):
    for i in range(x.shape[0]):
        x[i] = math.sin(x[i]) * a
    return x * x


@numba.njit
def curve(t, c):
    out = np.empty(3)
    out[0] = math.cos(t) * c[0]
    out[1] = math.sin(t) * c[1]
    out[2] = t * t
    return out


@numba.njit
def every_other_square(x):
    y = x * x
    return y[::2]  # a strided view: the reverse rule's cotangent is C-contiguous as its output


X = np.linspace(-0.7, 0.9, 5)
A = np.random.default_rng(3).standard_normal((3, 4))


@pytest.mark.parametrize("api", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("f, args, argnums", [
    (matrix_out, (X, 0.8), 0),
    (matrix_out, (X, 0.8), 1),
    (matrix_out, (X, 0.8), (0, 1)),
    (smooth_of_matrix, (A, 0.6), 0),
    (smooth_of_matrix, (np.asfortranarray(A), 0.6), 0),
    (smooth_of_matrix, (A[:, ::2], 0.6), (1, 0)),
    (writes_its_input, (X, 1.3), 0),
    (curve, (0.4, np.array([2.0, 0.5])), 0),
    (curve, (0.4, np.array([2.0, 0.5])), (0, 1)),
    (every_other_square, (X,), 0),
], ids=["matrix_out_wrt_vector", "matrix_out_wrt_scalar", "matrix_out_wrt_both",
        "scalar_of_matrix", "fortran_matrix", "strided_view_tuple_argnums", "writes_its_input",
        "curve_wrt_float", "curve_wrt_both", "strided_output"])
def test_jacobians_match_central_differences(api, f, args, argnums):
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    jac = getattr(moonlite, api)(f, argnums)(*args)
    for a, b in zip(args, before):  # the caller's arrays are never written
        np.testing.assert_array_equal(a, b)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    jacs = jac if isinstance(argnums, tuple) else (jac,)
    for n, j in zip(nums, jacs):
        expected = central_jacobian(f, args, n)
        assert np.shape(j) == expected.shape
        np.testing.assert_allclose(j, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("api", ["jacfwd", "jacrev"])
def test_jacobian_is_a_dispatcher_callable_from_njit_code(api):
    jac = getattr(moonlite, api)(matrix_out)
    assert getattr(moonlite, api)(matrix_out) is jac  # one per function and argnums

    @numba.njit
    def newton_like(x):
        J = jac(x, 0.8)
        return J.sum()

    expected = central_jacobian(matrix_out, (X, 0.8), 0).sum()
    assert newton_like(X) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("api", ["jacfwd", "jacrev"])
def test_jacobian_pickles_by_recipe(api):
    jac = getattr(moonlite, api)(matrix_out, (0, 1))
    again = pickle.loads(pickle.dumps(jac))
    for j, k in zip(again(X, 0.8), jac(X, 0.8)):
        np.testing.assert_array_equal(j, k)


def test_drivers_do_not_compile_the_rules_they_inline():
    """The driver is captured with its rule typed from the rule's IR: the rule is compiled only
    as part of the whole derivative, never on its own (that compiled it twice)."""
    x = np.linspace(0.1, 0.9, 6)
    moonlite.hessian(smooth_of_matrix)(A, 0.6)
    moonlite.jacfwd(matrix_out)(x, 0.8)
    argtypes = (numba.typeof(A), numba.typeof(0.6))
    rule = driver.derived_hvp_rule(smooth_of_matrix, argtypes, moonlite.api_higher.HESSIAN_WIDTH,
                                   frozenset([0]))
    assert rule.signatures == []
    forward = driver.derived_forward_rule(matrix_out, (numba.typeof(x), numba.typeof(0.8)),
                                          moonlite.api_jacobians.JACFWD_WIDTH, frozenset([0]))
    assert forward.signatures == []
