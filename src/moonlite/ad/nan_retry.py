"""A derivative with a nan is computed again, with every adjoint product zero-guarded.

Reverse mode multiplies an adjoint by a partial derivative at every op. Most partials are
finite wherever the primals are (a product's partials are its operands, tanh's is 1 - tanh**2),
so they multiply plainly; the others multiply strongly (`rules/strong_zeros.py`: a zero factor
gives exactly zero, even against inf). After an overflow the first kind is not safe either: a
kernel whose `x` overflows to -inf but reaches the result only through `tanh(min(x, 0))` gives
the adjoint of `x` exactly 0 (tanh is flat there), and the products that made `x` then give
`0 * inf = nan` where the derivative is finite (fuzz, wide profile, seed 20221). Guarding every
product fixes that but costs up to 2x on loop kernels (the reprojection residual's gradient:
6.1x -> 13x the primal; least squares 3.0x -> 3.3x).

So the API runs the plain rule first, and only when a gradient it returns holds a nan runs the
strong-zeros variant (`reverse_transform(..., strong_zeros=True)`, compiled at that moment).
The two agree wherever the plain one has no nan: the variants differ only in products with a
zero factor and an infinite or nan one, whose plain nan reaches the gradient unless a later
select drops it, and then the strong zero is dropped as well.

- `grad`, `value_and_grad` and `hessian` dispatchers: the compiled function notes a nan in its
  result through a ctypes callback into Python (run only when there is one: a per-thread
  count), and the dispatcher's Python call compares the count before and after. Inside other
  njit code numba calls another dispatcher instead (`api_drivers.py: njit_variant`): the plain
  derivative, then, if it holds a nan, the strong-zeros one, both compiled into it.
- `jacrev` and `hvp` dispatchers do the same; `vjp`'s pullback tests its gradients in its
  compiled call from Python (`api_vjp.py`), and is not rerun when called inside njit code.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from .. import _numba as nb
from ..ir import ops
from ..ir.types import ArrayType, FloatType, TupleType
from ..rules.define import defzero


class _NanNotes(threading.local):
    def __init__(self):
        self.count = 0  # nans found by derived code in this thread: grows, never reset


NAN_NOTES = _NanNotes()


def _note() -> None:
    NAN_NOTES.count += 1


# the callback compiled code calls: ctypes takes the GIL for it (a nogil caller is fine); kept
# in a module global so it lives as long as the process. Compiled code calls it by a symbol
# name that each process binds to its own callback (a baked-in address would make the code
# impossible to cache on disk: numba refuses code with "dynamic globals").
_NOTE = ctypes.CFUNCTYPE(None)(_note)
_NOTE_SYMBOL = "moonlite_note_nan_1"
nb.llvm_binding.add_symbol(_NOTE_SYMBOL, ctypes.cast(_NOTE, ctypes.c_void_p).value)


@nb.intrinsic
def _note_nan(typingctx):
    def codegen(context, builder, signature, args):
        fnty = nb.llvm_ir.FunctionType(nb.llvm_ir.VoidType(), [])
        fn = nb.cgutils.get_or_insert_function(builder.module, fnty, _NOTE_SYMBOL)
        builder.call(fn, [])
        return context.get_dummy_value()
    return nb.types.void(), codegen


@nb.njit(nogil=True, cache=True)
def note_nan_float(x):
    """Tell Python (`NAN_NOTES`) if `x` is nan."""
    if x != x:
        _note_nan()
    return x != x


@nb.njit(nogil=True, cache=True)
def note_nan_array(a):
    """Tell Python (`NAN_NOTES`) if an entry of `a` is nan (no early exit: the loop vectorises,
    one pass over a gradient the rule has just written)."""
    bad = False
    for v in np.ravel(a):
        bad |= v != v
    if bad:
        _note_nan()
    return bad


# nothing to differentiate when an AD pass meets them (jacfwd of a grad dispatcher, say)
defzero(note_nan_float)
defzero(note_nan_array)


def emit_nan_notes(b, value):
    """At the builder's position: note a nan anywhere in `value` (a float, a float array or a
    tuple of them; other entries are skipped). Returns the bool value that says whether one was
    found, or None if `value` holds no floats."""
    t = value.type
    if isinstance(t, FloatType):
        return b.call(note_nan_float, [value])
    if isinstance(t, ArrayType) and isinstance(t.dtype, FloatType):
        return b.call(note_nan_array, [value])
    found = None
    if isinstance(t, TupleType):
        for k in range(len(t.elements)):
            bad = emit_nan_notes(b, b.tuple_getitem(value, k))
            if bad is not None:
                found = bad if found is None else b.binary(ops.BitOr, found, bad)
    return found


def has_nan(value) -> bool:
    """True if `value` (a number, an array, None or a tuple of them) holds a nan: the Python-side
    test of `vjp`, `jacrev` and `hvp`."""
    if value is None:
        return False
    if isinstance(value, tuple):
        return any(has_nan(v) for v in value)
    arr = np.asarray(value)
    return arr.dtype.kind in "fc" and bool(np.isnan(arr).any())
