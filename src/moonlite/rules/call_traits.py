"""`op.traits()` for calls and method calls: what the callee's registration declares, on top of
what holds for whole families of callees.

- numpy functions (not `numpy.random`) with a result and no `out=` write nothing; ufuncs (and
  numba's `@vectorize` functions) are elementwise. A numpy function returning None (`np.fill_diagonal`, `np.copyto`) writes.
- `math` functions called by position write nothing and are elementwise (scalars).
- `len`, `min`, `max`, `abs` and `sum` write nothing.
- Array methods write nothing except `fill`, `sort`, `resize`, `put` and `itemset`; one with an
  array result may return a view of its receiver (`reshape`, `ravel`: at least for readers
  asking whether writes through the result reach the receiver), except `copy` and `flatten`,
  which numba always makes new arrays.
- Anything else (njit functions, unknown callees) may write: `WRITES`.

No call is `PURE`: a dead call is kept (numpy raises for mismatched shapes).
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir import ops
from ..ir.traits import ELEMENTWISE, VIEW, WRITES, Trait, set_call_traits
from ..ir.types import ArrayType, NoneType
from .operands import primitive
from .registry import lookup_field

WRITING_METHODS = frozenset({"fill", "sort", "resize", "put", "itemset"})
COPYING_METHODS = frozenset({"copy", "flatten"})
_READING_BUILTINS = (len, min, max, abs, sum)


def traits_of_call(op) -> Trait:
    declared = lookup_field(primitive(op), "traits")
    registered = declared or Trait.NONE
    if isinstance(op, ops.MethodCall):
        return _method_traits(op) | registered
    if declared is not None and declared == Trait.NONE and nb.is_njit_dispatcher(op.callee):
        # an njit function registered as doing nothing but read its arguments (the overlap
        # guard of rules/overlap.py): not a write of the arrays it checks
        return Trait.NONE
    if registered & Trait.VIEW and nb.is_njit_dispatcher(op.callee):
        # an njit function registered as making a view (a record's field view): it writes
        # nothing itself, and writes through the view are the view's users'
        return registered
    return _call_traits(op) | registered


def _method_traits(op: ops.MethodCall) -> Trait:
    if op.method in WRITING_METHODS:
        return WRITES
    return VIEW if _array_result(op) and op.method not in COPYING_METHODS else Trait.NONE


def _call_traits(op: ops.Call) -> Trait:
    callee = op.callee
    module = getattr(callee, "__module__", "") or ""
    if module == "math" and not op.kwnames:
        return ELEMENTWISE
    if isinstance(callee, (np.ufunc, nb.DUFunc)):  # numpy's and @vectorize's
        return WRITES if "out" in op.kwnames or op.result is None else ELEMENTWISE
    if module.startswith("numpy") and not module.startswith("numpy.random"):
        if "out" in op.kwnames or op.result is None or _none_result(op):
            return WRITES
        return Trait.NONE
    if any(callee is f for f in _READING_BUILTINS):
        return Trait.NONE
    return WRITES


def _array_result(op) -> bool:
    return op.result is not None and isinstance(op.result.type, ArrayType)


def _none_result(op) -> bool:
    return isinstance(op.result.type, NoneType)


set_call_traits(traits_of_call)
