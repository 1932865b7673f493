"""Records with float fields (entries of structured arrays): a zero tangent record, the helpers
reverse mode sends a field's adjoint back with, and the views and setters fields are written
with.

A record's tangent is a record of the same type; a structured array's is a structured array of
the same dtype (`np.zeros_like`). numba passes a record around as a pointer to its bytes, which
another value (an array, or a NumPy scalar) owns, so derived code never makes one that outlives
its owner: a zero record lives in the frame of the function that needs it (`zero_record_like`),
and reverse mode adds a field's adjoint into the shadow array's entry (`field_adder`). The
shadow of a record argument is a structured array of one entry (`record_holder`): it is also
the gradient reverse mode returns for it.

Writes go through views: `p['a']` (`field_view`) is a float array viewing one field of every
entry, and capture writes `p[i]['a'] = v` as `field_view('a')(p)[i] = v`, an ordinary array
write that every mode already saves, restores and differentiates. A record that is not an
entry read from a structured array in the same function (an argument, a record chosen by a
branch) is written by `field_setter`.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _numba as nb
from ..ir.traits import ALLOCATES, AXES_VIEW, VIEW
from ..ir import ops
from ..ir.types import ArrayType, from_numba, none
from .define import (RuleNotApplicable, defrule, defzero, linear_call, njit_from_source,
                     no_adjoint, positional_only)
from .operands import reads_nothing
from .registry import register


@nb.intrinsic
def zero_record_like(typingctx, record):
    """A record of `record`'s type with every field zero, held in the calling function's
    frame (one slot per call site, zeroed at each call: tangent records are only read)."""
    if not isinstance(record, nb.types.Record):
        return None

    def codegen(context, builder, signature, args):
        data_type = context.get_data_type(record)
        slot = nb.cgutils.alloca_once(builder, data_type)
        builder.store(nb.cgutils.get_null_value(data_type), slot)
        return slot

    return record(record), codegen


def _zero_record_jvp(b, primals, tangents, kwargs):
    return None  # a constant: its tangent is zero


defrule(zero_record_like, _zero_record_jvp)


def record_holder(record):
    """A zero structured array of one entry of `record`'s dtype (njit code only)."""
    raise NotImplementedError("record_holder is called from njit code only")


@nb.overload(record_holder)
def _record_holder_impl(record):
    if not isinstance(record, nb.types.Record):
        return None
    dtype = nb.as_dtype(record)

    def impl(record):
        return np.zeros(1, dtype)

    return impl


@nb.njit(cache=True)
def records_gathered_like(p, index):
    """A new structured array shaped like `p[index]` (an index array or a mask), its entries
    unset: capture fills it field by field (`capture/record_fields.py: gather_records`), so
    every mode follows the gather as float-array gathers. A fresh allocation: zero tangent,
    no adjoint (numba allocates `p[index]` and discards its values)."""
    return np.empty_like(p[index])


defzero(records_gathered_like)
register(records_gathered_like, adjoint=no_adjoint, keywords=(), traits=ALLOCATES)


@nb.njit(cache=True)
def records_empty_like(p, n):
    """A new 1-D structured array of `n` entries of `p`'s dtype, unset: capture fills it by
    whole-record copies (`capture/record_fields.py: join_records`). A fresh allocation, as
    `records_gathered_like` is."""
    return np.empty(n, p.dtype)


defzero(records_empty_like)
register(records_empty_like, adjoint=no_adjoint, keywords=(), traits=ALLOCATES)


@nb.njit(cache=True)
def record_places(p, first):
    """The places `first, first + 1, ...` of `p`'s entries, shaped like `p` (int64, C order):
    capture calls a numpy function that only moves entries (`np.roll`, `np.take`, ...) on
    these in place of a structured array, then gathers the records from the places it returns
    (`capture/record_fields.py: move_records`). Ints: no tangent, no adjoint."""
    return np.arange(first, first + p.size).reshape(p.shape)


defzero(record_places)
register(record_places, adjoint=no_adjoint, keywords=(), traits=ALLOCATES)


def holder_type(record_type) -> ArrayType:
    """The type of `record_holder(r)` for a record of moonlite type `record_type`."""
    return ArrayType(record_type, 1, "C")


defrule(record_holder, _zero_record_jvp)  # a fresh zero array (the forward pass makes its own)


@functools.lru_cache(maxsize=None)
def field_adder(name: str):
    """The njit function `add(record, value)` doing `record[name] += value` (in place: the
    record is an entry of a shadow array). Its forward rule does the same to the tangents, so
    forward mode over a gradient (Hessians) differentiates the pullback's field updates."""
    adder = njit_from_source(f"def add_to_field(record, value):\n    record[{name!r}] += value\n"
                             "    return None\n", "add_to_field", f"field adder {name!r}")
    defrule(adder, _adder_jvp(adder))
    return adder


@functools.lru_cache(maxsize=None)
def records_adder(record_type):
    """The njit function `add(shadow, cotangent)` doing `shadow[f] += cotangent[f]` for every
    float field `f` of two structured arrays of numba record type `record_type` (nested
    records walked, array fields whole): what `shadow += cotangent` means for structured
    arrays, which numpy and numba do not add. Reverse mode seeds the shadow of a returned
    structured array with it. Linear: its forward rule does the same to the tangents."""
    lines = [f"    view = shadow{path}\n    view += cotangent{path}"  # numba: no field setitem
             for path in _float_field_paths(record_type)]
    adder = njit_from_source("def add_records(shadow, cotangent):\n" + "\n".join(lines)
                             + "\n    return None\n", "add_records",
                             f"records adder {record_type}")
    defrule(adder, _adder_jvp(adder))
    return adder


def _float_field_paths(record_type, prefix: str = "") -> list:
    """`['a']`, `['inner']['b']`, ...: the index paths of the float fields of a record type."""
    paths = []
    for name in record_type.fields:
        t = record_type.typeof(name)
        path = f"{prefix}[{name!r}]"
        if isinstance(t, nb.types.Record):
            paths += _float_field_paths(t, path)
        elif isinstance(getattr(t, "dtype", t), nb.types.Float):
            paths.append(path)
    return paths


def _adder_jvp(adder):
    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 2)
        drecord, dvalue = tangents
        if dvalue is None:
            return None
        if drecord is None:
            raise RuleNotApplicable("a field update of a record that carries no tangent")
        b.call(adder, [drecord, dvalue], type=none)
        return None

    return rule


def _same_value(context, builder, signature, args):
    """The codegen of intrinsics that only change an array's type (the data models are one)."""
    return nb.impl_ret_borrowed(context, builder, signature.return_type, args[0])


@nb.intrinsic
def as_aligned(typingctx, view):
    """`view` itself, typed aligned. numba types a field of a structured array whose dtype was
    not built with `align=True` as an unaligned array, and so are its copies and zeros_like;
    numba then fails to lower a function returning either such an array or a fresh one (an
    aligned one: `np.ascontiguousarray(g)` on one path, `np.zeros(...)` on another). Used for
    fields that are aligned in every array numpy allocates (`field_is_aligned`)."""
    if not isinstance(view, nb.types.Array):
        return None
    result = nb.types.Array(view.dtype, view.ndim, view.layout, readonly=not view.mutable)
    return result(view), _same_value


def _one_entry_array(context, builder, record, array_type, pointer, owner=None):
    """The array struct of one entry of `record`'s type at `pointer`, held alive by the array
    `owner` (its meminfo) when given."""
    array = context.make_array(array_type)(context, builder)
    intp = context.get_value_type(nb.types.intp)
    size = intp(record.size)
    meminfo = None if owner is None else owner.meminfo
    nb.populate_array(array, data=builder.bitcast(pointer, array.data.type),
                      shape=nb.cgutils.pack_array(builder, [intp(1)]),
                      strides=nb.cgutils.pack_array(builder, [size]),
                      itemsize=size, meminfo=meminfo)
    return nb.impl_ret_borrowed(context, builder, array_type, array._getvalue())


@nb.intrinsic
def _as_one_entry_array(typingctx, record):
    """The record `record` as a structured array of one entry viewing its bytes (numba passes
    a record as a pointer to them; the caller that owns them outlives the call)."""
    if not isinstance(record, nb.types.Record):
        return None

    def codegen(context, builder, signature, args):
        return _one_entry_array(context, builder, record, signature.return_type, args[0])

    return nb.types.Array(record, 1, "C")(record), codegen


@nb.intrinsic
def _as_entry_array_of(typingctx, record, owner):
    """As `_as_one_entry_array` for a record read out of the array `owner`: the view holds
    `owner` alive as numpy's views do (a record alone holds nothing: once `owner`'s last
    use had passed, a view of its entry would point into freed memory)."""
    if not (isinstance(record, nb.types.Record) and isinstance(owner, nb.types.Array)):
        return None

    def codegen(context, builder, signature, args):
        owner_array = context.make_array(owner)(context, builder, args[1])
        return _one_entry_array(context, builder, record, signature.return_type, args[0],
                                owner_array)

    return nb.types.Array(record, 1, "C")(record, owner), codegen


record_view = njit_from_source("def record_view(r):\n    return as_one_entry_array(r)\n",
                               "record_view", "record view",
                               as_one_entry_array=_as_one_entry_array)
record_view.__doc__ = """`record_view(r)`: a structured array of one entry viewing the record `r`.
Capture reads a record argument `r` as `record_view(r)[0]`, a record read from an array like
any other, so every mode reads and writes its fields as it does entries' (writes through field
views, saved and restored by reverse mode). Linear and a view (`AXES_VIEW`): a tangent record's
view is its tangent; reverse mode makes the record argument's one-entry shadow its shadow."""
register(record_view, jvp=linear_call(record_view), adjoint=no_adjoint, reads=reads_nothing,
         keywords=(), traits=AXES_VIEW | VIEW)

entry_view = njit_from_source("def entry_view(r, owner):\n"
                              "    return as_entry_array_of(r, owner)\n",
                              "entry_view", "entry view", as_entry_array_of=_as_entry_array_of)
entry_view.__doc__ = """`entry_view(p[i], p)`: `record_view` of an entry of `p`, holding `p`
alive. Inlining a helper that takes a record turns its `record_view(r)` into this when the
caller passes an entry (`ad/inline.py`)."""


def _entry_view_jvp(b, primals, tangents, kwargs):
    positional_only(kwargs, primals, 2)
    drecord, downer = tangents
    if drecord is None:
        return None
    if downer is None:  # a tangent record of the caller's frame (zero_record_like)
        return b.call(record_view, [drecord], type=ArrayType(primals[0].type, 1, "C"))
    return b.call(entry_view, [drecord, downer], type=ArrayType(primals[0].type, 1, "C"))


register(entry_view, jvp=_entry_view_jvp, adjoint=no_adjoint, reads=reads_nothing,
         keywords=(), traits=AXES_VIEW | VIEW)


def one_entry_view(b, record):
    """`record_view(record)`, or `entry_view(p[i], p)` for a record read as `p[i]`."""
    source = record_source(record)
    array_type = ArrayType(record.type, 1, "C")
    if source is None:
        return b.call(record_view, [record], type=array_type)
    return b.call(entry_view, [record, source.value], type=array_type)


def field_is_aligned(record_type, name: str) -> bool:
    """True if field `name` of the numba record type sits at a multiple of its alignment in
    every entry: its offset and the record's size are both multiples of it."""
    offset = record_type.offset(name)
    alignment = np.dtype(nb.as_dtype(record_type.typeof(name))).alignment
    return offset % alignment == 0 and record_type.size % alignment == 0


def field_view(name: str, aligned: bool = True):
    """The njit function `view(p)` returning `p[name]`: a float array viewing field `name` of
    every entry of the structured array `p` (numba's own view, layout A; typed aligned when
    `aligned`, see `as_aligned`). It is linear and a view of its argument, as `np.transpose`
    is: a tangent's field view is its tangent, and reverse mode makes the same view of the
    argument's shadow its shadow (`AXES_VIEW`), so writes through it reach the gradient."""
    return _field_view(name, aligned)


@functools.lru_cache(maxsize=None)
def _field_view(name: str, aligned: bool):
    read = f"as_aligned(p[{name!r}])" if aligned else f"p[{name!r}]"
    view = njit_from_source(f"def field_view(p):\n    return {read}\n", "field_view",
                             f"field view {name!r}", as_aligned=as_aligned)
    register(view, jvp=linear_call(view), adjoint=no_adjoint, reads=reads_nothing,
             keywords=(), traits=AXES_VIEW | VIEW)
    return view


def field_view_of(record_type, name: str):
    """The field view for field `name` of records of numba type `record_type`."""
    return field_view(name, field_is_aligned(record_type, name))


@nb.intrinsic
def as_plain_array(typingctx, nested):
    """A field holding an array (numba's NestedArray, whose shape is part of its type) typed as
    an ordinary C-contiguous array viewing the same bytes: the data models are one, and every
    pass of moonlite knows arrays. Typed aligned as numba types the NestedArray itself, also in
    records whose dtype is not aligned."""
    if not isinstance(nested, nb.types.NestedArray):
        return None
    result = nb.types.Array(nested.dtype, nested.ndim, "C")
    return result(nested), _same_value


@functools.lru_cache(maxsize=None)
def array_field(name: str):
    """The njit function `read(r)` returning field `name` of the record `r` when that field
    holds an array (`('pos', 'f8', (3,))`): an ordinary array viewing the record's bytes. Like
    `field_view`, it is linear and a view of its argument: a tangent record's field is its
    tangent, and reverse mode makes the same view of the record's shadow its shadow, so reads
    and writes through it are ordinary array reads and writes in every mode."""
    read = njit_from_source(f"def array_field(r):\n    return as_plain_array(r[{name!r}])\n",
                            "array_field", f"array field {name!r}",
                            as_plain_array=as_plain_array)
    register(read, jvp=linear_call(read), adjoint=no_adjoint, reads=reads_nothing,
             keywords=(), traits=AXES_VIEW | VIEW)
    return read


def array_field_of(record_type, name: str):
    """The reader of the array field `name` of records of numba type `record_type`, and the
    moonlite type it returns."""
    nested = record_type.typeof(name)
    return array_field(name), ArrayType(from_numba(nested.dtype), nested.ndim, "C")


def is_array_field(record_type, name: str) -> bool:
    return isinstance(record_type.typeof(name), nb.types.NestedArray)


@functools.lru_cache(maxsize=None)
def field_setter(name: str):
    """The njit function `set(record, value)` doing `record[name] = value`, for records that
    are not an entry read from a structured array in the same function (capture writes those
    through `field_view`). Forward mode does the same to the tangent record. Reverse mode
    inlines every call first, so it sees most records as entries again and writes them through
    views (`ad/inline.py`); for the rest its adjoint refuses a derivative it cannot follow."""
    setter = njit_from_source(f"def set_field(record, value):\n    record[{name!r}] = value\n"
                              "    return None\n", "set_field", f"field setter {name!r}")
    register(setter, jvp=_setter_jvp(setter), adjoint=_setter_adjoint, reads=reads_nothing,
             keywords=())
    _SET_FIELD[setter] = name
    return setter


def record_source(record):
    """The op `p[i]` reading the record `record` out of a structured array, or None."""
    op = getattr(record, "op", None)
    if isinstance(op, ops.GetItem) and isinstance(op.value.type, ArrayType):
        return op
    return None


def _view_of_entry_field(b, record, name: str):
    """(`field_view(name)(p)`, the index i) for a record read as `p[i]`, or None."""
    source = record_source(record)
    if source is None:
        return None
    array = source.value
    record_type = record.type.numba_type
    view_type = from_numba(nb.types.Array(record_type.typeof(name), array.type.ndim, "A",
                                          readonly=array.type.readonly))
    return b.call(field_view_of(record_type, name), [array], type=view_type), source.index


def read_nested_record_through_view(b, record, name: str, type):
    """`field_view(name)(p)[i]` for field `name` of a record read as `p[i]` when that field is
    itself a record: the entry of the structured array viewing field `name` of every entry, a
    record read from an array like any other (so reverse mode follows its fields), or None
    when the record is not read from an array here."""
    found = _view_of_entry_field(b, record, name)
    return None if found is None else b.getitem(*found, type)


def write_field_through_view(b, record, name: str, value) -> bool:
    """Emit `field_view(name)(p)[i] = value` for a record read as `p[i]` (True), else emit
    nothing (False)."""
    found = _view_of_entry_field(b, record, name)
    if found is not None:
        b.setitem(*found, value)
    return found is not None


_SET_FIELD: dict = {}  # field_setter functions -> the field they set


def field_set_by(callee):
    """The field `callee` sets if it is a `field_setter` function, else None."""
    try:
        return _SET_FIELD.get(callee)
    except TypeError:  # an unhashable callee
        return None


def _setter_jvp(setter):
    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 2)
        drecord, dvalue = tangents
        if drecord is None:
            if dvalue is None:
                return None
            raise RuleNotApplicable("a field write into a record that carries no tangent")
        if dvalue is None and not primals[1].type.is_float:
            return None  # int and bool fields of a tangent record are unused
        if dvalue is None:  # a constant written: the field's tangent becomes zero
            dvalue = b.const(0.0, primals[1].type)
        b.call(setter, [drecord, dvalue], type=none)
        return None

    return rule


def _setter_adjoint(rv, op) -> None:
    record, value = op.positional
    if record in rv.varied or value in rv.varied:
        raise rv.unsupported(op, "writing a field of a record that is not read from a "
                             f"structured array here ({record.type}) in reverse mode",
                             "write fields as p[i]['a'] = v of a structured array p")
