"""Custom rules (moonlite.custom_jvp, custom_vjp, nondifferentiable): used in forward mode,
reverse mode and second order wherever the function is called, checked with moonlite.testing
against finite differences; and the errors a wrong rule gets."""

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite.errors import MoonliteError, UnsupportedError
from moonlite.testing import check_rule


# --- a JVP rule: a numerically stable derivative for a scalar function ----------------------

@numba.njit
def softplus(x):
    return math.log1p(math.exp(x))


@numba.njit
def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0.0 else math.exp(x) / (1.0 + math.exp(x))


@moonlite.custom_jvp(softplus)
@numba.njit
def softplus_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    stable = max(x, 0.0) + math.log1p(math.exp(-abs(x)))
    return stable, dx * sigmoid(x)  # the derived exp(x) / (1 + exp(x)) overflows


@numba.njit
def softplus_loss(w, x):
    s = 0.0
    for i in range(x.size):
        s += softplus(w * x[i]) * x[i]
    return s


def test_jvp_rule_in_every_mode():
    check_rule(softplus_loss, 0.7, np.array([0.3, -1.2, 2.0]), second_order=True)


def test_jvp_rule_is_what_runs():
    # the derived derivative of log1p(exp(x)) is nan at x = 800 (inf / inf); the rule's is 1
    x = np.array([800.0])
    out, dout = moonlite.jvp(softplus_loss, (1.0, x), (1.0, np.zeros(1)))
    assert out == pytest.approx(800.0 * 800.0)  # the rule's stable primal, not log1p(exp(800))
    assert dout == pytest.approx(800.0 * 800.0)
    assert moonlite.grad(softplus_loss)(1.0, x) == pytest.approx(800.0 * 800.0)


def test_jvp_rule_of_the_function_itself():
    check_rule(softplus, 0.4, second_order=True)


# --- a VJP rule with arrays, residuals kept across a loop -----------------------------------

@numba.njit
def scaled_solve(a, b, s):
    return np.linalg.solve(a, b) * s


@numba.njit
def scaled_solve_fwd(a, b, s):
    x = np.linalg.solve(a, b)
    return x * s, (a, x, s)


@numba.njit
def scaled_solve_bwd(residuals, g):
    a, x, s = residuals
    gb = np.linalg.solve(np.ascontiguousarray(a.T), g) * s
    return -np.outer(gb, x), gb, np.sum(g * x)


moonlite.custom_vjp(scaled_solve, scaled_solve_fwd, scaled_solve_bwd)
calls = {"fwd": 0}


@numba.njit
def iterate_solves(a, b, s):
    total = 0.0
    for _ in range(3):
        x = scaled_solve(a, b, s)
        total += np.sum(x * x)
        b = b + 0.1 * x
    return total


def _system(n=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)) + n * np.eye(n), rng.standard_normal(n)


def test_vjp_rule_in_a_loop():
    a, b = _system()
    check_rule(iterate_solves, a, b, 0.8, second_order=True)


def test_vjp_rule_through_vjp_and_jacrev():
    a, b = _system()
    out, pullback = moonlite.vjp(scaled_solve, a, b, 0.8)
    ga, gb, gs = pullback(np.ones(4))
    x = np.linalg.solve(a, b)
    assert gs == pytest.approx(np.sum(x))
    np.testing.assert_allclose(gb, np.linalg.solve(a.T, np.ones(4)) * 0.8)


def test_forward_mode_of_a_vjp_only_function_derives_its_body():
    a, b = _system()
    check_rule(scaled_solve, a, b, 0.8)


# --- the body need not be differentiable, nor capturable ---------------------------------

@numba.njit
def noisy_square(x):
    print("noisy_square called")  # moonlite refuses print() in kernels it captures
    return x * x


@numba.njit
def noisy_square_fwd(x):
    return x * x, x


@numba.njit
def noisy_square_bwd(x, g):
    return (2.0 * x * g,)


@numba.njit
def noisy_square_jvp(primals, tangents):
    return primals[0] * primals[0], 2.0 * primals[0] * tangents[0]


moonlite.custom_vjp(noisy_square, noisy_square_fwd, noisy_square_bwd)
moonlite.custom_jvp(noisy_square, noisy_square_jvp)


@numba.njit
def uses_noisy_square(x):
    return np.sin(noisy_square(x[0]) + x[1])


def test_rule_stands_in_for_a_body_moonlite_cannot_capture():
    check_rule(uses_noisy_square, np.array([0.3, 0.5]), second_order=True)


# --- non-differentiable functions ----------------------------------------------------------

@numba.njit
def quantize(x):
    return math.floor(x * 4.0) / 4.0


moonlite.nondifferentiable(quantize)


@numba.njit
def straight_through(x):
    return x * quantize(x) + x


@moonlite.nondifferentiable
@numba.njit
def normalise_in_place(x):
    x /= np.sum(x)
    return x[0]


@numba.njit
def calls_in_place(x):
    y = x * 1.0
    return normalise_in_place(y) * x[1]


def test_nondifferentiable_has_zero_derivative():
    x = 0.3  # quantize(0.3) = 0.25: d/dx (x * 0.25 + x) = 1.25
    assert moonlite.grad(straight_through)(x) == pytest.approx(1.25)
    assert moonlite.jvp(straight_through, (x,), (1.0,))[1] == pytest.approx(1.25)
    assert moonlite.hessian(straight_through)(x) == pytest.approx(0.0)


def test_nondifferentiable_function_that_writes_is_refused_in_reverse_mode():
    with pytest.raises(UnsupportedError, match="declared non-differentiable, writing"):
        moonlite.grad(calls_in_place)(np.array([1.0, 2.0, 3.0]))


# --- registering late: rules derived before are rebuilt ------------------------------------

def test_rule_registered_after_a_derivation_applies():
    @numba.njit
    def cube(x):
        return x * x * x

    @numba.njit
    def kernel(x):
        return cube(x) + x

    assert moonlite.grad(kernel)(2.0) == pytest.approx(13.0)

    @numba.njit
    def wrong_on_purpose(primals, tangents):  # a rule is trusted: this one says d cube = 0
        return primals[0] ** 3, 0.0 * tangents[0]

    moonlite.custom_jvp(cube, wrong_on_purpose)
    assert moonlite.grad(kernel)(2.0) == pytest.approx(1.0)
    with pytest.raises(AssertionError, match="disagrees with central finite differences"):
        check_rule(kernel, 2.0)


# --- errors ---------------------------------------------------------------------------------

def test_rule_for_a_plain_python_function_is_refused():
    def plain(x):
        return x

    with pytest.raises(MoonliteError, match="not compiled with @numba.njit"):
        moonlite.custom_jvp(plain, lambda p, t: (p[0], t[0]))


@numba.njit
def twice(x):
    return 2.0 * x


@numba.njit
def twice_fwd(x):
    return 2.0 * x, 0.0


@numba.njit
def twice_bwd_not_a_tuple(residuals, g):
    return 2.0 * g


@numba.njit
def twice_bwd_wrong_shape(residuals, g):
    return (np.ones(g.size + 1),)


@numba.njit
def twice_jvp_wrong_rank(primals, tangents):
    return 2.0 * primals[0], np.ones((2, 2))


@numba.njit
def sum_twice(x):
    return np.sum(twice(x))


def test_a_broken_rule_gets_a_clear_error():
    x = np.array([1.0, 2.0])
    moonlite.custom_vjp(twice, twice_fwd, twice_bwd_not_a_tuple)
    with pytest.raises(UnsupportedError, match="not a tuple of 1 cotangent"):
        moonlite.grad(sum_twice)(x)
    moonlite.custom_vjp(twice, twice_fwd, twice_bwd_wrong_shape)
    with pytest.raises(ValueError, match="cotangent whose shape differs"):
        moonlite.grad(sum_twice)(x)
    moonlite.custom_jvp(twice, twice_jvp_wrong_rank)
    with pytest.raises(UnsupportedError, match="its tangent has type"):
        moonlite.jvp(sum_twice, (x,), (x,))


@numba.njit
def scalar_jvp_only(x):
    return x * 2.0


moonlite.custom_jvp(scalar_jvp_only, lambda p, t: (p[0] * 2.0, t[0] * 2.0))


@numba.njit
def array_through_jvp_only(x):
    return np.sum(scalar_jvp_only(x))


def test_reverse_mode_of_a_jvp_rule_on_arrays_asks_for_a_vjp():
    with pytest.raises(UnsupportedError, match="give scalar_jvp_only a VJP rule"):
        moonlite.grad(array_through_jvp_only)(np.ones(3))


# --- a rule computing something other than its function (issue #16) --------------------------

@numba.njit
def sine_of(x):
    return np.sin(x)


@numba.njit
def sine_of_fwd(x):
    return np.sin(x)[:2].copy(), x  # a wrong primal output: two entries of three


@numba.njit
def sine_of_bwd(x, g):
    return (np.cos(x) * 1.0,)


moonlite.custom_vjp(sine_of, sine_of_fwd, sine_of_bwd)


@numba.njit
def uses_sine_of(x):
    return np.sum(sine_of(x))


def test_a_wrong_primal_output_of_a_rule_is_caught_in_debug_mode_and_by_the_checker():
    x = np.array([0.1, 0.2, 0.3])
    with moonlite.debug_mode():
        with pytest.raises(ValueError, match="custom rule of sine_of computes an output"):
            moonlite.grad(uses_sine_of)(x)
    with pytest.raises(AssertionError, match="primal output differs"):
        check_rule(uses_sine_of, x)


@numba.njit
def halved(x):
    return x * 0.5


@numba.njit
def halved_fwd(x):
    return x * 0.5, 0


@numba.njit
def halved_bwd(residual, g):
    return (int(g),)  # an int cotangent: truncates the derivative


moonlite.custom_vjp(halved, halved_fwd, halved_bwd)


@numba.njit
def uses_halved(x):
    return halved(x) * 3.0


def test_an_int_cotangent_is_refused():
    with pytest.raises(UnsupportedError, match="cotangent of argument 0 has type int64"):
        moonlite.grad(uses_halved)(0.7)
