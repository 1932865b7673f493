"""np.interp (rules/numpy_interp.py) in kernels written as users write them: a rating curve
read at float queries inside a loop, a lookup table fitted by its values and its knots, all
checked by `moonlite.testing.check_rule` in every mode to second order against finite
differences; values at the ends, on sample points and at a nan query as numba gives them."""

import numba
import numpy as np

import moonlite
from moonlite.testing import check_rule

KNOTS = np.array([0.0, 0.4, 1.1, 1.5, 2.6, 3.0])


@numba.njit
def reservoir(inflow, stage_table, flow_table, dt):
    """A storage model: outflow read from a rating curve at each step's stage."""
    storage = 0.5
    released = 0.0
    for q in inflow:
        out = np.interp(storage, stage_table, flow_table)
        storage = storage + dt * (q - out)
        released += out * dt
    return released + storage * storage


@numba.njit
def table_fit(values, knots, x, y):
    """Squared error of a piecewise-linear model given by its knots and values."""
    r = np.interp(x, knots, values) - y
    return np.sum(r * r)


def test_rating_curve_and_table_fit_to_second_order():
    inflow = np.array([0.9, 1.4, 0.3, 2.2, 1.0, 0.6])
    flows = np.array([0.0, 0.35, 0.9, 1.2, 2.1, 2.3])
    check_rule(reservoir, inflow, KNOTS, flows, 0.3, fixed=(3,), second_order=True)
    x = np.array([-0.3, 0.17, 0.52, 0.93, 1.32, 2.04, 2.81, 3.4])
    y = np.sin(x)
    values = np.cos(KNOTS)
    check_rule(table_fit, values, KNOTS, x, y, fixed=(3,), second_order=True)


@numba.njit
def _interp(x, xp, fp):
    return np.interp(x, xp, fp)


def test_the_ends_sample_points_and_nans():
    fp = np.array([1.0, 3.0, 2.0, 5.0, 4.0, 0.0])
    for x, slope in [(-1.0, 0.0), (3.5, 0.0), (3.0, 0.0), (0.4, (2.0 - 3.0) / 0.7),
                     (0.2, 2.0 / 0.4)]:
        value, (gx, gxp, gfp) = moonlite.value_and_grad(_interp, argnums=(0, 1, 2))(x, KNOTS, fp)
        assert value == _interp(x, KNOTS, fp)
        np.testing.assert_allclose(gx, slope)  # at a sample point: the slope on its right
    value, (gx, gxp, gfp) = moonlite.value_and_grad(_interp, argnums=(0, 1, 2))(np.nan, KNOTS,
                                                                                  fp)
    assert np.isnan(value) and np.isnan(gx) and np.isnan(gfp).any()
