"""np.flip, np.fliplr, np.flipud, np.roll and np.cumprod (rules/numpy_flips.py) in kernels
written as users write them: a reaction-diffusion ring with periodic boundaries by np.roll, a
zero-phase (forward-backward) filter by np.flip, a mirror-symmetry penalty on an image, a
survival curve and portfolio paths by np.cumprod with a factor exactly zero, each checked by
`moonlite.testing.check_rule` in every mode to second order against finite differences; exact
derivatives at zeros and at every shift; refusals, naming the call, of what the rules do not
cover."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.errors import UnsupportedError
from moonlite.ir import Builder, types
from moonlite.rules import RuleNotApplicable, lookup_field, lookup_jvp
from moonlite.testing import check_rule

from tests.helpers import assert_refused_in_both_modes


# --- np.roll: periodic boundaries -------------------------------------------------------------

@numba.njit
def allen_cahn_ring(u0, kappa, dt, steps):
    """Explicit reaction-diffusion on a ring of cells (np.roll closes the ring), then the free
    energy left and the first Fourier coefficient of the field."""
    u = u0.copy()
    for _ in range(steps):
        laplacian = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + dt * (kappa * laplacian + u - u * u * u)
    return np.sum(u * u) + np.sum(u * np.cos(2.0 * np.pi * np.arange(u.size) / u.size))


@numba.njit
def row_smoothness(field, weight):
    """Penalty on differences between neighbouring rows of a field periodic in its rows:
    numba's np.roll rolls the flattened array, so a shift by a whole row is a roll of rows."""
    below = np.roll(field, field.shape[1])
    d = field - below
    return weight * np.sum(d * d) + np.sum(field ** 4)


def test_periodic_stencils_to_second_order():
    rng = np.random.default_rng(11)
    u0 = rng.uniform(-0.8, 0.8, 9)
    check_rule(allen_cahn_ring, u0, 0.3, 0.1, 4, second_order=True)
    check_rule(row_smoothness, rng.uniform(-1.0, 1.0, (4, 3)), 0.7, second_order=True)


@numba.njit
def _rolled_against(x, w, shift):
    return np.sum(w * np.roll(x, shift))


@pytest.mark.parametrize("shift", [0, 1, -1, 5, -7, 13, 24, True])
def test_the_roll_adjoint_and_tangent_are_the_inverse_and_same_roll(shift):
    rng = np.random.default_rng(2)
    x, w, t = (rng.standard_normal((2, 3, 2)) for _ in range(3))
    g = moonlite.grad(_rolled_against)(x, w, shift)
    np.testing.assert_array_equal(g, np.roll(w, -int(shift)))  # a permutation: exact
    value, tangent = moonlite.jvp(_rolled_against, (x, w, shift), (t, np.zeros_like(w), None))
    assert value == _rolled_against(x, w, shift)
    np.testing.assert_allclose(tangent, np.sum(w * np.roll(t, int(shift))), rtol=1e-14)


@numba.njit
def _roll_of_a_number(x):
    return np.sum(np.roll(x[0] * x[1], 1)) + x[2]


def test_roll_of_a_number_is_refused_naming_the_call():
    assert_refused_in_both_modes(_roll_of_a_number, r"call of np\.roll\(float64, int64\)")


# --- np.flip, np.fliplr, np.flipud ------------------------------------------------------------

@numba.njit
def smooth(x, alpha):
    """A first-order recursive (exponential) smoother."""
    y = np.empty(x.size)
    acc = x[0]
    for i in range(x.size):
        acc = alpha * x[i] + (1.0 - alpha) * acc
        y[i] = acc
    return y


@numba.njit
def zero_phase_fit(signal, alpha, target):
    """Filter forwards, then backwards in time (np.flip), so that the phase lags cancel, and
    fit the result to a target: the loss of a smoother's parameter and of its input."""
    forward = smooth(signal, alpha)
    both = np.flip(smooth(np.flip(forward), alpha))
    r = both - target
    return np.sum(r * r * (1.0 + 0.1 * both))


@numba.njit
def symmetry_penalty(image):
    """How far an image is from its left-right and up-down mirror images (np.fliplr,
    np.flipud), and from its point reflection (np.flip of a stack of channels)."""
    lr = image - np.fliplr(image)
    ud = image - np.flipud(image)
    stack = np.stack((image, image * image))
    point = stack - np.flip(stack)
    return np.sum(lr * lr * image) + 0.5 * np.sum(ud * ud) + 0.25 * np.sum(point ** 2)


def test_time_reversed_filter_and_mirror_penalty_to_second_order():
    rng = np.random.default_rng(5)
    t = np.linspace(0.0, 1.0, 12)
    signal = np.sin(6.0 * t) + 0.2 * rng.standard_normal(12)
    check_rule(zero_phase_fit, signal, 0.35, np.sin(6.0 * t), fixed=(2,), second_order=True)
    check_rule(symmetry_penalty, rng.uniform(-1.0, 1.0, (4, 5)), second_order=True)


@numba.njit
def _flipped_against(x, w):
    return np.sum(w * np.flip(x)) + np.sum(w * np.flipud(x)) * 2.0 + np.sum(w * np.fliplr(x))


def test_the_flip_adjoints_are_the_same_flips():
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    expected = np.flip(w) + 2.0 * np.flipud(w) + np.fliplr(w)
    np.testing.assert_allclose(moonlite.grad(_flipped_against)(x, w), expected, rtol=1e-15)


@numba.njit
def _write_through_a_flip(x):
    y = x * 2.0
    z = np.flip(y)
    z[0] = x[0] * x[1]  # writes y[-1] too: the flip is a view
    return np.sum(y * y * x)


def test_a_write_through_a_flipped_view_reaches_the_array():
    check_rule(_write_through_a_flip, np.array([0.4, -1.2, 0.9, 1.6]), second_order=True)


# --- np.cumprod: survival curves and compound growth ------------------------------------------

@numba.njit
def expected_lifetime(hazard, discount):
    """A life table: the chance to survive each year is the running product of 1 - hazard; the
    expected lifetime is their sum, an annuity their discounted sum (a.cumprod() of the yearly
    discount factors). A hazard of exactly 1 (a certain death) makes every later term 0."""
    survival = np.cumprod(1.0 - hazard)
    factors = np.full(hazard.size, 1.0 / (1.0 + discount)).cumprod()
    annuity = np.sum(survival * factors)
    return np.sum(survival) + annuity * annuity


@numba.njit
def portfolio_paths(returns, weights):
    """Wealth paths of assets with per-period returns (a column per asset; a return of -1 is a
    total loss): the final wealth of each, weighted, and a penalty on the whole path."""
    total = 0.0
    for j in range(returns.shape[1]):
        path = np.cumprod(1.0 + returns[:, j])
        total += weights[j] * path[-1] + 0.1 * weights[j] ** 2 * np.sum(path * path)
    return total


def test_survival_and_growth_with_a_zero_factor_to_second_order():
    hazard = np.array([0.02, 0.05, 0.1, 1.0, 0.3, 0.25])
    check_rule(expected_lifetime, hazard, 0.04, second_order=True)
    check_rule(expected_lifetime, hazard[[0, 1, 2, 4, 5]], 0.04, second_order=True)
    returns = np.array([[0.05, -0.02, 0.10], [0.01, -1.0, -0.04], [-0.03, 0.20, 0.02],
                        [0.04, 0.05, 0.06]])
    check_rule(portfolio_paths, returns, np.array([0.5, 0.3, 0.2]), second_order=True)


@numba.njit
def _weighted_cumprod(a, w):
    return np.sum(w * np.cumprod(a))


def _brute_force_gradient(a, w):
    """sum over k >= j of w[k] times the product of a[0..k] but a[j], with explicit products."""
    flat = a.ravel()
    g = np.zeros(flat.size)
    for j in range(flat.size):
        for k in range(j, flat.size):
            g[j] += w[k] * np.prod(np.delete(flat[:k + 1], j))
    return g.reshape(a.shape)


@pytest.mark.parametrize("zeros", [(), (2,), (1, 4), (0, 5)])
def test_cumprod_derivatives_are_exact_at_zeros(zeros):
    rng = np.random.default_rng(8)
    a = rng.uniform(0.5, 1.5, (2, 3)) * rng.choice([-1.0, 1.0], (2, 3))
    a.flat[list(zeros)] = 0.0
    w, t = rng.standard_normal(6), rng.standard_normal((2, 3))
    expected = _brute_force_gradient(a, w)
    g = moonlite.grad(_weighted_cumprod)(a, w)
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, expected, rtol=1e-13, atol=1e-15)
    value, tangent = moonlite.jvp(_weighted_cumprod, (a, w), (t, np.zeros(6)))
    assert value == _weighted_cumprod(a, w)
    np.testing.assert_allclose(tangent, np.sum(expected * t), rtol=1e-12, atol=1e-15)


@numba.njit
def _cumprod_sum(x):
    return np.sum(np.cumprod(x))


def test_cumprod_of_float32_is_refused_naming_the_call():
    x = np.array([0.4, -0.3, 0.9], dtype=np.float32)
    _cumprod_sum(x)
    for derive in (lambda: moonlite.grad(_cumprod_sum)(x),
                   lambda: moonlite.jvp(_cumprod_sum, (x,), (np.ones(3, np.float32),)),
                   lambda: moonlite.hvp(_cumprod_sum, (x,), (np.ones(3, np.float32),))):
        with pytest.raises(UnsupportedError, match=r"call of np\.cumprod\(array\(float32"):
            derive()


@numba.njit
def _flips_and_rolls(x):
    return np.sum(np.flip(x) * x) + np.sum(np.roll(x, 2) * x * x) + np.sum(np.fliplr(x) ** 2)


def test_flips_and_rolls_of_float32_follow_float64():
    x = np.array([[0.3, -1.1, 0.7], [1.4, 0.2, 0.9]])
    g32 = moonlite.grad(_flips_and_rolls)(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, moonlite.grad(_flips_and_rolls)(x), rtol=1e-5)
    (h32,) = moonlite.hvp(_flips_and_rolls, (x.astype(np.float32),),
                          (np.ones((2, 3), np.float32),))
    (h64,) = moonlite.hvp(_flips_and_rolls, (x,), (np.ones((2, 3)),))
    np.testing.assert_allclose(h32, h64, rtol=1e-5)


# --- forms numba does not compile (an axis): the rules refuse them too ------------------------

class _Pullback:
    """What an adjoint asks of the reverse pass before it emits anything: its refusal."""

    def unsupported(self, op, construct, hint):
        return UnsupportedError(construct, hint=hint)


def _call_with_an_axis(fn, result_type, by_keyword):
    """An IR call of fn on a float64 matrix with an axis (numba 0.68 compiles no such call:
    a later numba might), and the values its forward rule gets."""
    matrix = types.ArrayType(types.float64, 2, "C")
    b = Builder.new_function("f", [matrix, matrix], ["a", "da"], result_type)
    b.position_at_end(b.new_block())
    a, da = b.function.args
    axis = b.const(1, types.int64)
    if fn is np.roll:
        shift = b.const(1, types.int64)
        op_args, kwargs = ([a, shift], {"axis": axis}) if by_keyword else ([a, shift, axis], {})
    else:
        op_args, kwargs = ([a], {"axis": axis}) if by_keyword else ([a, axis], {})
    result = b.call(fn, op_args, kwargs, type=result_type)
    tangents = (da,) + (None,) * (len(op_args) - 1)
    return b, result.op, tuple(op_args), tangents, kwargs


@pytest.mark.parametrize("by_keyword", [False, True], ids=["positional", "keyword"])
@pytest.mark.parametrize("fn", [np.flip, np.fliplr, np.flipud, np.roll, np.cumprod])
def test_an_axis_is_refused_in_both_modes_naming_the_call(fn, by_keyword):
    result_type = types.ArrayType(types.float64, 1 if fn is np.cumprod else 2, "C")
    b, op, primals, tangents, kwargs = _call_with_an_axis(fn, result_type, by_keyword)
    with pytest.raises(RuleNotApplicable):
        lookup_jvp(fn)(b, primals, tangents, kwargs)
    with pytest.raises(UnsupportedError, match=rf"call of np\.{fn.__name__}\(array") as refused:
        lookup_field(fn, "adjoint")(_Pullback(), op)
    assert "axis" in str(refused.value)

