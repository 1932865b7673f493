"""Forward mode's fresh arrays with their tangents in one allocation.

A fresh writable array (`np.zeros_like(x)`, `np.empty(n)`, ...) gets real zero tangent arrays, one
per direction. Allocated separately, a primal and its tangent are two large blocks; glibc serves
a block above its mmap threshold from a fresh mapping (or trims the heap when it is freed), so
every call of the derived code page-faults through all of them again. On the Hessian-vector
product of rosenbrock with 10^6 entries the two gradient-sized arrays of the forward-over-reverse
rule cost 13x the primal's time in page faults alone; one block of shape `(1 + width, *shape)`
reused from the heap costs 0.3x.

So the primal and its tangents are rows of one zeroed C-ordered block: the primal is row 0 and
direction j's tangent row 1 + j. `np.empty` becomes zeroed too (the tangent must be zero, and
the primal's contents were unspecified). Forms with a dtype, a layout other than C, or keyword
arguments keep separate allocations.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir import ops
from ..ir.core import Op
from ..ir.types import ArrayType, FloatType, IntType, TupleType


@nb.njit(cache=True)
def stacked_zeros_like(a, rows):
    return np.zeros((rows,) + a.shape, a.dtype)


@nb.njit(cache=True)
def stacked_zeros_of_length(n, rows):
    return np.zeros((rows, n))


@nb.njit(cache=True)
def stacked_zeros_of_shape(shape, rows):
    return np.zeros((rows,) + shape)


_LIKE = (np.zeros_like, np.empty_like)
_OF_SHAPE = (np.zeros, np.empty)


def stackable(op: Op) -> bool:
    """True for an allocation whose primal and tangents can share one block."""
    t = op.result.type if op.result is not None else None
    # (a row of a block of 0-d arrays would be a number, not a 0-d array)
    return (isinstance(t, ArrayType) and isinstance(t.dtype, FloatType) and t.layout == "C"
            and t.ndim > 0 and not t.readonly and _helper(op) is not None)


def _helper(op: Op):
    """The njit function allocating `op`'s block, or None if `op` is no allocation it serves
    (by position only, without a dtype: the block's dtype must be the result's)."""
    if not isinstance(op, ops.Call) or op.kwnames or len(op.positional) != 1:
        return None
    t, arg = op.result.type, op.positional[0].type
    if any(op.callee is f for f in _LIKE):
        if isinstance(arg, ArrayType) and arg.dtype == t.dtype and arg.ndim == t.ndim:
            return stacked_zeros_like
    elif any(op.callee is f for f in _OF_SHAPE) and t.dtype.bits == 64:
        if isinstance(arg, IntType):
            return stacked_zeros_of_length
        if isinstance(arg, TupleType) and all(isinstance(e, IntType) for e in arg.elements):
            return stacked_zeros_of_shape
    return None


def emit_stacked(b, op: Op, arg, width: int) -> tuple:
    """Emit the block and its rows: (primal, [tangent per direction]). `stackable(op)` holds, so
    a row (an int index into a C-ordered block) has the primal's type."""
    block = b.call(_helper(op), [arg, b.const(1 + width)])
    views = [b.getitem(block, b.const(k), type=op.result.type) for k in range(1 + width)]
    return views[0], views[1:]
