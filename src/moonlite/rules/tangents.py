"""Tangent types and zero tangents: what rules and passes both need.

They live here, below the passes (`ad/`), so that rules build zero tangents without importing
`ad/`; `ad/tangents.py` re-exports them next to the pass-only machinery (symbolic zeros,
coercion of users' tangents). See there for the conventions.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..ir.builder import Builder
from ..ir.core import Value
from ..ir.types import ArrayType, FloatType, TupleType, Type, is_float_record, none
from .records import zero_record_like


def tangent_type(t: Type) -> Optional[Type]:
    """The tangent type of `t`, or None if values of type `t` carry no tangent."""
    if isinstance(t, FloatType):
        return t
    if isinstance(t, ArrayType) and (isinstance(t.dtype, FloatType) or is_float_record(t.dtype)):
        return ArrayType(t.dtype, t.ndim, t.layout, readonly=False)
    if is_float_record(t):
        return t  # a record of the same type (records.py)
    if isinstance(t, TupleType):
        elements = tuple(tangent_type(e) for e in t.elements)
        if all(e is None for e in elements):
            return None
        return TupleType(tuple(none if e is None else e for e in elements))
    return None


def zero_tangent(b: Builder, primal: Value) -> Value:
    """A fresh zero tangent for the value `primal` (emitted at `b`)."""
    t = primal.type
    ttype = tangent_type(t)
    if ttype is None:
        return b.const(None, none)
    if isinstance(t, FloatType):
        return b.const(0.0, t)
    if isinstance(t, ArrayType):
        return b.call(np.zeros_like, [primal], type=ttype)
    if is_float_record(t):
        return b.call(zero_record_like, [primal], type=ttype)
    items = []
    for k, element_type in enumerate(t.elements):
        if tangent_type(element_type) is None:
            items.append(b.const(None, none))
        else:
            items.append(zero_tangent(b, b.tuple_getitem(primal, k)))
    return b.build_tuple(items)
