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

import numba
import numpy as np

from ..ir import ops
from ..ir.core import Op
from ..ir.types import ArrayType, FloatType, IntType, TupleType


@numba.njit
def stacked_zeros_like(a, rows):
    return np.zeros((rows,) + a.shape, a.dtype)


@numba.njit
def stacked_zeros_of_length(n, rows):
    return np.zeros((rows, n))


@numba.njit
def stacked_zeros_of_shape(shape, rows):
    return np.zeros((rows,) + shape)


_LIKE = (np.zeros_like, np.empty_like)
_OF_SHAPE = (np.zeros, np.empty)


def stackable(op: Op) -> bool:
    """True for an allocation whose primal and tangents can share one block."""
    if not isinstance(op, ops.Call) or op.kwnames or len(op.positional) != 1:
        return False
    t = op.result.type
    if not (isinstance(t, ArrayType) and isinstance(t.dtype, FloatType) and t.layout == "C"
            and not t.readonly):
        return False
    arg = op.positional[0].type
    if any(op.callee is f for f in _LIKE):
        return isinstance(arg, ArrayType) and arg.dtype == t.dtype and arg.ndim == t.ndim
    if any(op.callee is f for f in _OF_SHAPE):
        return t.dtype.bits == 64 and (isinstance(arg, IntType) or _is_int_tuple(arg))
    return False


def _is_int_tuple(t) -> bool:
    return isinstance(t, TupleType) and all(isinstance(e, IntType) for e in t.elements)


def emit_stacked(b, op: Op, arg, width: int) -> tuple:
    """Emit the block and its rows: (primal, [tangent per direction]). `stackable(op)` holds, so
    a row (an int index into a C-ordered block) has the primal's type."""
    rows = b.const(1 + width)
    if any(op.callee is f for f in _LIKE):
        helper = stacked_zeros_like
    elif isinstance(arg.type, IntType):
        helper = stacked_zeros_of_length
    else:
        helper = stacked_zeros_of_shape
    block = b.call(helper, [arg, rows])
    views = [b.getitem(block, b.const(k), type=op.result.type) for k in range(1 + width)]
    return views[0], views[1:]
