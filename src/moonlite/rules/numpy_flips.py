"""np.flip, np.fliplr, np.flipud, np.roll and np.cumprod (and its method a.cumprod()) of float
arrays, each registered once with its forward rule, its adjoint, what the adjoint reads and its
traits (`registry.py`). Their test cases are at the bottom (`CASES`).

numba implements them (`numba/np/arrayobj.py`, `numba/np/arraymath.py`) as:

- `np.flip(m)`: `m[::-1, ::-1, ...]`, every axis reversed (numba takes no axis), a view of m;
  `np.fliplr(m)`: `m[:, ::-1]` (2-d and more); `np.flipud(m)`: `m[::-1]` (1-d and more). Each is
  linear and a permutation that is its own inverse, so its own transpose: the tangent is the
  same flip of the tangent, and the adjoint the same flip of the result's adjoint (in reverse
  mode the result's shadow is that flip of the argument's shadow, as a transpose's is).
- `np.roll(a, shift)` for an int (or bool) shift: a fresh array of a's shape whose flattened
  entry `(i + shift) % a.size` is a's flattened entry i (numba takes no axis: the roll is of the
  flattened array, in C order, whatever a's shape). Linear and a permutation: the tangent is
  `np.roll(da, shift)`, the adjoint `np.roll(g, -shift)` (entry i gets g's entry i + shift).
- `np.cumprod(a)`: the running product of the flattened a, a 1-D array of a.size entries,
  `y[k] = y[k - 1] a[k]` (`y[-1] = 1`). Its tangent follows the same recurrence,
  `dy[k] = dy[k - 1] a[k] + y[k - 1] da[k]`, and its adjoint the transposed one: with
  `s[j] = g[j] + a[j + 1] s[j + 1]` (from the end, `s[n - 1] = g[n - 1]`), a[j] gets
  `y[j - 1] s[j]`. Both are O(n) and divide by nothing, so a zero in a gives the exact
  derivative (the products from the zero on move with the zero's own tangent only), never nan.

The helpers are plain njit code without `.flat` (which forward mode does not differentiate), so
forward mode over a reverse rule (Hessians) differentiates them like any other njit callee; the
pullback of roll is a call of roll itself, and the flips' shadows are flips, which use these
rules.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir.traits import AXES_VIEW, VIEW
from ..ir.types import ArrayType, BoolType, IntType, int64, is_record_array
from .cases import NumpyRuleCase, array_case, uniform
from .define import Method, RuleNotApplicable, positional_only
from .operands import checked_positional, reads_first, reads_nothing, reads_options
from .registry import is_float64_array, is_float_array, register

_FLIPS = (np.flip, np.fliplr, np.flipud)


# --- flips: views whose shadows are the same flips of their sources' shadows ------------------

def _check_flip(a) -> None:
    if not (is_float_array(a.type) or is_record_array(a.type)):  # (a structured array's
        raise RuleNotApplicable("flips are differentiated for float arrays")  # tangent flips)


def _flip_rule(fn):
    """The forward rule of one flip: the same flip of the tangent (a view of it, as the result
    is of the primal, so writes through the result reach both)."""

    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 1)
        _check_flip(primals[0])
        return b.call(fn, [tangents[0]])

    return rule


def _flip_adjoint(fn):
    """Nothing to send back (below); refuses what the forward rule refuses, so that the modes
    agree."""

    def adjoint(rv, op) -> None:
        checked_positional(rv, op, 1, _check_flip, f"call np.{fn.__name__}(a) without an axis",
                           "pass a float array")

    return adjoint


# A flip is always a view of its argument (numba slices it), like a transpose: registered with
# `AXES_VIEW`, the reverse pass makes the result's shadow the same flip of the argument's shadow
# (what the trait means to it: `ad/reverse/sweep.py`). Adjoints added to the result's shadow so
# land, flipped back, in the argument's, which is the adjoint np.flip(g); and a write through
# the flipped view reaches the argument's gradient (with a shadow of its own, as reshape's, the
# write was lost: a wrong gradient). Nothing is left to send back.
for _fn in _FLIPS:
    register(_fn, jvp=_flip_rule(_fn), adjoint=_flip_adjoint(_fn), reads=reads_nothing,
             keywords=(), traits=AXES_VIEW | VIEW)


# --- np.roll: a cyclic shift of the flattened array --------------------------------------------

def _check_roll(a, shift) -> None:
    # an int or bool array moves no derivative (capture rolls the places of a structured
    # array's entries: record_fields.move_records)
    if not (is_float_array(a.type) or isinstance(a.type, ArrayType)
            and isinstance(a.type.dtype, (IntType, BoolType))):
        raise RuleNotApplicable("np.roll is differentiated for a float array (np.roll of a "
                                "number is a 0-d array: roll an array)")
    if not (isinstance(shift.type, BoolType)
            or isinstance(shift.type, IntType) and shift.type.signed):
        raise RuleNotApplicable("np.roll is differentiated for a signed integer shift")


def _roll_rule(b, primals, tangents, kwargs):
    """np.roll(da, shift): the same permutation of the tangent (the shift carries none)."""
    positional_only(kwargs, primals, 2)
    _check_roll(*primals)
    return b.call(np.roll, [tangents[0], primals[1]])


def _roll_adjoint(rv, op) -> None:
    """a's adjoint += np.roll(g, -shift): entry i of a went to entry (i + shift) % size."""
    a, shift = checked_positional(rv, op, 2, _check_roll, "call np.roll(a, shift) without an "
                                  "axis", "pass a float array and an integer shift")
    g = rv.shadow(op.result)
    if g is None:
        return
    b = rv.b
    back = b.neg(b.cast(rv.recall(shift), int64))
    rv.send(a, b.call(np.roll, [g, back]))


register(np.roll, jvp=_roll_rule, adjoint=_roll_adjoint, reads=reads_options, keywords=())


# --- np.cumprod: running products by their recurrence ----------------------------------------

@nb.njit(cache=True)
def cumprod_tangent(a, da):
    """The tangent of np.cumprod(a) (flattened, C order): dy[k] = dy[k - 1] a[k] + y[k - 1]
    da[k], the product rule one factor at a time. y is accumulated as numba does (`c *= v`),
    and nothing is divided, so zeros in a are exact."""
    x, dx = np.ravel(a), np.ravel(da)
    out = np.empty(x.size)
    y, dy = 1.0, 0.0
    for k in range(x.size):
        dy = dy * x[k] + y * dx[k]
        y = y * x[k]
        out[k] = dy
    return out


@nb.njit(cache=True)
def cumprod_adjoint(a, g):
    """a's adjoint (in a's shape) for the adjoint g of y = np.cumprod(a): a[j] gets
    y[j - 1] s[j], s[j] = sum over k >= j of g[k] a[j + 1] ... a[k], by s[j] = g[j] +
    a[j + 1] s[j + 1] from the end. O(n), no division (zeros exact)."""
    x = np.ravel(a)
    n = x.size
    before = np.empty(n)  # before[j] = y[j - 1], the product of the entries before j
    y = 1.0
    for j in range(n):
        before[j] = y
        y = y * x[j]
    out = np.empty(n)
    s = 0.0
    for j in range(n - 1, -1, -1):
        s = g[j] + (x[j + 1] * s if j + 1 < n else 0.0)
        out[j] = before[j] * s
    return out.reshape(a.shape)


def _check_cumprod(a) -> None:
    if not is_float64_array(a.type):
        raise RuleNotApplicable("np.cumprod is differentiated for float64 arrays")


def _cumprod_rule(b, primals, tangents, kwargs):
    positional_only(kwargs, primals, 1)
    _check_cumprod(primals[0])
    return b.call(cumprod_tangent, [primals[0], tangents[0]])


def _cumprod_adjoint(rv, op) -> None:
    (a,) = checked_positional(rv, op, 1, _check_cumprod, "call np.cumprod(a) without an axis",
                              "pass a float64 array")
    g = rv.shadow(op.result)
    if g is not None:
        rv.send(a, rv.b.call(cumprod_adjoint, [rv.recall(a), g]))


for _key in (np.cumprod, Method("cumprod")):
    register(_key, jvp=_cumprod_rule, adjoint=_cumprod_adjoint, reads=reads_first,
             keywords=())


# --- test cases (checked in every mode against finite differences) ---------------------------

def _with_a_zero(rng):
    """A 3 x 3 array of factors in [0.5, 1.5] of either sign, one of them exactly zero."""
    a = rng.uniform(0.5, 1.5, (3, 3)) * rng.choice([-1.0, 1.0], (3, 3))
    a[1, 1] = 0.0
    return (a,)


def _shifted(shift):
    return lambda rng: (rng.uniform(-2.0, 2.0, (3, 4)), shift)


CASES = [
    array_case("flip", lambda x: np.flip(x) * x, uniform(-2.0, 2.0, 5)),
    array_case("flip_3d", lambda x: np.flip(x) ** 2, uniform(-2.0, 2.0, 2, 3, 2)),
    array_case("flip_of_transpose", lambda x: np.flip(x.T) * 2.0, uniform(-2.0, 2.0, 3, 4)),
    array_case("fliplr", lambda x: np.fliplr(x) * x, uniform(-2.0, 2.0, 3, 3)),
    array_case("flipud", lambda x: np.flipud(x) ** 2, uniform(-2.0, 2.0, 4, 3)),
    array_case("flipud_vector", lambda x: np.flipud(x) * x, uniform(-2.0, 2.0, 5)),
    NumpyRuleCase("roll", lambda x, k: np.roll(x, k) * x, _shifted(5), (0,)),
    NumpyRuleCase("roll_negative", lambda x, k: np.roll(x, k) ** 2, _shifted(-7), (0,)),
    NumpyRuleCase("roll_vector", lambda x, k: np.roll(x, k) * x,
                  lambda rng: (rng.uniform(-2.0, 2.0, 6), 2), (0,)),
    array_case("cumprod", lambda x: np.cumprod(x), uniform(0.5, 1.5, 3, 4)),
    NumpyRuleCase("cumprod_with_a_zero", lambda x: np.cumprod(x) * 2.0, _with_a_zero, (0,)),
    array_case("cumprod_of_transpose", lambda x: np.cumprod(x.T), uniform(-1.5, 1.5, 3, 2)),
    array_case("method_cumprod", lambda x: x.cumprod(), uniform(0.5, 1.5, 6)),
]
