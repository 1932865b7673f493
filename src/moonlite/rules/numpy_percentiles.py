"""np.percentile, np.quantile and their nan-skipping forms, for a float64 array and one float
percentile q, registered with their forward rules (per argument) and adjoints. Their test cases
are at the bottom (`CASES`).

numba computes them (`numba/np/arraymath.py`) on the flattened array, its nans dropped by the
nan- forms: q = 100 is the largest entry, q = 0 the smallest, else with rank = 1 + (n - 1) q/100,
f = floor(rank), m = rank - f, the value (1 - m) lower + m upper of the f-th and (f+1)-th
smallest entries. So the derivative in the array is 1 - m at the entry holding the f-th smallest
value and m at the next one (entries that tie are equal: which one gets it changes no value), 1
at the first largest or smallest entry at q = 100 or 0; in q it is (upper - lower) (n - 1)/100
(0 at q = 0 and 100, the ends of its domain). An array holding a nan (for np.percentile and
np.quantile) has a nan percentile and nan derivatives. The value is numba's own.

The helper is plain njit code, so forward mode over a reverse rule (Hessians) differentiates it
like any other njit callee.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _numba as nb
from ..ir.types import BoolType, FloatType
from .define import RuleNotApplicable, defjvp
from .operands import checked_positional, reads_all
from .registry import has_adjoint, is_float64_array, register
from .cases import NumpyRuleCase


@nb.njit(cache=True)
def percentile_derivatives(a, q, factor, skip_nan):
    """(d/da in a's shape, d/dq) of the percentile q * factor of a: `factor` is 1 for
    np.percentile, 100 for np.quantile; `skip_nan` for the nan- forms."""
    values = np.ravel(a)
    out = np.zeros(values.size)
    kept = np.empty(values.size, np.int64)  # positions of the entries numba keeps
    n = 0
    for i in range(values.size):
        if not np.isnan(values[i]):
            kept[n] = i
            n += 1
        elif not skip_nan:
            out[:] = np.nan
            return out.reshape(a.shape), np.nan
    if n == 0:
        out[:] = np.nan
        return out.reshape(a.shape), np.nan
    p = q * factor
    entries = values[kept[:n]]
    slope = 0.0
    if n == 1:
        out[kept[0]] = 1.0
    elif p == 100:
        out[kept[np.argmax(entries)]] = 1.0
    elif p == 0:
        out[kept[np.argmin(entries)]] = 1.0
    else:
        order = np.argsort(entries, kind="mergesort")
        rank = 1 + (n - 1) * (p / 100.0)
        f = math.floor(rank)
        m = rank - f
        k = int(f - 1)
        out[kept[order[k]]] += 1 - m
        out[kept[order[k + 1]]] += m
        slope = (entries[order[k + 1]] - entries[order[k]]) * (n - 1) * factor / 100.0
    return out.reshape(a.shape), slope


# the numpy function -> (factor, skip_nan)
_FORMS = {np.percentile: (1.0, False), np.quantile: (100.0, False),
          np.nanpercentile: (1.0, True), np.nanquantile: (100.0, True)}


def _check(a, q) -> None:
    if not (is_float64_array(a.type) and q.type.is_scalar and not isinstance(q.type, BoolType)):
        raise RuleNotApplicable("percentiles are differentiated for a float64 array and one "
                                "number q")


def _derivatives(b, fn, a, q):
    factor, skip_nan = _FORMS[fn]
    return b.call(percentile_derivatives, [a, q, b.const(factor, FloatType(64)),
                                           b.const(skip_nan, BoolType())])


def _jvp_terms(fn):
    def a_term(b, a, q, da):
        _check(a, q)
        weights = b.tuple_getitem(_derivatives(b, fn, a, q), 0)
        return b.call(np.sum, [b.mul(weights, da)])

    def q_term(b, a, q, dq):
        _check(a, q)
        return b.mul(b.tuple_getitem(_derivatives(b, fn, a, q), 1), dq)

    return a_term, q_term


def _adjoint(fn):
    def adjoint(rv, op) -> None:
        a, q = checked_positional(rv, op, 2, _check, f"call np.{fn.__name__}(a, q)",
                                  "pass a float64 array and one percentile")
        g = rv.take_adjoint(op.result)
        parts = _derivatives(rv.b, fn, rv.recall(a), rv.recall(q))
        if has_adjoint(a.type):
            rv.send(a, rv.b.mul(rv.b.tuple_getitem(parts, 0), g))
        if has_adjoint(q.type):
            rv.send(q, rv.b.mul(rv.b.tuple_getitem(parts, 1), g))

    return adjoint


for _fn in _FORMS:
    defjvp(_fn, *_jvp_terms(_fn))
    register(_fn, adjoint=_adjoint(_fn), reads=reads_all, keywords=())


# --- test cases (checked in every mode against finite differences) ---------------------------

def _percentile_and_rank(rng):
    """3 x 3 entries at least 0.05 apart (finite differences never reorder them), and the
    percentile 43, whose rank 1 + 8 * 0.43 = 4.44 is far from a whole number."""
    a = np.cumsum(rng.uniform(0.05, 0.5, 9))
    rng.shuffle(a)
    return a.reshape(3, 3), 43.0


CASES = [
    NumpyRuleCase("percentile", lambda a, q: np.percentile(a, q) ** 2, _percentile_and_rank,
                  (0, 1)),
    NumpyRuleCase("quantile", lambda a, q: np.quantile(a, q / 100.0) * a[0, 1],
                  _percentile_and_rank, (0, 1)),
    NumpyRuleCase("nanpercentile", lambda a, q: np.nanpercentile(a, q), _percentile_and_rank,
                  (0, 1)),
    NumpyRuleCase("percentile_largest", lambda a, q: np.percentile(a, 100.0) + q,
                  _percentile_and_rank, (0, 1)),
]
