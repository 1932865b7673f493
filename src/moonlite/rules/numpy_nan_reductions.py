"""np.ptp and the nan-skipping reductions np.nansum, np.nanmean, np.nanmax, np.nanmin and
np.nanprod of a whole float64 array (numba takes no axis for any of them), each registered once
with its forward rule, its adjoint, what the adjoint reads and the keywords it reads
(`registry.py`). Their test cases are at the bottom (`CASES`).

Each is a sum of weights times the entries' tangents: its derivative in a, in a's shape (the
`*_weights` helpers). numba computes them (`numba/np/arraymath.py`) by walking the flattened
array:

- `np.ptp(a)` = largest - smallest, each kept by `val > current` (`<`): the first largest and
  the first smallest entry, as `np.argmax`/`np.argmin` pick them for the np.max/np.min rules
  (`numpy_reductions.py`). Weights +1 there and -1 there (0 when they are one entry: all
  entries equal). A nan entry makes numba return nan at once: the derivative is nan.
- the nan- forms skip nan entries, so a nan entry's weight is 0 (and its tangent, maybe nan
  itself, as that of `np.sqrt` of a negative number, is never read). `nansum`: 1 at every other
  entry; `nanmean`: 1 / count; `nanprod`: the product of the other kept entries (prefix and
  suffix products, no division: zeros are exact); `nanmax`/`nanmin`: 1 at the first largest
  (smallest) kept entry, as for np.max/np.min (numba's loop keeps the last of equal entries:
  the same value, and which one gets the derivative changes no value). An array of nans only:
  nansum 0 and nanprod 1, derivative 0; nanmean, nanmax and nanmin nan (numba's value) with a
  nan derivative.

The value is numba's own. The weights but nanprod's depend on which entries are nan and which
is largest only: piecewise constant, they are registered with a zero derivative, so forward
mode over a reverse rule (Hessians) need not capture them; nanprod's are plain njit code that
it differentiates like any other njit callee.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from .cases import NumpyRuleCase, uniform
from .define import RuleNotApplicable, piecewise_constant, positional_only
from .operands import checked_positional, reads_first
from .registry import is_float64_array, register


@nb.njit(cache=True)
def weighted_tangent(a, weights, da):
    """sum of weights * da over a's entries, skipping those of weight 0 (a nan entry's tangent,
    maybe nan, is never read); nan if a weight is nan (no derivative)."""
    x, w, d = np.ravel(a), np.ravel(weights), np.ravel(da)
    total = 0.0
    for i in range(x.size):
        if np.isnan(w[i]):
            return np.nan
        if w[i] != 0.0:
            total += w[i] * d[i]
    return total


@nb.njit(cache=True)
def ptp_weights(a):
    """d np.ptp(a) / da: +1 at the first largest entry, -1 at the first smallest (numba keeps
    the first of equal extremes); nan everywhere if a holds a nan (numba's ptp is nan)."""
    x = np.ravel(a)
    out = np.zeros(x.size)
    largest, smallest = 0, 0
    for i in range(x.size):
        if np.isnan(x[i]):
            out[:] = np.nan
            return out.reshape(a.shape)
        if x[i] > x[largest]:
            largest = i
        if x[i] < x[smallest]:
            smallest = i
    if x.size > 0:
        out[largest] += 1.0
        out[smallest] -= 1.0
    return out.reshape(a.shape)


@nb.njit(cache=True)
def nansum_weights(a):
    """d np.nansum(a) / da: 1 at each entry that is not nan, 0 at the nans numba skips."""
    x = np.ravel(a)
    out = np.zeros(x.size)
    for i in range(x.size):
        if not np.isnan(x[i]):
            out[i] = 1.0
    return out.reshape(a.shape)


@nb.njit(cache=True)
def nanmean_weights(a):
    """d np.nanmean(a) / da: 1 / count at each of the count entries that are not nan; nan
    everywhere when every entry is (numba's nanmean is then 0 / 0)."""
    out = nansum_weights(a)
    count = np.sum(out)
    if count == 0.0:
        out[:] = np.nan
        return out
    return out / count


@nb.njit(cache=True)
def nanmax_weights(a):
    """d np.nanmax(a) / da: 1 at the first largest entry that is not nan; nan everywhere when
    every entry is nan (numba's nanmax is then nan)."""
    return _one_at_nan_extreme(a, True)


@nb.njit(cache=True)
def nanmin_weights(a):
    """d np.nanmin(a) / da: 1 at the first smallest entry that is not nan (nan if none)."""
    return _one_at_nan_extreme(a, False)


@nb.njit(cache=True)
def _one_at_nan_extreme(a, largest):
    x = np.ravel(a)
    out = np.zeros(x.size)
    best = -1
    for i in range(x.size):
        if np.isnan(x[i]):
            continue
        if best < 0 or (x[i] > x[best] if largest else x[i] < x[best]):
            best = i
    if best < 0:
        out[:] = np.nan
    else:
        out[best] = 1.0
    return out.reshape(a.shape)


@nb.njit(cache=True)
def nanprod_weights(a):
    """d np.nanprod(a) / da: at each entry that is not nan, the product of the other entries
    that are not nan (a prefix times a suffix product: no division, so zeros are exact); 0 at
    the nans."""
    x = np.ravel(a)
    n = x.size
    out = np.zeros(n)
    acc = 1.0
    for i in range(n):
        if not np.isnan(x[i]):
            out[i] = acc
            acc = acc * x[i]
    acc = 1.0
    for i in range(n - 1, -1, -1):
        if not np.isnan(x[i]):
            out[i] = out[i] * acc
            acc = acc * x[i]
    return out.reshape(a.shape)


# the numpy function -> its weights
_WEIGHTS = {np.ptp: ptp_weights, np.nansum: nansum_weights, np.nanmean: nanmean_weights,
            np.nanmax: nanmax_weights, np.nanmin: nanmin_weights, np.nanprod: nanprod_weights}

# piecewise constant: a zero derivative (forward mode over the pullback need not capture them)
for _weights in (ptp_weights, nansum_weights, nanmean_weights, nanmax_weights, nanmin_weights):
    piecewise_constant(_weights)


def _check(a) -> None:
    if not is_float64_array(a.type):
        raise RuleNotApplicable("it is differentiated for a float64 array, reduced whole")


def _jvp(fn):
    """The forward rule of one reduction: <weights(a), da> over the entries numba reads."""
    weights = _WEIGHTS[fn]

    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 1)
        a = primals[0]
        _check(a)
        return b.call(weighted_tangent, [a, b.call(weights, [a]), tangents[0]])

    return rule


def _adjoint(fn):
    """a's adjoint += weights(a) * the result's adjoint (0 at skipped nans, nan where there is
    no derivative)."""
    weights = _WEIGHTS[fn]

    def adjoint(rv, op) -> None:
        (a,) = checked_positional(rv, op, 1, _check, f"call np.{fn.__name__}(a) without an "
                                  "axis", "pass a float64 array")
        dy = rv.take_adjoint(op.result)
        if rv.shadow(a) is not None:
            rv.send(a, rv.b.mul(rv.b.call(weights, [rv.recall(a)]), dy))

    return adjoint


for _fn in _WEIGHTS:
    register(_fn, jvp=_jvp(_fn), adjoint=_adjoint(_fn), reads=reads_first, keywords=())


# --- test cases (checked in every mode against finite differences) ---------------------------

def _some_negative(rng):
    """3 x 4 entries, magnitudes at least 0.1 apart (finite differences never reorder them),
    two of them negative: the kernels take np.sqrt, nan there, with a nan tangent. (Arrays
    holding nans as arguments: tests/rules/test_nan_reductions.py.)"""
    a = np.cumsum(rng.uniform(0.1, 0.5, 12)) + 0.2
    rng.shuffle(a)
    a[[3, 8]] *= -1.0
    return (a.reshape(3, 4),)


_DISTINCT = uniform(-2.0, 2.0, 3, 4)


CASES = [
    NumpyRuleCase("ptp", lambda x: np.ptp(x) ** 2, lambda rng: (_DISTINCT(rng),), (0,)),
    NumpyRuleCase("ptp_of_transpose", lambda x: np.ptp(x.T * x.T),
                  lambda rng: (_DISTINCT(rng),), (0,)),
    NumpyRuleCase("nansum", lambda x: np.nansum(np.sqrt(x)) * 2.0, _some_negative, (0,)),
    NumpyRuleCase("nanmean", lambda x: np.nanmean(np.sqrt(x)) ** 2, _some_negative, (0,)),
    NumpyRuleCase("nanmax", lambda x: np.nanmax(np.sqrt(x)), _some_negative, (0,)),
    NumpyRuleCase("nanmin", lambda x: np.nanmin(np.sqrt(x)) * 3.0, _some_negative, (0,)),
    NumpyRuleCase("nanprod", lambda x: np.nanprod(np.sqrt(x)), _some_negative, (0,)),
    NumpyRuleCase("nanmean_without_nans", lambda x: np.nanmean(x.T),
                  lambda rng: (_DISTINCT(rng),), (0,)),
    NumpyRuleCase("nansum_without_nans", lambda x: np.nansum(x * x),
                  lambda rng: (_DISTINCT(rng),), (0,)),
]
