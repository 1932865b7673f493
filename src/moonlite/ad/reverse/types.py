"""The types the reverse pass reasons about: which values carry adjoints, and of what type."""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.builder import Builder
from ...ir.core import Value
from ...ir.types import ArrayType, TupleType, is_float_record, is_record_array, none
from ...rules.records import holder_type


from ...rules.registry import has_adjoint, is_float, is_float_array  # noqa: E402,F401 (shared)


def grad_type(t):
    if is_float(t):
        return t
    if is_float_array(t) or is_record_array(t):
        return shadow_type(t)
    if is_float_record(t):
        return holder_type(t)  # a structured array of one entry (rules/records.py)
    if isinstance(t, TupleType) and has_adjoint(t):
        return TupleType(tuple(grad_type(e) for e in t.elements))
    return none


@dataclass(frozen=True)
class Entry:
    """Entry `index` of the tuple `value`: what a tuple's adjoints and shadows are kept per
    (tuples are immutable, so an entry's adjoint is a float local or a shadow array like any
    other value's)."""

    value: Value
    index: int

    @property
    def type(self):
        return self.value.type.elements[self.index]


def entry_at(key, path: tuple):
    """The key of the entry of the tuple `key` at `path` (one index per level of nesting):
    `t[0][1]` of a tuple of tuples is Entry(Entry(t, 0), 1)."""
    for index in path:
        key = Entry(key, index)
    return key


def path_of(key) -> tuple:
    """The indices leading from a tuple value to its entry `key` (() for the value itself)."""
    path = ()
    while isinstance(key, Entry):
        key, path = key.value, (key.index, *path)
    return path


def leaves(key):
    """(key, type) of each entry of the tuple `key` that is not itself a tuple, at any depth
    of nesting: a nested tuple's adjoints and shadows are kept per leaf, as a flat one's are
    per entry."""
    return [(entry_at(key, path), t) for path, t in leaf_paths(key.type)]


def leaf_paths(t, path: tuple = ()) -> list:
    """(path, type) of each entry of the tuple type `t` that is not a tuple, at any depth."""
    return [leaf for k, item in enumerate(t.elements)
            for leaf in (leaf_paths(item, (*path, k)) if isinstance(item, TupleType)
                         else [((*path, k), item)])]


def leaf_types(t) -> list:
    """The types of the entries of the tuple type `t` that are not tuples, at any depth."""
    return [item for _, item in leaf_paths(t)]


def value_at(b: Builder, tup: Value, path: tuple) -> Value:
    """The primal entry of `tup` at `path`, read with one tuple_getitem per level."""
    for index in path:
        tup = b.tuple_getitem(tup, index)
    return tup


def unit_tangent(b: Builder, primal: Value) -> Value:
    """The unit tangent rv_elementwise feeds an elementwise forward rule: a scalar 1 of the
    operand's float type, also for arrays (the rule's output broadcasts to the result's shape).
    A ones array cost an allocation and a multiplication per adjoint, and, in forward over
    reverse, a zero tangent array and more multiplications."""
    t = primal.type.dtype if isinstance(primal.type, ArrayType) else primal.type
    if not is_float(t):
        return b.const(1.0)
    if isinstance(primal.type, ArrayType) and t.bits != 64:
        # array expressions cannot hold a float32 literal (see rules/numpy_rules._const)
        return b.cast(b.const(1.0), t)
    return b.const(1.0, t)


def has_shadow(t) -> bool:
    """Values whose adjoints live in a shadow array beside them: float arrays and structured
    arrays with float fields."""
    return is_float_array(t) or is_record_array(t)


def shadow_type(t: ArrayType) -> ArrayType:
    """The type of `np.zeros_like(x)` for an array x of type t, as numba makes it: Fortran
    order for Fortran-ordered x, C order otherwise (a strided or transposed view included)."""
    return ArrayType(t.dtype, t.ndim, "F" if t.layout == "F" else "C", False)


def writable(t: ArrayType) -> ArrayType:
    return ArrayType(t.dtype, t.ndim, t.layout, False)
