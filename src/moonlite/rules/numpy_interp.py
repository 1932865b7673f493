"""np.interp(x, xp, fp): piecewise-linear interpolation of the points (xp, fp) at x, for a float
or a 1-D array x and 1-D float64 xp and fp, registered with its forward rule (per argument) and
its adjoint. Its test cases are at the bottom (`CASES`).

Inside an interval, y = fp[j] + s (x - xp[j]) with s = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
and t = (x - xp[j]) / (xp[j + 1] - xp[j]): dy/dx = s, dy/dfp[j] = 1 - t, dy/dfp[j + 1] = t,
dy/dxp[j] = -s (1 - t), dy/dxp[j + 1] = -s t. Outside [xp[0], xp[-1]] numba returns fp[0] or
fp[-1]: only that entry of fp moves it. The interval is the one `np.searchsorted(xp, x, 'right')`
finds, so a query on a sample point takes the derivative from its right (from the left at the
last point, where the right side is constant). A nan query gives nan derivatives. The value is
numba's own np.interp; in fp the map is linear, so its tangent is np.interp of fp's tangent.

The helpers are plain njit code, so forward mode over a reverse rule (Hessians) differentiates
them like any other njit callee.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir.types import FloatType
from .define import RuleNotApplicable, defjvp
from .operands import checked_positional, reads_all
from .registry import has_adjoint, is_float64_array, register
from .cases import NumpyRuleCase


@nb.njit(cache=True)
def interp_bracket(xp, fp, v):
    """(j, 1 - t, t, s) for a query v: y = (1 - t) fp[j] + t fp[j + 1] (t = 0 at the ends,
    where j + 1 may be past the last point and is never read), s = dy/dv."""
    n = xp.shape[0]
    if np.isnan(v):
        return 0, np.nan, np.nan, np.nan
    if v < xp[0]:
        return 0, 1.0, 0.0, 0.0
    if v >= xp[n - 1]:
        return n - 1, 1.0, 0.0, 0.0
    j = np.searchsorted(xp, v, side="right") - 1
    width = xp[j + 1] - xp[j]
    t = (v - xp[j]) / width
    return j, 1.0 - t, t, (fp[j + 1] - fp[j]) / width


@nb.njit(cache=True)
def interp_slope(x, xp, fp):
    """dy/dx at every query of a 1-D x."""
    out = np.empty(x.shape[0])
    for k in range(x.shape[0]):
        out[k] = interp_bracket(xp, fp, x[k])[3]
    return out


@nb.njit(cache=True)
def interp_slope_at(v, xp, fp):
    return interp_bracket(xp, fp, v)[3]


@nb.njit(cache=True)
def interp_xp_tangent(x, xp, fp, dxp):
    """How the values at a 1-D x move when the sample points move by dxp."""
    out = np.empty(x.shape[0])
    for k in range(x.shape[0]):
        out[k] = interp_xp_tangent_at(x[k], xp, fp, dxp)
    return out


@nb.njit(cache=True)
def interp_xp_tangent_at(v, xp, fp, dxp):
    j, left, right, s = interp_bracket(xp, fp, v)
    if right == 0.0 or np.isnan(s):
        return 0.0 * s
    return -s * (left * dxp[j] + right * dxp[j + 1])


@nb.njit(cache=True)
def interp_adjoints(x, xp, fp, g):
    """(gx, gxp, gfp) for a 1-D x and the adjoint g of the values."""
    gx = np.empty(x.shape[0])
    gxp = np.zeros(xp.shape[0])
    gfp = np.zeros(fp.shape[0])
    for k in range(x.shape[0]):
        j, left, right, s = interp_bracket(xp, fp, x[k])
        gx[k] = s * g[k]
        gfp[j] += left * g[k]
        if right != 0.0:
            gfp[j + 1] += right * g[k]
            gxp[j] -= s * left * g[k]
            gxp[j + 1] -= s * right * g[k]
        elif np.isnan(s):
            gxp[j] += s
    return gx, gxp, gfp


@nb.njit(cache=True)
def interp_adjoints_at(v, xp, fp, g):
    """(gx, gxp, gfp) for a float query v and the adjoint g of its value."""
    gx, gxp, gfp = interp_adjoints(np.full(1, v), xp, fp, np.full(1, g))
    return gx[0], gxp, gfp


def _check(x, xp, fp) -> None:
    vectors = all(is_float64_array(a.type, 1) for a in (xp, fp))
    query = x.type == FloatType(64) or is_float64_array(x.type, 1)
    if not (vectors and query):
        raise RuleNotApplicable("np.interp is differentiated for a float64 or 1-D float64 "
                                "array x and 1-D float64 xp and fp")


def _x_term(b, x, xp, fp, dx):
    _check(x, xp, fp)
    slope = interp_slope_at if x.type.is_scalar else interp_slope
    return b.mul(b.call(slope, [x, xp, fp]), dx)


def _xp_term(b, x, xp, fp, dxp):
    _check(x, xp, fp)
    helper = interp_xp_tangent_at if x.type.is_scalar else interp_xp_tangent
    return b.call(helper, [x, xp, fp, dxp])


def _fp_term(b, x, xp, fp, dfp):
    _check(x, xp, fp)
    return b.call(np.interp, [x, xp, dfp])  # linear in fp


def _interp_adjoint(rv, op) -> None:
    args = checked_positional(rv, op, 3, _check, "call np.interp(x, xp, fp)",
                              "pass float64 arrays (x a float or a 1-D array)")
    g = rv.result_adjoint(op.result)
    if g is None:
        return
    x, xp, fp = args
    helper = interp_adjoints_at if x.type.is_scalar else interp_adjoints
    parts = rv.b.call(helper, [rv.recall(x), rv.recall(xp), rv.recall(fp), g])
    for k, operand in enumerate(args):
        if has_adjoint(operand.type):
            rv.send(operand, rv.b.tuple_getitem(parts, k))


defjvp(np.interp, _x_term, _xp_term, _fp_term)
register(np.interp, adjoint=_interp_adjoint, reads=reads_all, keywords=())


# --- test cases (checked in every mode against finite differences) ---------------------------

def _points(rng):
    """(queries inside, before and after the sample points, increasing sample points at least
    0.3 apart, their values); inside queries at least 0.05 from every sample point."""
    xp = np.cumsum(rng.uniform(0.3, 1.0, 6))
    x = xp[:-1] + rng.uniform(0.05, 0.25, 5)
    return np.concatenate((x, [xp[0] - 0.7, xp[-1] + 0.4])), xp, rng.uniform(-2.0, 2.0, 6)


def _one_query(rng):
    x, xp, fp = _points(rng)
    return float(x[2]), xp, fp


CASES = [
    NumpyRuleCase("interp", lambda x, xp, fp: np.interp(x, xp, fp) ** 2, _points, (0, 1, 2)),
    NumpyRuleCase("interp_at_a_float", lambda x, xp, fp: np.interp(x, xp, fp) * x, _one_query,
                  (0, 1, 2)),
]
