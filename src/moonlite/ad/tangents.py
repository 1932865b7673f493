"""Tangent types and zero tangents (after Mooncake's "Representing Gradients").

Each primal type has exactly one tangent type: float scalars are their own tangents, float arrays
have writable arrays of the same dtype and dimensions (address-identified: updated in place
alongside their primal), tuples have tuples of their elements' tangents (`none` for elements that
carry no tangent), and everything else (integers, bools, none, opaque values) has none.

Inside a pass a tangent may be the symbolic `ZERO`, so that `x * 2.0` does not become
`dx * 2.0 + x * 0.0`; `materialize` turns it into a real value where one is needed (a phi, a
return, a call). Array tangents are symbolic only for read-only arrays (constants), which nothing
can write to; every other array gets a real tangent array as soon as it exists, because any later
write through any alias must land in it.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .. import _numba as nb
from ..ir.builder import Builder
from ..ir.core import Value
from ..ir.types import (ArrayType, ComplexType, FloatType, IntType, OpaqueType, TupleType, Type,
                        is_float_record, none)
# below the passes, so that rules build zero tangents too; re-exported here for the passes
from ..rules.tangents import tangent_type, zero_tangent  # noqa: F401


class _Zero:
    """The symbolic zero tangent."""

    def __repr__(self) -> str:
        return "ZERO"


ZERO = _Zero()


def mentions_complex(t: Type) -> bool:
    """True for complex scalars, complex arrays and tuples holding either (never
    differentiated: forward mode and the reverse-mode API refuse them)."""
    if isinstance(t, TupleType):
        return any(mentions_complex(e) for e in t.elements)
    if isinstance(t, ArrayType):
        return isinstance(t.dtype, ComplexType)
    return isinstance(t, ComplexType)


def is_differentiable(t: Type) -> bool:
    return tangent_type(t) is not None


def hides_derivatives(t: Type) -> bool:
    """True for values moonlite gives no tangent although they can hold floats: namedtuples,
    records, jitclass and structref instances, lists, sets, dicts, optionals of those, and any
    numba type moonlite does not know to be free of floats. A derivative that flows into one of
    them would be lost, so AD passes refuse to make one from a value being differentiated.
    Records of scalar fields have tangents (records of the same type): they hide nothing."""
    if is_float_record(t):
        return False
    if not isinstance(t, OpaqueType):
        return isinstance(t, TupleType) and any(hides_derivatives(e) for e in t.elements)
    return _may_hold_float(t.numba_type)


# numba types that hold no float, whatever they are given (functions, classes, strings, ...)
_FLOAT_FREE = (nb.types.Dummy, nb.types.Callable, nb.types.Module, nb.types.NumberClass,
               nb.types.DType, nb.types.UnicodeType, nb.types.UnicodeCharSeq, nb.types.CharSeq,
               nb.types.Bytes, nb.types.RangeType, nb.types.RangeIteratorType,
               nb.types.ExceptionClass, nb.types.ExceptionInstance, nb.types.Omitted,
               nb.types.NoneType, nb.types.Boolean, nb.types.Integer, nb.types.EnumClass,
               nb.types.NPDatetime, nb.types.NPTimedelta, nb.types.SliceType,
               nb.types.ArrayCTypes, nb.types.ArrayFlags, nb.types.ClassType,
               nb.types.NamedTupleClass)


def _may_hold_float(t) -> bool:
    t = nb.types.unliteral(t)
    if isinstance(t, (nb.types.Float, nb.types.Complex)):
        return True
    if isinstance(t, _FLOAT_FREE):
        return False
    if isinstance(t, nb.types.EnumMember):
        return _may_hold_float(t.dtype)
    if isinstance(t, nb.types.Array):
        return _may_hold_float(t.dtype)
    if isinstance(t, nb.types.BaseTuple):
        return any(_may_hold_float(e) for e in t.types)
    if isinstance(t, nb.types.Record):
        return any(_may_hold_float(field.type) for field in t.fields.values())
    return True  # a container, an instance, an iterator, or a type moonlite does not know


def materialize(b: Builder, primal: Value, tangent) -> Value:
    """A real tangent value for `primal`: `tangent` itself, or a zero built at `b`."""
    if tangent is not ZERO and tangent is not None:
        return tangent
    return zero_tangent(b, primal)


def coerce_tangent(b: Builder, want: Type, value: Value) -> Optional[Value]:
    """`value` (a tangent a user's rule returned) as a value of the tangent type `want`: floats
    cast, arrays of the right rank and dtype made C- or Fortran-ordered as `want` says, tuples
    entry by entry; None if it cannot be one (wrong rank, dtype or structure)."""
    got = value.type
    if got == want:
        return value
    if isinstance(want, FloatType) and isinstance(got, (FloatType, IntType)):
        return b.cast(value, want)
    if isinstance(want, ArrayType) and isinstance(got, ArrayType):
        if got.ndim != want.ndim or got.dtype != want.dtype:
            return None
        if want.layout == "C":
            return b.call(np.ascontiguousarray, [value], type=want)
        if want.layout == "F":
            return b.call(np.asfortranarray, [value], type=want)
        return None
    if isinstance(want, TupleType) and isinstance(got, TupleType) \
            and len(want.elements) == len(got.elements):
        items = []
        for k, w in enumerate(want.elements):
            item = b.tuple_getitem(value, k)
            items.append(b.const(None, none) if w == none else coerce_tangent(b, w, item))
            if items[-1] is None:
                return None
        return b.build_tuple(items)
    if want == none:
        return b.const(None, none)
    return None


@nb.njit(cache=True)
def converted_like(t, like):
    """`t`'s values in `like`'s dtype: the tangent of an array numba promotes (`1.0 + x * x` on a
    float32 `x` is a float64 array in numba, in NumPy 2 a float32 one) where a rule computed it
    in its operand's dtype."""
    return t.astype(like.dtype)


@nb.njit(cache=True)
def broadcast_tangent(t, like):
    """`t` (an array of `like`'s rank) broadcast to `like`'s shape, C-ordered: itself when
    its shape is `like`'s."""
    if t.shape == like.shape:
        return np.ascontiguousarray(t)
    out = np.empty(like.shape, t.dtype)
    out[...] = t
    return out


@nb.njit(cache=True)
def broadcast_up(t, like):
    """`t` (a number, or an array of lower rank) broadcast to `like`'s shape and dtype."""
    out = np.empty(like.shape, like.dtype)
    out[...] = t
    return out


def broadcast_to_result(b: Builder, tangent: Value, new_result: Value) -> Value:
    """The tangent an elementwise rule computed from some of its operands' tangents (`x + c`
    with only c's: dc, of c's shape) as a tangent of the result's shape: numba broadcasts the
    operands, and a reduction of the result sums over the broadcast shape (jacfwd of
    `np.sum(A + b)` in b counted each entry of b once, not once per row of A)."""
    want = new_result.type
    if tangent.type.is_scalar or tangent.type.ndim < want.ndim:
        return b.call(broadcast_up, [tangent, new_result],
                      type=ArrayType(want.dtype, want.ndim, "C"))
    return b.call(broadcast_tangent, [tangent, new_result],
                  type=ArrayType(tangent.type.dtype, tangent.type.ndim, "C"))


def in_dtype_of(b: Builder, tangent: Value, primal: Optional[Value]) -> Value:
    """`tangent` as an array of `primal`'s float dtype (itself when they agree, or when there is
    no primal value to take the dtype from)."""
    if primal is None:
        return tangent
    want, got = primal.type, tangent.type
    if not (isinstance(want, ArrayType) and isinstance(got, ArrayType)) \
            or want.dtype == got.dtype or not isinstance(want.dtype, FloatType):
        return tangent
    return b.call(converted_like, [tangent, primal], type=ArrayType(want.dtype, got.ndim, "C"))
