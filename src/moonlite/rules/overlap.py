"""A run-time refusal of in-place operations whose operand overlaps their target.

numba computes `t op= v` on arrays entry by entry in order, in place, without NumPy's check for
overlapping memory: `x[1:] += x[:-1]` is a running sum in numba (each entry adds the entry
before it, already updated) where NumPy would add the old values. No mode of moonlite follows
that recurrence (a tangent or adjoint rule of `+=` treats the entries as independent), so
capture puts `refuse_overlap(t, v, message)` before every in-place operation whose operand may
view memory (`importer.ex_inplace_binop`): it raises `OverlappingWriteError` with capture's
message when the two arrays share memory without being one and the same view (`x += x` and
`x[i] += x[j]` are fine). The guard carries no derivative and writes nothing.
"""

from __future__ import annotations

from .. import _numba as nb
from ..errors import OverlappingWriteError
from ..ir import ops
from ..ir.traits import Trait
from .define import no_adjoint
from .operands import reads_nothing
from .registry import register


@nb.njit(cache=True)
def may_share_memory(a, b):
    """True if the memory spans of arrays a and b overlap (numpy's may_share_memory: a bounds
    test, so interleaved views of one buffer count as sharing)."""
    if a.size == 0 or b.size == 0:
        return False
    lo_a, hi_a = _span(a)
    lo_b, hi_b = _span(b)
    return lo_a < hi_b and lo_b < hi_a


@nb.njit(cache=True)
def _span(a):
    lo = a.ctypes.data
    hi = lo + a.itemsize
    for k in range(a.ndim):
        step = (a.shape[k] - 1) * a.strides[k]
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi


@nb.njit(cache=True)
def overlaps_elsewhere(target, value):
    """True if arrays `target` and `value` share memory without being the same view (the same
    start, shape and strides)."""
    same_view = target.ctypes.data == value.ctypes.data and target.shape == value.shape \
        and target.strides == value.strides
    return not same_view and may_share_memory(target, value)


def may_view_memory(value) -> bool:
    """False for an array that is surely fresh (the result of arithmetic, or of a call that
    allocates or works entry by entry), True for anything that may view another array's memory
    (arguments, indexing, attributes, phis, other calls)."""
    op = getattr(value, "op", None)
    if isinstance(op, (ops.BinaryOp, ops.UnaryOp)):
        return False
    if isinstance(op, (ops.Call, ops.MethodCall)):
        return not op.traits() & (Trait.ALLOCATES | Trait.ELEMENTWISE)
    return True


@nb.njit(cache=True)
def refuse_overlap(target, value, message):
    """Raise `OverlappingWriteError(message)` if `overlaps_elsewhere(target, value)`: the guard
    capture puts before an in-place operation (the message is capture's, naming the function
    and the line)."""
    if overlaps_elsewhere(target, value):
        raise OverlappingWriteError(message)
    return None


def _no_tangent(b, primals, tangents, kwargs):
    return None  # a check: it returns nothing


register(refuse_overlap, jvp=_no_tangent, adjoint=no_adjoint, reads=reads_nothing, keywords=(),
         traits=Trait.NONE)
