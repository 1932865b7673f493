"""hvp and hessian: forward mode over the derived reverse rule, checked against second-order
central finite differences of the kernels themselves."""

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import finite_difference_hessian


@numba.njit
def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


@numba.njit
def piecewise(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            s += math.exp(x[i]) * x[(i + 1) % x.shape[0]]
        else:
            s += x[i] ** 3
    return s


@numba.njit
def euler_in_place(x, steps):
    y = x.copy()
    for _ in range(steps):
        for i in range(y.shape[0]):
            y[i] += 0.05 * math.sin(y[(i + 1) % y.shape[0]]) * y[i]
    return np.sum(y * y)


@numba.njit
def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


@numba.njit
def inner_energy(a, b):
    return np.sum(a * b) ** 2 + np.sum(np.tanh(a))


@numba.njit
def calls_helper(x):
    return inner_energy(x, x[::-1].copy()) + np.dot(x, x) * x[0]


KERNELS = [(rosenbrock, ()), (piecewise, ()), (euler_in_place, (3,)), (logsumexp, ()),
           (calls_helper, ())]


@pytest.mark.parametrize("f, rest", KERNELS, ids=[f.py_func.__name__ for f, _ in KERNELS])
def test_hessian_against_second_order_finite_differences(f, rest):
    x = np.random.default_rng(3).uniform(-1.0, 1.0, 6)
    before = x.copy()
    H = moonlite.hessian(f)(x, *rest)
    np.testing.assert_array_equal(x, before)  # the rule undid its writes
    assert H.shape == (6, 6)
    fd = finite_difference_hessian(f, x, *rest)
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(fd).max()))
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f, rest", KERNELS, ids=[f.py_func.__name__ for f, _ in KERNELS])
def test_hvp_is_the_hessian_times_the_direction(f, rest):
    rng = np.random.default_rng(4)
    x, v = rng.uniform(-1.0, 1.0, 6), rng.standard_normal(6)
    H = moonlite.hessian(f)(x, *rest)
    hv = moonlite.hvp(f, (x, *rest), (v,) + (None,) * len(rest))
    assert len(hv) == 1 + len(rest) and all(h is None for h in hv[1:])
    np.testing.assert_allclose(hv[0], H @ v, rtol=1e-10, atol=1e-10)


@numba.njit
def two_arguments(x, w):
    return np.sum(np.sin(x) * w) * w


def test_hvp_covers_every_float_argument():
    x, w = np.array([0.3, -0.7]), 1.7
    vx, vw = np.array([1.0, 2.0]), 0.5
    hx, hw = moonlite.hvp(two_arguments, (x, w), (vx, vw))
    # f = w S(x), S = sum(sin(x) w) => H = [[w^2 diag(-sin x), 2 w cos x], [2 w cos x^T, 2 sum sin x]]
    expected_x = w * w * -np.sin(x) * vx + 2 * w * np.cos(x) * vw
    expected_w = 2 * w * np.dot(np.cos(x), vx) + 2 * np.sum(np.sin(x)) * vw
    np.testing.assert_allclose(hx, expected_x, rtol=1e-12)
    assert abs(hw - expected_w) < 1e-12


@numba.njit
def quartic(t):
    return t ** 4 - 3.0 * math.sin(t)


def test_hessian_of_a_float_argument_is_a_float():
    h = moonlite.hessian(quartic)(0.7)
    assert isinstance(h, float)
    assert abs(h - (12 * 0.7 ** 2 + 3 * math.sin(0.7))) < 1e-12


def test_hessian_is_usable_inside_njit_and_reused():
    H, g = moonlite.hessian(rosenbrock), moonlite.grad(rosenbrock)

    @numba.njit
    def newton(x, steps):
        for _ in range(steps):
            x = x - np.linalg.solve(H(x), g(x))
        return x

    x = newton(np.array([-1.2, 1.0, 0.9]), 30)
    np.testing.assert_allclose(x, np.ones(3), atol=1e-8)
    H(np.ones(3))
    assert len(H.signatures) == 1  # same types: the compiled Hessian is reused


@numba.njit
def uses_gradient_inside(x):
    return np.sum(GRAD_OF_LOGSUMEXP(x) ** 2)


GRAD_OF_LOGSUMEXP = moonlite.grad(logsumexp)


def test_forward_mode_through_grad_called_in_njit():
    x, v = np.array([0.2, -0.4, 1.1]), np.array([1.0, -0.5, 0.25])
    out, tangent = moonlite.jvp(uses_gradient_inside, (x,), (v,))
    h = 1e-6
    fd = (uses_gradient_inside(x + h * v) - uses_gradient_inside(x - h * v)) / (2 * h)
    assert abs(tangent - fd) < 1e-8


def test_reverse_over_reverse_is_refused_clearly():
    with pytest.raises(moonlite.UnsupportedError, match="reverse over reverse") as info:
        moonlite.grad(uses_gradient_inside)(np.ones(3))
    assert "moonlite.hessian" in str(info.value)


@numba.njit
def vector_valued(x):
    return np.sin(x)


def test_bad_requests_raise_clear_errors():
    with pytest.raises(moonlite.UnsupportedError, match="scalar float output"):
        moonlite.hvp(vector_valued, (np.ones(2),), (np.ones(2),))
    with pytest.raises(moonlite.ArgumentError, match="argnums must be an int"):
        moonlite.hessian(rosenbrock, argnums=(0,))
    with pytest.raises(moonlite.ArgumentError, match="Hessians exist for float"):
        moonlite.hessian(euler_in_place, argnums=1)(np.ones(3), 2)
    with pytest.raises(moonlite.ArgumentError, match="shape"):
        moonlite.hvp(rosenbrock, (np.ones(3),), (np.ones(4),))


@numba.njit
def sine_weighted(x):
    return np.sum(np.sin(x) * x ** 2)


def test_third_order_is_refused_naming_the_order():
    """jacfwd(hessian(f)) was refused with "no forward rule is registered" for moonlite's own
    helper, telling the user to write a custom rule for it (found by a helper's hunt)."""
    x = np.array([0.3, -0.6, 1.1])
    with pytest.raises(moonlite.UnsupportedError, match="derivatives of third order") as info:
        moonlite.jacfwd(moonlite.hessian(sine_weighted))(x)
    assert "custom_jvp" not in str(info.value)
