"""The public forward-mode API: jvp, jacfwd, build_frule; argument checking and rule reuse."""

import math

import warnings

import numba
import numpy as np
import pytest

import moonlite
from moonlite import driver
from moonlite.api import ArgumentError

from .helpers import central_differences


@numba.njit
def scaled_sum(x, a, n):
    s = 0.0
    for i in range(n):
        s += math.sin(a * x[i])
    return s


@numba.njit
def scale_in_place(x, a):
    for i in range(x.shape[0]):
        x[i] *= a
    return x[0]


@numba.njit
def vector_field(x):
    y = np.empty(x.shape[0] - 1)
    for i in range(x.shape[0] - 1):
        y[i] = x[i + 1] ** 2 - math.exp(-x[i])
    return y


@numba.njit
def matrix_input(A):
    return np.sum(np.tanh(A) * A[0])


def fd_jacobian(f, args, argnum, h=1e-6):
    x = np.asarray(args[argnum], dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        e = e.reshape(x.shape)
        plus = list(args)
        minus = list(args)
        plus[argnum] = x + e if x.ndim else float(x + e)
        minus[argnum] = x - e if x.ndim else float(x - e)
        cols.append((np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * h))
    out_shape = np.shape(f(*args))
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


# --- jvp -------------------------------------------------------------------------------------

def test_jvp_matches_finite_differences_with_an_int_argument():
    x, dx = np.linspace(0, 1, 7), np.linspace(1, 2, 7)
    out, dout = moonlite.jvp(scaled_sum, (x, 0.7, 7), (dx, 0.3, None))
    assert out == scaled_sum(x, 0.7, 7)
    h = 1e-6
    fd = (scaled_sum(x + h * dx, 0.7 + h * 0.3, 7) - scaled_sum(x - h * dx, 0.7 - h * 0.3, 7))
    assert dout == pytest.approx(fd / (2 * h), rel=1e-7)


def test_jvp_follows_mutation_into_the_tangent_array():
    x, dx = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.0, 1.0])
    out, dout = moonlite.jvp(scale_in_place, (x, 2.0), (dx, 0.25))
    np.testing.assert_array_equal(x, [2.0, 4.0, 6.0])  # what the primal leaves in x
    # d(a * x) = a dx + x da, elementwise: the tangent describes the new value of x
    np.testing.assert_allclose(dx, [2.0 * 0.5 + 1.0 * 0.25, 2.0 * 0.0 + 2.0 * 0.25,
                                    2.0 * 1.0 + 3.0 * 0.25])
    assert (out, dout) == (2.0, dx[0])


def test_integer_output_has_no_tangent():
    @numba.njit
    def count_positive(x):
        n = 0
        for v in x:
            if v > 0:
                n += 1
        return n

    assert moonlite.jvp(count_positive, (np.array([1.0, -1.0]),), (np.ones(2),)) == (1, None)


@pytest.mark.parametrize("tangents, message", [
    ((np.ones(6), 0.3, None), "shape (6,)"),
    ((np.ones(7, dtype=np.float32), 0.3, None), "dtype float32"),
    ((np.ones(7), 0.3, 1.0), "carries no tangent"),
    ((np.ones(7), np.ones(2), None), "must be a scalar"),
    ((None, 0.3, None), "missing"),
    ((np.ones(7), 0.3), "one tangent per primal"),
    (([1.0] * 7, 0.3, None), "must be an array"),
])
def test_bad_tangents_are_refused_before_anything_runs(tangents, message):
    x = np.linspace(0, 1, 7)
    before = x.copy()
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        moonlite.jvp(scaled_sum, (x, 0.7, 7), tangents)
    np.testing.assert_array_equal(x, before)


def test_non_njit_function_is_refused():
    with pytest.raises(moonlite.UnsupportedError, match="@numba.njit"):
        moonlite.jvp(lambda x: x, (1.0,), (1.0,))


def test_second_call_with_the_same_types_reuses_the_rule():
    x = np.linspace(0, 1, 5)
    moonlite.jvp(scaled_sum, (x, 0.7, 5), (x, 0.3, None))
    rule = moonlite.build_frule(scaled_sum, x, 0.7, 5)
    count = driver.cached_rule_count()
    moonlite.jvp(scaled_sum, (x * 2, 0.1, 3), (x, 1.0, None))
    assert driver.cached_rule_count() == count
    assert moonlite.build_frule(scaled_sum, x, 0.7, 5) is rule
    assert len(rule.signatures) == 1  # numba compiled it once


def test_build_frule_keeps_its_ir_and_is_callable_from_njit():
    x = np.linspace(0, 1, 5)
    rule = moonlite.build_frule(scaled_sum, x, 0.7, 5)
    assert "func scaled_sum_fwd(" in str(rule.ir)
    moonlite.verify(rule.ir)

    @numba.njit
    def directional(x, a, dx):
        return rule(x, a, 5, dx, 0.0)[1]

    expected = moonlite.jvp(scaled_sum, (x, 0.7, 5), (np.ones(5), 0.0, None))[1]
    assert directional(x, 0.7, np.ones(5)) == pytest.approx(expected, rel=1e-15)


# --- jacfwd ------------------------------------------------------------------------------------

def test_jacfwd_of_a_vector_function_spans_several_batches():
    x = np.linspace(-1.0, 1.0, 19)  # 19 inputs: three batches of width 8, the last padded
    jac = moonlite.jacfwd(vector_field)(x)
    assert jac.shape == (18, 19)
    np.testing.assert_allclose(jac, fd_jacobian(vector_field, (x,), 0), rtol=1e-6, atol=1e-8)


def test_jacfwd_of_a_matrix_argument_has_shape_out_plus_in():
    A = np.random.default_rng(0).standard_normal((3, 4))
    jac = moonlite.jacfwd(matrix_input)(A)
    assert jac.shape == (3, 4)
    np.testing.assert_allclose(jac, fd_jacobian(matrix_input, (A,), 0), rtol=1e-6, atol=1e-8)


def test_jacfwd_with_tuple_argnums_and_a_scalar_argument():
    x = np.linspace(0, 1, 4)
    jx, ja = moonlite.jacfwd(scaled_sum, argnums=(0, 1))(x, 0.7, 4)
    np.testing.assert_allclose(jx, fd_jacobian(scaled_sum, (x, 0.7, 4), 0), rtol=1e-6)
    assert ja == pytest.approx(fd_jacobian(scaled_sum, (x, 0.7, 4), 1), rel=1e-6)


def test_jacfwd_leaves_the_callers_arrays_alone():
    x = np.array([1.0, 2.0, 3.0])
    jac = moonlite.jacfwd(scale_in_place)(x, 2.0)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(jac, [2.0, 0.0, 0.0])


@pytest.mark.parametrize("argnums, message", [(2, "int"), (5, "out of range"),
                                              ("x", "must be an int")])
def test_jacfwd_refuses_bad_argnums(argnums, message):
    with pytest.raises(ArgumentError, match=message):
        moonlite.jacfwd(scaled_sum, argnums=argnums)(np.ones(3), 0.5, 3)


def test_kernel_calling_a_moonlite_compiled_function_differentiates_its_kept_ir():
    @numba.njit
    def inner(x):
        return x * x * x

    compiled = moonlite.lower(moonlite.capture(inner, 1.0))

    @numba.njit
    def outer(x):
        return compiled(x) + 1.0

    out, dout = moonlite.jvp(outer, (2.0,), (1.0,))
    assert (out, dout) == (9.0, 12.0)


@numba.njit
def scaled_sines(x, a=2.0, shift=0.0):
    return np.sum(np.sin(a * x + shift))


def test_defaulted_parameters_may_be_left_out():
    """`f(x)` is a valid call of a kernel with defaults; grad, value_and_grad and hessian
    took only full calls (found by trying kernels we did not write)."""
    x = np.array([0.3, -0.7, 1.1])
    expected = 2.0 * np.cos(2.0 * x)
    np.testing.assert_allclose(moonlite.grad(scaled_sines)(x), expected)
    np.testing.assert_allclose(moonlite.grad(scaled_sines)(x, shift=0.0), expected)
    value, g = moonlite.value_and_grad(scaled_sines)(x, 2.0)
    assert value == scaled_sines(x) and np.allclose(g, expected)
    assert moonlite.grad(scaled_sines, argnums=1)(x) == pytest.approx(np.sum(x * np.cos(2 * x)))
    np.testing.assert_allclose(moonlite.hessian(scaled_sines)(x), np.diag(-4.0 * np.sin(2 * x)))
    with pytest.raises(moonlite.ArgumentError, match="scaled_sines"):
        moonlite.grad(scaled_sines)()


def test_numpy_integers_as_argnums():
    """`argnums=np.int64(1)` (an index computed with numpy) was refused as no int."""
    x = np.array([0.3, -0.7, 1.1])
    assert moonlite.grad(scaled_sines, argnums=np.int64(1))(x) == \
        pytest.approx(np.sum(x * np.cos(2 * x)))
    g0, g1 = moonlite.grad(scaled_sines, argnums=(np.int32(0), 1))(x)
    np.testing.assert_allclose(g0, 2.0 * np.cos(2.0 * x))
    assert g1 == pytest.approx(np.sum(x * np.cos(2 * x)))
    np.testing.assert_allclose(moonlite.hessian(scaled_sines, argnums=np.int64(0))(x),
                               np.diag(-4.0 * np.sin(2 * x)))
    with pytest.raises(moonlite.ArgumentError, match="argnums must be an int"):
        moonlite.grad(scaled_sines, argnums=np.bool_(True))


def test_vjp_with_defaults_left_out_gives_cotangents_of_the_given_primals():
    """From its second call on, vjp runs a compiled dispatcher, whose stub has no defaults:
    `vjp(f, x)` raised "missing a required argument: 'a'" there, and filling the defaults in
    gave cotangents of them too (found by a helper's hunt with an integrator's step size)."""
    x = np.array([0.3, -0.7, 1.1])
    for _ in range(3):
        out, pullback = moonlite.vjp(scaled_sines, x)
        assert out == scaled_sines(x)
        (dx,) = pullback(2.0)
        np.testing.assert_allclose(dx, 4.0 * np.cos(2.0 * x))
    for _ in range(2):  # a default given, one left out: cotangents of the two given
        out, pullback = moonlite.vjp(scaled_sines, x, 3.0)
        dx, da = pullback(1.0)
        np.testing.assert_allclose(dx, 3.0 * np.cos(3.0 * x))
        assert da == pytest.approx(np.sum(x * np.cos(3.0 * x)))


def test_vjp_takes_keyword_arguments_in_their_parameters_places():
    """grad(f)(x, shift=s) worked but vjp(f, x, shift=s) raised Python's TypeError: keyword
    arguments now take their places in f's parameters, a skipped default filled in."""
    x = np.array([0.3, -0.7, 1.1])
    for _ in range(2):  # the first call, then the compiled dispatcher's
        out, pullback = moonlite.vjp(scaled_sines, x, shift=0.5)
        assert out == scaled_sines(x, 2.0, 0.5)
        dx, da, dshift = pullback(1.0)  # `a` skipped: its default 2.0, and its cotangent
        np.testing.assert_allclose(dx, central_differences(scaled_sines, (x, 2.0, 0.5)))
        assert da == pytest.approx(np.sum(x * np.cos(2.0 * x + 0.5)))
        assert dshift == pytest.approx(np.sum(np.cos(2.0 * x + 0.5)))
    (dx,) = moonlite.vjp(scaled_sines, x=x)[1](1.0)
    np.testing.assert_allclose(dx, 2.0 * np.cos(2.0 * x))
    with pytest.raises(moonlite.ArgumentError, match=r"vjp\(scaled_sines\).*unexpected keyword"):
        moonlite.vjp(scaled_sines, x, scale=2.0)


def test_defaults_left_out_inside_njit_code():
    """Inside njit code numba folded a call leaving defaults out as `Omitted` arguments, which
    grad's and hessian's dispatchers (no defaults) and vjp's overload refused with numba's
    "missing a required argument" (found by a helper's hunt)."""
    g, H = moonlite.grad(scaled_sines), moonlite.hessian(scaled_sines)
    ga = moonlite.grad(scaled_sines, argnums=1)

    @numba.njit
    def use(x):
        out, pullback = moonlite.vjp(scaled_sines, x)
        return g(x), g(x, 3.0), H(x), ga(x, shift=0.5), pullback(1.0)

    x = np.array([0.3, -0.7, 1.1])
    g2, g3, h, da, (dx,) = use(x)
    np.testing.assert_allclose(g2, 2.0 * np.cos(2.0 * x))
    np.testing.assert_allclose(g3, 3.0 * np.cos(3.0 * x))
    np.testing.assert_allclose(h, np.diag(-4.0 * np.sin(2.0 * x)))
    assert da == pytest.approx(np.sum(x * np.cos(2.0 * x + 0.5)))
    np.testing.assert_allclose(dx, 2.0 * np.cos(2.0 * x))


@numba.njit
def _decay(y, k):
    return -k * y + np.sin(y)


@numba.njit
def euler_with_rhs(f, y0, k):
    y = y0.copy()
    for _ in range(8):
        y = y + 0.1 * f(y, k)
    return np.sum(y ** 2)


def test_an_njit_function_given_to_the_kernel_from_python():
    """`grad(solve, argnums=1)(rhs, y0, k)`: the function is numba's to dispatch on (its
    type is that one function) and carries no derivative; numba's warning that first-class
    function values are experimental, raised as moonlite's code passes it on, is silenced."""
    y0 = np.array([0.5, -0.3, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = moonlite.grad(euler_with_rhs, argnums=(1, 2))(_decay, y0, 0.7)
        _, dout = moonlite.jvp(euler_with_rhs, (_decay, y0, 0.7), (None, np.ones(3), 1.0))
    h = 1e-6
    fd = (euler_with_rhs(_decay, y0 + h, 0.7 + h)
          - euler_with_rhs(_decay, y0 - h, 0.7 - h)) / (2 * h)  # along (1, 1, 1; 1)
    assert dout == pytest.approx(fd, rel=1e-6)
    assert np.sum(g[0]) + g[1] == pytest.approx(fd, rel=1e-6)


@numba.njit
def sum_of_squares(X):
    return np.sum(X * X)


def test_jvp_takes_a_tangent_of_another_memory_order():
    """An F-ordered tangent of a C-ordered argument, or a C tangent of a strided one, ran
    numba's Python stub (RuntimeError: moonlite stub; adversarial tests): the tangent is
    given the argument's layout (a contiguous copy, or a view typed as strided)."""
    X = np.arange(6.0).reshape(3, 2)
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    for primal, tangent in [(X, np.asfortranarray(np.ones((3, 2)))),
                            (X, np.ones((3, 4))[:, ::2]),
                            (strided, np.ones((3, 2))),
                            (strided, np.asfortranarray(np.ones((3, 2))))]:
        value, dout = moonlite.jvp(sum_of_squares, (primal,), (tangent,))
        assert value == sum_of_squares(primal) and dout == pytest.approx(2 * np.sum(primal))
