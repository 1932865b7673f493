"""A derivative with a nan is computed again with zero-guarded products (ad/nan_retry.py).

The kernels overflow a running product to -inf and read it only through a saturated tanh (the
shape of fuzz seed 20221, wide profile): the derivative through that path is exactly 0, and the
plain reverse rule multiplies that zero adjoint by the infinite partials of the products (nan).
Every API must return the derivative central differences give."""

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ad.nan_retry import NAN_NOTES, has_nan
from moonlite.api_higher import _hessian_dispatcher, _hvp_dispatcher
from moonlite.driver import api_entry, derived_reverse_rule

from ..helpers import central_differences


@numba.njit
def overflowing(x):
    y = x[0]
    for _ in range(60):
        y = y * x[1] * 1e10  # -inf after a few steps
    return math.tanh(min(y, 0.0)) + x[0] * x[1] ** 2


@numba.njit
def overflowing_scalar(a, b):
    y = a
    for _ in range(60):
        y = y * b * 1e10
    return math.tanh(min(y, 0.0)) + a * b * b


@numba.njit
def dividing(x):
    # the primal's own division multiplies its adjoint plainly; here the partial in the
    # denominator overflows (-t / den = -inf) while tanh is flat at t = 1.2e300
    t = x[0] / (x[1] * 1e-300)
    return math.tanh(t) + x[0] * x[1]


X = np.array([-2.0, 3.0])


def _expected_gradient(x):
    return np.array([x[1] ** 2, 2 * x[0] * x[1]])


def _expected_hessian(x):
    return np.array([[0.0, 2 * x[1]], [2 * x[1], 2 * x[0]]])


def test_the_plain_rule_gives_nan_here():
    # what the retry repairs: without it, the gradient of the overflowing path is nan
    rule = derived_reverse_rule(overflowing, (numba.typeof(X),))
    _, (g,) = rule(X.copy(), 1.0)
    assert np.isnan(g).any()


def test_grad_matches_central_differences():
    g = moonlite.grad(overflowing)(X)
    np.testing.assert_allclose(g, central_differences(overflowing, (X,)), rtol=1e-6)
    np.testing.assert_allclose(g, _expected_gradient(X), rtol=1e-12)


def test_an_overflowing_division():
    x = np.array([0.4, 1.5])
    rule = derived_reverse_rule(dividing, (numba.typeof(x),))
    assert np.isnan(rule(x.copy(), 1.0)[1][0]).any()
    g = moonlite.grad(dividing)(x)
    np.testing.assert_allclose(g, central_differences(dividing, (x,)), rtol=1e-6)
    np.testing.assert_allclose(g, [1.5, 0.4], rtol=1e-12)


def test_value_and_grad_and_scalar_arguments():
    value, g = moonlite.value_and_grad(overflowing)(X)
    assert value == overflowing(X)
    np.testing.assert_allclose(g, _expected_gradient(X), rtol=1e-12)
    ga, gb = moonlite.grad(overflowing_scalar, argnums=(0, 1))(-2.0, 3.0)
    h = 1e-6
    fd_a = (overflowing_scalar(-2.0 + h, 3.0) - overflowing_scalar(-2.0 - h, 3.0)) / (2 * h)
    fd_b = (overflowing_scalar(-2.0, 3.0 + h) - overflowing_scalar(-2.0, 3.0 - h)) / (2 * h)
    np.testing.assert_allclose([ga, gb], [fd_a, fd_b], rtol=1e-6)


def test_vjp_and_jacrev_match_central_differences():
    fd = central_differences(overflowing, (X,))
    _, pullback = moonlite.vjp(overflowing, X.copy())
    (g,) = pullback(1.0)
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    np.testing.assert_allclose(moonlite.jacrev(overflowing)(X), fd, rtol=1e-6)


def _second_differences(f, x, h=1e-4):
    n = x.size
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            H[i, j] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) \
                / (4 * h * h)
    return H


def test_plain_second_order_rules_give_nan_here():
    # what the retry repairs in second order (the dispatcher's call without its retry)
    assert np.isnan(_hessian_dispatcher(overflowing, 0, False).call_without_retry(X)).any()
    (hv,) = _hvp_dispatcher(overflowing, False).call_without_retry((X,), (np.array([0.5, -1.0]),))
    assert np.isnan(hv).any()


def test_hessian_and_hvp_match_second_differences():
    fd = _second_differences(overflowing, X)
    np.testing.assert_allclose(fd, _expected_hessian(X), atol=1e-5)
    np.testing.assert_allclose(moonlite.hessian(overflowing)(X), fd, atol=1e-5)
    v = np.array([0.5, -1.0])
    (hv,) = moonlite.hvp(overflowing, (X,), (v,))
    np.testing.assert_allclose(hv, fd @ v, atol=1e-5)


def test_no_nan_no_second_rule():
    # the fast path: a finite gradient never builds the strong-zeros variant
    @numba.njit
    def smooth(x):
        return np.sum(x * x)

    g = moonlite.grad(smooth)
    np.testing.assert_allclose(g(X), 2 * X)
    assert api_entry(smooth, ("grad", 0, False)) is g
    assert api_entry(smooth, ("grad", 0, True)) is None


def test_a_nan_the_function_has_stays():
    # sqrt(-1) is nan: the retry runs, finds the same nan, and returns it
    @numba.njit
    def undefined(x):
        return math.sqrt(x[0]) + x[1]

    g = moonlite.grad(undefined)(np.array([-1.0, 2.0]))
    assert np.isnan(g[0]) and g[1] == 1.0


def test_notes_count_per_thread_and_has_nan():
    before = NAN_NOTES.count
    moonlite.grad(overflowing)(X)
    assert NAN_NOTES.count == before + 1  # the plain call noted one nan; the retry none
    assert has_nan((None, 1.0, np.array([0.0, np.nan])))
    assert not has_nan((None, np.arange(3), 2.0))


def test_grad_inside_njit_code_is_retried():
    g = moonlite.grad(overflowing)

    @numba.njit
    def outer(x):
        return g(x)

    np.testing.assert_allclose(outer(X), _expected_gradient(X), rtol=1e-12)


def test_value_and_grad_inside_njit_code_is_retried():
    vg = moonlite.value_and_grad(overflowing)

    @numba.njit
    def outer(x):
        value, g = vg(x)
        return value, g

    value, g = outer(X)
    np.testing.assert_allclose(value, overflowing(X), rtol=1e-14)
    np.testing.assert_allclose(g, _expected_gradient(X), rtol=1e-12)


def test_hessian_and_hvp_inside_njit_code_are_retried():
    H = moonlite.hessian(overflowing)
    v = np.array([0.5, -1.0])

    @numba.njit
    def outer(x, v):
        (hv,) = moonlite.hvp(overflowing, (x,), (v,))
        return H(x), hv

    fd = _second_differences(overflowing, X)
    h, hv = outer(X, v)
    np.testing.assert_allclose(h, fd, atol=1e-5)
    np.testing.assert_allclose(hv, fd @ v, atol=1e-5)


def test_a_derivative_passed_into_njit_code_is_retried():
    g = moonlite.grad(overflowing)

    @numba.njit
    def apply(fn, x):
        return fn(x)

    np.testing.assert_allclose(apply(g, X), _expected_gradient(X), rtol=1e-12)


def test_jvp_inside_njit_code_of_a_gradient_dispatcher():
    # numba types `g` as its njit variant; jvp differentiates the gradient itself
    @numba.njit
    def cubic(x):
        return x[0] ** 3 * x[1]

    g = moonlite.grad(cubic)

    @numba.njit
    def directional(x, v):
        return moonlite.jvp(g, (x,), (v,))

    x = np.array([0.5, 2.0])
    _, dg = directional(x, np.array([1.0, 0.0]))
    np.testing.assert_allclose(dg, _second_differences(cubic, x)[:, 0], rtol=1e-6)
