"""grad's argnums reach the reverse pass: data arrays it never writes get no shadows."""

import numba
import numpy as np

import moonlite
from moonlite.driver import derived_reverse_rule
from moonlite.ir import ops
from moonlite.ir.types import none
from moonlite.testing import check_vjp


@numba.njit
def least_squares(x, a, b):
    r = a @ x - b
    return 0.5 * np.sum(r * r)


@numba.njit
def rows_of_data(theta, data):
    s = 0.0
    for i in range(data.shape[0]):
        row = data[i]  # a view of constant data
        s += np.sum(np.sin(row * theta[0])) + row[1] * theta[1] ** 2
    return s


@numba.njit
def scratch_in_data(theta, data):
    # writes into the data argument: it carries derivatives and keeps its shadow
    for i in range(data.shape[0]):
        data[i] = data[i] * theta[0]
    return np.sum(data * data) + theta[1]


def _types(*args):
    return tuple(numba.typeof(a) for a in args)


def _zeros_like_calls(fn):
    return sum(isinstance(op, ops.Call) and op.callee is np.zeros_like
               for block in fn.blocks for op in block.ops)


def test_data_arguments_outside_argnums_have_no_shadow():
    args = (np.ones(3), np.ones((4, 3)), np.ones(4))
    full = derived_reverse_rule(least_squares, _types(*args))
    only_x = derived_reverse_rule(least_squares, _types(*args), frozenset([0]))
    assert only_x.ir.return_type.elements[1].elements[1:] == (none, none)
    assert _zeros_like_calls(only_x.ir) < _zeros_like_calls(full.ir)


def test_gradients_with_constant_data_match_finite_differences():
    rng = np.random.default_rng(0)
    for f, args in [(least_squares, (rng.standard_normal(3), rng.standard_normal((4, 3)),
                                     rng.standard_normal(4))),
                    (rows_of_data, (rng.standard_normal(2), rng.standard_normal((5, 3))))]:
        g = moonlite.grad(f)(*args)
        v = rng.standard_normal(args[0].shape)
        h = 1e-6
        fd = (f(args[0] + h * v, *args[1:]) - f(args[0] - h * v, *args[1:])) / (2 * h)
        np.testing.assert_allclose(np.dot(g, v), fd, rtol=1e-6, atol=1e-8)
        check_vjp(f, *args)  # all arguments active


def test_a_data_argument_the_kernel_writes_keeps_its_derivatives():
    theta = np.array([0.7, -0.3])
    data = np.array([1.0, -2.0, 0.5])
    g = moonlite.grad(scratch_in_data)(theta, data.copy())
    # f = theta0^2 * sum(data^2) + theta1
    np.testing.assert_allclose(g, [2 * 0.7 * np.sum(data ** 2), 1.0])
