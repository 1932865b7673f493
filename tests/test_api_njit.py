"""jvp, hvp and vjp called inside njit code (api_njit.py), checked against central differences
and the dot-product identity."""

import subprocess
import sys

import numba
import numpy as np
import pytest

import moonlite
from moonlite import ArgumentError

from .helpers import central_differences, optimised_env


@numba.njit
def damped_sum(x, a, n):
    s = 0.0
    for i in range(n):
        s += a * np.sin(x[i]) * x[i]
    return s


@numba.njit
def square_in_place(x, a):
    for i in range(x.size):
        x[i] = a * x[i] * x[i]
    return np.sum(x)


@numba.njit
def softplus_rows(W, x):
    return np.log1p(np.exp(W @ x))


X = np.linspace(0.1, 1.0, 5)


def _fd_scalar(f, args, argnum, h=1e-6):
    plus, minus = list(args), list(args)
    plus[argnum], minus[argnum] = args[argnum] + h, args[argnum] - h
    return (f(*plus) - f(*minus)) / (2 * h)


@numba.njit
def vjp_damped_sum(x, a, n, dout):
    out, pullback = moonlite.vjp(damped_sum, x, a, n)
    return out, pullback(dout)


def test_vjp_inside_njit_matches_finite_differences():
    out, (gx, ga, gn) = vjp_damped_sum(X, 2.0, 4, 1.5)
    assert out == pytest.approx(damped_sum(X, 2.0, 4))
    np.testing.assert_allclose(gx, 1.5 * central_differences(damped_sum, (X, 2.0, 4)),
                               rtol=1e-6, atol=1e-9)
    assert ga == pytest.approx(1.5 * _fd_scalar(damped_sum, (X, 2.0, 4), 1), rel=1e-6)
    assert gn is None


@numba.njit
def vjp_square_in_place(x, a, dout):
    out, pullback = moonlite.vjp(square_in_place, x, a)
    return out, pullback(dout)


def test_vjp_inside_njit_writes_like_the_primal_and_differentiates_the_input_values():
    x = X.copy()
    out, (gx, ga) = vjp_square_in_place(x, 3.0, 2.0)
    np.testing.assert_allclose(x, 3.0 * X * X)  # what the kernel leaves in its argument
    assert out == pytest.approx(np.sum(3.0 * X * X))

    def fresh(x, a):
        return square_in_place(x.copy(), a)
    np.testing.assert_allclose(gx, 2.0 * central_differences(fresh, (X, 3.0)), rtol=1e-6)
    assert ga == pytest.approx(2.0 * _fd_scalar(fresh, (X, 3.0), 1), rel=1e-6)


@numba.njit
def vjp_softplus_rows(W, x, dout):
    out, pullback = moonlite.vjp(softplus_rows, W, x)
    return out, pullback(dout)


def test_vjp_inside_njit_of_an_array_output_satisfies_the_dot_product_identity():
    rng = np.random.default_rng(0)
    W, x = rng.normal(size=(3, 4)), rng.normal(size=4)
    dW, dx, dout = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=3)
    out, (gW, gx) = vjp_softplus_rows(W, x, dout)
    np.testing.assert_allclose(out, softplus_rows(W, x))
    h = 1e-6
    directional = (softplus_rows(W + h * dW, x + h * dx)
                   - softplus_rows(W - h * dW, x - h * dx)) / (2 * h)
    assert np.dot(dout, directional) == pytest.approx(np.sum(gW * dW) + np.dot(gx, dx),
                                                      rel=1e-6)


@numba.njit
def pullback_twice(x, a):
    _, pullback = moonlite.vjp(damped_sum, x, a, 3)
    pullback(1.0)
    return pullback(1.0)


@numba.njit
def wrong_cotangent_shape(W, x):
    _, pullback = moonlite.vjp(softplus_rows, W, x)
    return pullback(np.ones(7))


@numba.njit
def aliased(x):
    return moonlite.vjp(square_in_place, x, 2.0)[0] + moonlite.vjp(scale_into, x, x)[0]


@numba.njit
def scale_into(out, x):
    for i in range(x.size):
        out[i] = 2.0 * x[i]
    return np.sum(out)


@numba.njit
def vjp_scale_into(out, x):
    return moonlite.vjp(scale_into, out, x)[0]


def test_vjp_inside_njit_refuses_what_the_python_vjp_refuses():
    with pytest.raises(ArgumentError, match="already used"):
        pullback_twice(X, 2.0)
    with pytest.raises(ArgumentError, match="shape of the output"):
        wrong_cotangent_shape(np.ones((3, 4)), np.ones(4))
    x = X.copy()
    with pytest.raises(ArgumentError, match="share memory"):
        vjp_scale_into(x, x)
    np.testing.assert_array_equal(x, X)  # refused before the sweep ran


@numba.njit
def wrong_cotangent_type(W, x):
    _, pullback = moonlite.vjp(softplus_rows, W, x)
    return pullback(1.0)


@numba.njit
def vjp_of_a_numpy_function(x):
    return moonlite.vjp(np.sin, x)


def test_typing_errors_name_what_is_wrong():
    with pytest.raises(numba.core.errors.TypingError, match="must be an array of float64"):
        wrong_cotangent_type(np.ones((3, 4)), np.ones(4))
    with pytest.raises(numba.core.errors.TypingError, match="takes an @njit function"):
        vjp_of_a_numpy_function(X)


@numba.njit
def jvp_damped_sum(x, a, v, da):
    return moonlite.jvp(damped_sum, (x, a, 5), (v, da, None))


@numba.njit
def hvp_damped_sum(x, a, v, da):
    return moonlite.hvp(damped_sum, (x, a, 5), (v, da, None))


def test_jvp_and_hvp_inside_njit_match_finite_differences():
    rng = np.random.default_rng(1)
    v, da, h = rng.normal(size=5), 0.7, 1e-6
    out, dout = jvp_damped_sum(X, 2.0, v, da)
    assert out == pytest.approx(damped_sum(X, 2.0, 5))
    fd = (damped_sum(X + h * v, 2.0 + h * da, 5) - damped_sum(X - h * v, 2.0 - h * da, 5)) / (
        2 * h)
    assert dout == pytest.approx(fd, rel=1e-6)

    hx, ha, hn = hvp_damped_sum(X, 2.0, v, da)
    gx = moonlite.grad(damped_sum, (0, 1))
    plus, minus = gx(X + h * v, 2.0 + h * da, 5), gx(X - h * v, 2.0 - h * da, 5)
    np.testing.assert_allclose(hx, (plus[0] - minus[0]) / (2 * h), rtol=1e-5, atol=1e-8)
    assert ha == pytest.approx((plus[1] - minus[1]) / (2 * h), rel=1e-5)
    assert hn is None


@numba.njit
def residuals(x, a):
    r = np.empty(x.size + 1)
    for i in range(x.size):
        r[i] = a * x[i] ** 2 - 1.0
    r[x.size] = np.sum(x) - 2.0
    return r


@numba.njit
def gauss_newton_step(x, a):  # the user guide's example
    r, pullback = moonlite.vjp(residuals, x, a)
    gx, ga = pullback(r)
    _, jv = moonlite.jvp(residuals, (x, a), (gx, 0.0))
    return x - np.dot(gx, gx) / np.dot(jv, jv) * gx


def test_the_user_guides_gauss_newton_step_matches_a_finite_difference_jacobian():
    x, a, h = np.array([0.3, 0.9, 1.4]), 1.5, 1e-6
    J = np.stack([(residuals(x + h * e, a) - residuals(x - h * e, a)) / (2 * h)
                  for e in np.eye(3)], axis=1)
    g = J.T @ residuals(x, a)
    expected = x - g @ g / np.sum((J @ g) ** 2) * g
    np.testing.assert_allclose(gauss_newton_step(x, a), expected, rtol=1e-6)


CACHED_CALLER = """
import numba, numpy as np, moonlite

@numba.njit
def f(x, a):
    return a * np.sum(np.sin(x) * x)

@numba.njit
def callers(x, a):
    out, pullback = moonlite.vjp(f, x, a)
    return pullback(1.0), moonlite.jvp(f, (x, a), (x, 1.0)), moonlite.hvp(f, (x, a), (x, 1.0))

callers(np.ones(3), 2.0)
print([c.library.has_dynamic_globals for c in callers.overloads.values()])
"""


def test_a_caller_of_vjp_can_be_cached_by_numba():
    # the kernel passed as a value is an address numba cannot cache unless LLVM, optimising,
    # drops it (api_njit._vjp_impl): checked at numba's default optimisation level
    done = subprocess.run([sys.executable, "-c", CACHED_CALLER], capture_output=True,
                          text=True, timeout=300, env=optimised_env())
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[False]"
