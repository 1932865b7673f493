"""np.ptp and np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanprod
(rules/numpy_nan_reductions.py) in kernels written as users write them: a sensor calibration
that skips missing (nan) readings, the joint health of the sensors that reported, a
range-normalised fit, each checked by `moonlite.testing.check_rule` in every mode to second
order against finite differences; values and derivatives as numba gives them for arrays of nans
only, ties and nans; refusals, naming the call, of what the rules do not cover."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.errors import UnsupportedError
from moonlite.ir import Builder, types
from moonlite.rules import RuleNotApplicable, lookup_field, lookup_jvp
from moonlite.testing import check_grad, check_hvp, check_rule, check_vjp

from tests.helpers import assert_refused_in_both_modes

NAN = np.nan


# --- sensors with dropouts --------------------------------------------------------------------

@numba.njit
def calibration_loss(params, readings, reference):
    """Fit a sensor's offset and gain to a reference; a dropout reads nan and is skipped: the
    mean squared error, the worst and the best reading, and the total."""
    r = params[0] + params[1] * readings - reference
    sq = r * r
    return np.nanmean(sq) + 0.5 * np.nanmax(sq) - 0.1 * np.nanmin(sq) + 0.01 * np.nansum(sq)


@numba.njit
def logged_calibration_loss(params, raw, reference):
    """The same fit on a logger's raw values, where a dropout is recorded as -1."""
    return calibration_loss(params, np.where(raw < 0.0, np.nan, raw), reference)


@numba.njit
def all_healthy(weights, raw):
    """The chance that every sensor that reported is healthy: each one's chance a logistic
    function of its reading (a dropout, recorded as -1, is nan, which np.nanprod skips)."""
    readings = np.where(raw < 0.0, np.nan, raw)
    p = 1.0 / (1.0 + np.exp(-(weights[0] + weights[1] * readings)))
    return np.log(np.nanprod(p)) + np.nanprod(readings * readings)


READINGS = np.array([[0.82, NAN, 1.37, 0.44], [1.91, 0.65, NAN, 1.12], [NAN, 0.27, 1.58, 0.96]])
RAW = np.where(np.isnan(READINGS), -1.0, READINGS)
REFERENCE = np.array([[1.9, 0.0, 3.1, 1.2], [4.0, 1.6, 0.0, 2.5], [0.0, 0.8, 3.5, 2.2]])


def test_sensor_fits_that_skip_dropouts_to_second_order():
    check_rule(logged_calibration_loss, np.array([0.3, 1.8]), RAW, REFERENCE, fixed=(2,),
               second_order=True)
    check_rule(all_healthy, np.array([-0.2, 0.9]), RAW, second_order=True)


def test_arguments_holding_nans_in_reverse_mode_and_second_order():
    params = np.array([0.3, 1.8])
    check_vjp(calibration_loss, params, READINGS, REFERENCE, fixed=(2,))
    check_grad(calibration_loss, params, READINGS, REFERENCE, fixed=(2,))
    check_hvp(calibration_loss, params, READINGS, REFERENCE, fixed=(2,))
    gp, gr = moonlite.grad(calibration_loss, argnums=(0, 1))(params, READINGS, REFERENCE)
    assert np.isfinite(gp).all() and np.isfinite(gr).all()
    np.testing.assert_array_equal(gr[np.isnan(READINGS)], 0.0)  # a dropout: 0, not nan
    tangent = np.random.default_rng(1).standard_normal(READINGS.shape)
    _, dout = moonlite.jvp(calibration_loss, (params, READINGS, REFERENCE),
                           (np.zeros(2), tangent, np.zeros_like(REFERENCE)))
    np.testing.assert_allclose(dout, np.sum(gr * tangent), rtol=1e-12)  # forward = reverse


def test_check_rule_of_an_argument_holding_nans():
    # (check_jvp once took an argument holding a nan for one the kernel writes)
    check_rule(calibration_loss, np.array([0.3, 1.8]), READINGS, REFERENCE, fixed=(1, 2))


@numba.njit
def _sum_of_roots(x):
    return np.nansum(np.sqrt(x)) + np.nanmean(np.sqrt(x)) * np.nanmax(np.sqrt(x))


def test_a_nan_made_in_the_kernel_is_skipped_with_its_nan_tangent():
    x = np.array([0.8, -1.0, 2.5, -0.3, 1.4])  # sqrt of the negatives: nan, nan tangent
    value, g = moonlite.value_and_grad(_sum_of_roots)(x)
    assert value == _sum_of_roots(x)
    assert g[1] == 0.0 and g[3] == 0.0 and np.isfinite(g).all()
    _, tangent = moonlite.jvp(_sum_of_roots, (x,), (np.ones(5),))
    np.testing.assert_allclose(tangent, np.sum(g), rtol=1e-12)


# --- range normalisation ----------------------------------------------------------------------

@numba.njit
def range_normalised_fit(x, target):
    """Scale data to [0, 1] by its range (np.ptp) and fit it to a target shape."""
    z = (x - np.min(x)) / np.ptp(x)
    r = z - target
    return np.sum(r * r) + 0.1 * np.ptp(x * x)


def test_range_normalisation_to_second_order():
    x = np.array([[0.31, -1.2, 2.05], [0.77, -0.42, 1.38]])
    check_rule(range_normalised_fit, x, np.linspace(0.0, 1.0, 6).reshape(2, 3), fixed=(1,),
               second_order=True)


@numba.njit
def _ptp(x):
    return np.ptp(x)


def test_ptp_ties_go_to_the_first_largest_and_smallest_entries():
    x = np.array([1.0, 3.0, -2.0, 3.0, -2.0])
    value, g = moonlite.value_and_grad(_ptp)(x)
    assert value == _ptp(x) == 5.0
    np.testing.assert_array_equal(g, [0.0, 1.0, -1.0, 0.0, 0.0])  # np.max/np.min's choice
    _, tangent = moonlite.jvp(_ptp, (x,), (np.array([0.0, 0.5, 0.25, 8.0, 9.0]),))
    assert tangent == 0.25
    value, g = moonlite.value_and_grad(_ptp)(np.full(3, 0.7))  # one entry is both: 1 - 1
    assert value == 0.0
    np.testing.assert_array_equal(g, 0.0)


def test_ptp_of_an_array_holding_a_nan_is_nan_with_a_nan_derivative():
    x = np.array([0.4, NAN, 2.2, -0.1])
    value, g = moonlite.value_and_grad(_ptp)(x)
    assert np.isnan(value) and np.isnan(_ptp(x))
    assert np.isnan(g).all()
    assert np.isnan(moonlite.jvp(_ptp, (x,), (np.ones(4),))[1])


# --- arrays of nans only, ties ----------------------------------------------------------------

def _reduction(fn):
    return numba.njit(lambda x: fn(x))


@pytest.mark.parametrize("fn, value, derivative", [(np.nansum, 0.0, 0.0), (np.nanprod, 1.0, 0.0),
                                                   (np.nanmean, NAN, NAN), (np.nanmax, NAN, NAN),
                                                   (np.nanmin, NAN, NAN)],
                         ids=["nansum", "nanprod", "nanmean", "nanmax", "nanmin"])
def test_an_array_of_nans_only(fn, value, derivative):
    kernel = _reduction(fn)
    x = np.full((2, 2), NAN)
    np.testing.assert_equal(kernel(x), value)  # numba's value
    got, g = moonlite.value_and_grad(kernel)(x)
    np.testing.assert_equal(got, value)
    np.testing.assert_equal(g, np.full((2, 2), derivative))
    np.testing.assert_equal(moonlite.jvp(kernel, (x,), (np.ones((2, 2)),))[1], derivative)


@pytest.mark.parametrize("fn, x, first", [(np.nanmax, [NAN, 2.0, 5.0, 5.0, -1.0], 2),
                                          (np.nanmin, [NAN, -1.0, 5.0, 3.0, -1.0], 1)],
                         ids=["nanmax", "nanmin"])
def test_nan_extrema_ties_go_to_the_first_entry_that_is_not_nan(fn, x, first):
    kernel = _reduction(fn)
    x = np.array(x)
    value, g = moonlite.value_and_grad(kernel)(x)
    assert value == kernel(x)
    np.testing.assert_array_equal(g, np.eye(5)[first])  # as np.max/np.min's rules choose


@numba.njit
def _nan_stats(x):
    return np.nanmean(x) + 2.0 * np.nanprod(x) + 3.0 * np.nansum(x)


def test_nan_statistics_derivatives_in_closed_form():
    x = np.array([[1.5, NAN, -2.0], [0.0, 4.0, NAN]])  # a zero: nanprod's products are exact
    kept = ~np.isnan(x)
    others = np.array([np.prod(np.delete(x[kept], k)) for k in range(kept.sum())])
    expected = np.zeros_like(x)
    expected[kept] = 1.0 / kept.sum() + 2.0 * others + 3.0
    value, g = moonlite.value_and_grad(_nan_stats)(x)
    assert value == _nan_stats(x)
    np.testing.assert_allclose(g, expected, rtol=1e-15)


# --- refusals ---------------------------------------------------------------------------------

@numba.njit
def _ptp_of_a_number(x):
    return np.ptp(x[0] * x[1]) + x[2]


@numba.njit
def _nanmax_of_a_number(x):
    return np.nanmax(x[0] * x[1]) + x[2]


def test_a_number_is_refused_naming_the_call():
    assert_refused_in_both_modes(_ptp_of_a_number, r"call of np\.ptp\(float64\)")
    assert_refused_in_both_modes(_nanmax_of_a_number, r"call of np\.nanmax\(float64\)")


@numba.njit
def _nanmean(x):
    return np.nanmean(x * np.float32(2.0))


def test_float32_is_refused_naming_the_call():
    x = np.array([0.4, NAN, 0.9], dtype=np.float32)
    _nanmean(x)
    for derive in (lambda: moonlite.grad(_nanmean)(x),
                   lambda: moonlite.jvp(_nanmean, (x,), (np.ones(3, np.float32),))):
        with pytest.raises(UnsupportedError, match=r"call of np\.nanmean\(array\(float32"):
            derive()


class _Pullback:
    """What an adjoint asks of the reverse pass before it emits anything: its refusal."""

    def unsupported(self, op, construct, hint):
        return UnsupportedError(construct, hint=hint)


@pytest.mark.parametrize("by_keyword", [False, True], ids=["positional", "keyword"])
@pytest.mark.parametrize("fn", [np.ptp, np.nansum, np.nanmean, np.nanmax, np.nanmin,
                                np.nanprod])
def test_an_axis_is_refused_in_both_modes_naming_the_call(fn, by_keyword):
    """numba 0.68 compiles none of these with an axis (a later numba might): the forward rule
    and the adjoint refuse one, given an IR call with it."""
    matrix, vector = types.ArrayType(types.float64, 2, "C"), types.ArrayType(types.float64, 1, "C")
    b = Builder.new_function("f", [matrix, matrix], ["a", "da"], vector)
    b.position_at_end(b.new_block())
    a, da = b.function.args
    axis = b.const(0, types.int64)
    args, kwargs = ([a], {"axis": axis}) if by_keyword else ([a, axis], {})
    op = b.call(fn, args, kwargs, type=vector).op
    with pytest.raises(RuleNotApplicable):
        lookup_jvp(fn)(b, tuple(args), (da,) + (None,) * (len(args) - 1), kwargs)
    with pytest.raises(UnsupportedError, match=rf"call of np\.{fn.__name__}\(array") as refused:
        lookup_field(fn, "adjoint")(_Pullback(), op)
    assert "axis" in str(refused.value)
