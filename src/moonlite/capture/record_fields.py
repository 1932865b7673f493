"""Writing fields of records, and whole fields of structured arrays (issue #20).

`p['a']` of a structured array `p` is numba's float array viewing field `a` of every entry;
capture reads it as a call of `field_view('a')` (`rules/records.py`), a view every mode knows.
A field write `p[i]['a'] = v` (also `p[i].a = v`, `r = p[i]; r.a += v`) becomes
`field_view('a')(p)[i] = v`: an array write, which forward mode repeats on the tangent and
reverse mode saves, restores and sends back like any other. A record that is not an entry read
from an array in the same function (a record argument of a helper, a record chosen by a
branch) is written by `field_setter('a')(r, v)`. A field of a jitclass instance,
`obj.a = v`, is written by `field_store(Box, 'a')(obj, v)` (`rules/jitclasses.py`).

A mixin of the importer (`importer.Importer`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .. import _numba as nb
from . import rewrites
from ..ir import ops
from ..ir.core import Value
from ..ir.types import (ArrayType, BoolType, IntType, OpaqueType, TupleType, from_numba,
                        int64, is_record, none)
from ..ir.typing import TypingFailure, call_result_type
from ..rules.jitclasses import field_store, fields_of, is_numba_instance_type
from ..rules.records import (array_field_of, field_setter, field_view_of, is_array_field,
                             one_entry_view, read_nested_record_through_view, record_places,
                             records_empty_like, records_gathered_like, write_field_through_view)

nbt = nb.types


class RecordFields:
    def field_of_records(self, array: Value, name: str, target) -> Value:
        """`p['a']` of a structured array: the view of field `a` of every entry."""
        view = field_view_of(array.type.dtype.numba_type, name)
        return self.b.call(view, [array], type=self.type_of(target))

    def is_record_array_var(self, var) -> bool:
        t = self.typemap.get(var.name)
        return isinstance(t, nbt.Array) and isinstance(t.dtype, nbt.Record)

    def on_setattr(self, stmt) -> None:
        """`r.a = v`: a field write when `r` is a record, a jitclass or structref instance
        (other attribute writes are refused)."""
        target_type = self.typemap.get(stmt.target.name)
        if is_numba_instance_type(target_type) and stmt.attr in fields_of(target_type):
            return self.write_instance_field(stmt, target_type)
        if not self._is_record(stmt.target):
            return self._unsupported_stmt(stmt)
        self.write_record_field(self.value(stmt.target), stmt.attr, self.value(stmt.value))

    def write_instance_field(self, stmt, instance_type) -> None:
        """`obj.a = v` as a call of `field_store(Box, 'a')(obj, v)`, v converted to the
        field's type as numba does (the inliner makes fields locals: `ad/instance_fields.py`)."""
        value = self._coerce(self.value(stmt.value),
                             from_numba(fields_of(instance_type)[stmt.attr]))
        self.b.call(field_store(instance_type, stmt.attr), [self.value(stmt.target), value],
                    type=none)

    def read_record_field(self, record: Value, name: str, target) -> Value:
        """`r.a` or `r['a']`: a field read, or for a field holding an array the ordinary array
        viewing it (`array_field`)."""
        record_type = record.type.numba_type
        if isinstance(record_type.typeof(name), nbt.Record):  # a record nested in a record
            nested = read_nested_record_through_view(self.b, record, name, self.type_of(target))
            if nested is not None:
                return nested
        if not is_array_field(record_type, name):
            return self.b.getattr(record, name, self.type_of(target))
        read, array_type = array_field_of(record_type, name)
        return self.b.call(read, [record], type=array_type)

    def copy_record_into(self, target: Value, index: Value, record: Value) -> bool:
        """`p[i] = r` (a whole record into an entry of a structured array of its dtype): its
        fields read, then written into the entry one by one as `p[i].a = r.a` is (nested
        records field by field, array fields as arrays), so every mode follows the copy.
        False (nothing emitted) for any other assignment."""
        if not (isinstance(target.type, ArrayType) and _record_type(target.type.dtype)
                and _record_type(record.type) == _record_type(target.type.dtype)
                and _whole_entry_index(index.type)):
            return False
        leaves = self._record_leaves(record, ())
        entry = self.b.getitem(target, index, type=record.type)
        for path, value in leaves:
            self._write_leaf(entry, path, value)
        return True

    def copy_records_into(self, target: Value, index: Value, value: Value) -> bool:
        """`g[0] = g[1]` (rows of a 2-D structured array), `p[1:] = p[:-1]`, `p[:] = q`,
        `p[2:] = r` (a record broadcast): every field copied by its own view,
        `field_view('a')(p)[index] = field_view('a')(q)` (or `= r.a`), an ordinary array write
        that every mode follows. Fields occupy disjoint bytes, so copying them one by one is
        numba's copy of whole records, overlap included (each view's write copies its source
        first where they overlap, as numba does for the whole). False (nothing emitted) unless
        `target` is a structured array and `value` one or a record of its dtype."""
        record_type = _record_type(target.type.dtype) if isinstance(target.type, ArrayType) \
            else None
        if record_type is None:
            return False
        value_record = _record_type(value.type.dtype) if isinstance(value.type, ArrayType) \
            else _record_type(value.type)
        if value_record != record_type:
            return False
        if self.copy_record_into(target, index, value):
            return True
        self._copy_fields(target, index, value)
        return True

    def record_array_method(self, name: str, array: Value, result_type) -> Value:
        """`p.copy()`, `p.ravel()`, `p.flatten()` (and `np.copy`, `np.ravel`) of a structured
        array, as numba computes them: a copy (`copy_record_array`), except `ravel` of an array
        typed C-contiguous, which numba makes a view (`np.reshape(p, (p.size,))`, a view every
        mode follows for structured arrays too); `ravel` and `flatten` of other arrays copy,
        then reshape the C-contiguous copy."""
        if name == "ravel":
            view = rewrites.contiguous_view(self.b, np.ravel, array, result_type)
            if view is not None:
                return view
        if name == "copy":
            return self.copy_record_array(array, result_type)
        t = array.type
        copy = self.copy_record_array(array, ArrayType(t.dtype, t.ndim, "C", False))
        size = self.b.getattr(copy, "size", int64)
        return self.b.call(np.reshape, [copy, self.b.build_tuple([size])], None, result_type)

    def copy_record_array(self, array: Value, result_type) -> Value:
        """`p.copy()`, `np.copy(p)` of a structured array: a new C-contiguous array of its dtype
        (`np.empty_like`, a fresh allocation to every mode) with every field copied
        into it through views, as above. `np.empty_like` keeps an F array's layout, as numba's
        `np.copy` does; where the copy is typed C (`p.copy()`, `ravel` of a transpose) and `p`
        is not, the copy is allocated C (`records_empty_like`)."""
        if result_type.layout == "C" and array.type.layout != "C":
            shape = self.b.getattr(array, "shape", TupleType((int64,) * array.type.ndim))
            copy = self.b.call(records_empty_like, [array, shape], None, result_type)
        else:
            copy = self.b.call(np.empty_like, [array], None, result_type)
        self._copy_fields(copy, self._whole_index(array.type.ndim), array)
        return copy

    def gather_records(self, array: Value, index: Value, result_type) -> Optional[Value]:
        """`p[idx]`, `p[mask]` of a structured array (a 1-D index array or mask): a new array
        (`records_gathered_like`) whose fields are gathered one by one,
        `field_view('a')(q)[:] = field_view('a')(p)[idx]`, float-array gathers every mode
        follows. None for any other index."""
        if not (is_record_array_type(array.type) and is_record_array_type(result_type)
                and isinstance(index.type, ArrayType) and index.type.ndim == 1
                and isinstance(index.type.dtype, (IntType, BoolType))):
            return None
        gathered = self.b.call(records_gathered_like, [array, index], None, result_type)
        self._copy_fields(gathered, self._whole_index(result_type.ndim), array, index)
        return gathered

    def join_records(self, arrays: list, result_type) -> Optional[Value]:
        """`np.concatenate((p, q))` of 1-D structured arrays of one dtype (a tuple written in
        the call): a new array (`records_empty_like`) each part is copied into, field by
        field (`out[a:b] = p`), which every mode follows; None for anything else."""
        if not arrays or not is_record_array_type(result_type) or result_type.ndim != 1 \
                or any(not is_record_array_type(a.type) or a.type.ndim != 1
                       or a.type.dtype != result_type.dtype for a in arrays):
            return None
        lengths = [self.b.tuple_getitem(self.b.getattr(a, "shape", TupleType((int64,))), 0)
                   for a in arrays]
        total = lengths[0]
        for n in lengths[1:]:
            total = self.b.add(total, n)
        joined = self.b.call(records_empty_like, [arrays[0], total], None, result_type)
        start = self.b.const(0, int64)
        for a, n in zip(arrays, lengths):
            stop = self.b.add(start, n)
            part = self.b.build_slice(start, stop, self.b.const(None, none))
            self._copy_fields(joined, part, a)
            start = stop
        return joined

    def move_records(self, fn, args: list, result_type) -> Optional[Value]:
        """A numpy function that only moves entries (`MOVING_FUNCTIONS`: `np.roll(p, k)`,
        `np.take(p, idx)`, `np.repeat`, `np.append`, `np.delete`, joins and stacks,
        `np.full_like(p, r)`) of structured arrays and records of their dtype, each given or
        written in a tuple in the call: the function is called on the places of the entries
        (`record_places`: p's entries numbered from 0, the next array's after them, a record's
        place a number), and the records are gathered from those places
        (`gather_records`, float-array gathers every mode follows). numba makes a new
        C-ordered array for each of these, as this does. None where that does not apply."""
        if fn not in MOVING_FUNCTIONS or not is_record_array_type(result_type) \
                or result_type.layout != "C":
            return None
        if fn is np.full_like and (len(args) != 2 or not is_record(args[1].type)):
            return None  # (a fill value other than a record of the dtype: numba's to refuse)
        sources = []
        stand_ins = [self._places_of(a, sources, result_type.dtype) for a in args]
        if not sources or any(s is None for s in stand_ins):
            return None
        try:
            places_type = call_result_type(fn, [s.type for s in stand_ins])
        except TypingFailure:
            return None
        if not isinstance(places_type, ArrayType) or places_type.ndim != result_type.ndim:
            return None
        places = self.b.call(fn, stand_ins, None, places_type)
        flat_type = ArrayType(result_type.dtype, 1, "C", False)
        entries = [self.record_array_method("ravel", a, flat_type) if a.type.ndim != 1
                   or a.type.layout != "C" else a for a in sources]
        source = entries[0] if len(entries) == 1 else self.join_records(entries, flat_type)
        if source is None:
            return None
        flat_places = self.b.call(np.ravel, [places], None, ArrayType(int64, 1, "C"))
        gathered = self.gather_records(source, flat_places, flat_type)
        if gathered is None:
            return None
        if result_type.ndim == 1:
            return gathered
        shape = self.b.getattr(places, "shape", TupleType((int64,) * result_type.ndim))
        return self.b.call(np.reshape, [gathered, shape], None, result_type)

    def _places_of(self, value: Value, sources: list, dtype) -> Optional[Value]:
        """`value` with each structured array in it (itself, or an item of a tuple written in
        the call) replaced by the places of its entries, and a record by its place (the
        arrays, and a one-entry view of the record, appended to `sources`); None where a
        structured array or record of another dtype, or one hidden in a tuple variable, would
        be left."""
        t = value.type
        if is_record_array_type(t) or is_record(t):
            if (t.dtype if is_record_array_type(t) else t) != dtype:
                return None
            first = self.b.const(0, int64)
            for earlier in sources:
                first = self.b.add(first, self.b.getattr(earlier, "size", int64))
            if is_record(t):  # a record: one entry (a view of it), its place a number
                sources.append(one_entry_view(self.b, value))
                return first
            sources.append(value)
            return self.b.call(record_places, [value, first], None,
                               ArrayType(int64, t.ndim, "C"))
        if isinstance(t, TupleType):
            built = getattr(value, "op", None)
            if not isinstance(built, ops.BuildTuple):
                return value if not _holds_records(t) else None
            items = [self._places_of(item, sources, dtype) for item in built.items]
            return None if any(i is None for i in items) else self.b.build_tuple(items)
        return value

    def at_least_records(self, fn, array: Value, result_type) -> Optional[Value]:
        """`np.atleast_1d/2d/3d(p)` of a C-ordered structured array: numba's result is a view
        of `p` (a write through it changes `p`), here `np.reshape(p, shape)`, a view every
        mode follows, or `p` itself where it has the dimensions already."""
        if fn not in AT_LEAST or not is_record_array_type(array.type) \
                or not is_record_array_type(result_type) or array.type.layout != "C":
            return None
        ndim = array.type.ndim
        if result_type.ndim == ndim:
            return array
        shape = self.b.getattr(array, "shape", TupleType((int64,) * ndim))
        sizes = [self.b.tuple_getitem(shape, k) for k in range(ndim)]
        one = self.b.const(1, int64)
        if ndim == 0:
            sizes = [one] * result_type.ndim
        elif ndim == 1:  # (n) -> (1, n) or (1, n, 1), as numpy
            sizes = [one] + sizes + [one] * (result_type.ndim - 2)
        else:  # (m, n) -> (m, n, 1)
            sizes = sizes + [one]
        return self.b.call(np.reshape, [array, self.b.build_tuple(sizes)], None, result_type)

    def _whole_index(self, ndim: int) -> Value:
        return self.b.build_tuple([self.b.build_slice(*(self.b.const(None, none)
                                                        for _ in range(3)))
                                   for _ in range(ndim)])

    def _copy_fields(self, target: Value, index: Value, value: Value,
                     source_index: Optional[Value] = None) -> None:
        """`target[index] = value` field by field; `value[source_index]` when given."""
        record_type = target.type.dtype.numba_type
        for name in record_type.fields:
            destination = self._whole_field(target, name)
            if isinstance(value.type, ArrayType):
                source = self._whole_field(value, name)
            else:
                source = self._field_of_record(value, name)
            if is_record(destination.type.dtype):  # a nested record: its own fields
                self._copy_fields(destination, index, source, source_index)
                continue
            if source_index is not None:
                source = self.b.getitem(source, source_index,
                                        ArrayType(source.type.dtype, source.type.ndim, "C"))
            self.b.setitem(destination, index, source)

    def _field_of_record(self, record: Value, name: str) -> Value:
        """Field `name` of the record `record`: a number, an array, or a nested record."""
        t = record.type.numba_type.typeof(name)
        if isinstance(t, nbt.Record):
            nested = read_nested_record_through_view(self.b, record, name, from_numba(t))
            if nested is not None:
                return nested
        if is_array_field(record.type.numba_type, name):
            return self.read_record_field(record, name, None)
        return self.b.getattr(record, name, from_numba(t))

    def _whole_field(self, array: Value, name: str) -> Value:
        """`p['a']` of the structured array `p`: a view of field `name` of every entry (for a
        field holding an array, of one more dimension per axis of it)."""
        record_type = array.type.dtype.numba_type
        field = record_type.typeof(name)
        ndim, element = array.type.ndim, field
        if isinstance(field, nbt.NestedArray):
            ndim, element = ndim + field.ndim, field.dtype
        view_type = ArrayType(from_numba(element), ndim, "A", array.type.readonly)
        return self.b.call(field_view_of(record_type, name), [array], type=view_type)

    def _record_leaves(self, record: Value, path: tuple) -> list:
        """[(field path, value)] of every scalar and array field of `record`, nested records
        walked (arrays as copies: the writes that follow may overwrite what they view)."""
        record_type = record.type.numba_type
        leaves = []
        for name in record_type.fields:
            t = record_type.typeof(name)
            if isinstance(t, nbt.Record):
                nested = read_nested_record_through_view(self.b, record, name, from_numba(t))
                if nested is None:
                    nested = self.b.getattr(record, name, from_numba(t))
                leaves += self._record_leaves(nested, path + (name,))
            elif is_array_field(record_type, name):
                read, array_type = array_field_of(record_type, name)
                view = self.b.call(read, [record], type=array_type)
                leaves.append((path + (name,), self.b.call(np.copy, [view], type=array_type)))
            else:
                leaves.append((path + (name,), self.b.getattr(record, name, from_numba(t))))
        return leaves

    def _write_leaf(self, entry: Value, path: tuple, value: Value) -> None:
        record = entry
        for name in path[:-1]:
            t = from_numba(record.type.numba_type.typeof(name))
            record = read_nested_record_through_view(self.b, record, name, t)
        self.write_record_field(record, path[-1], value)

    def write_record_field(self, record: Value, name: str, value: Value) -> None:
        record_type = record.type.numba_type if isinstance(record.type, OpaqueType) else None
        if record_type is None or name not in getattr(record_type, "fields", {}):
            self.unsupported(f"writing field {name!r} of {record.type}",
                             "write a field the record's dtype has")
        if is_array_field(record_type, name):  # `r.pos = v` copies v into the field's array
            whole = self.b.build_slice(*(self.b.const(None, none) for _ in range(3)))
            return self.b.setitem(self.read_record_field(record, name, None), whole, value)
        value = self._coerce(value, from_numba(record_type.typeof(name)))
        if not write_field_through_view(self.b, record, name, value):
            self.b.call(field_setter(name), [record, value], type=none)


# numpy functions making a new array of entries moved from their structured-array arguments
# (numba allocates the result for each, C-ordered)
MOVING_FUNCTIONS = frozenset([np.roll, np.take, np.repeat, np.append, np.delete,
                              np.concatenate, np.hstack, np.vstack, np.stack, np.column_stack,
                              np.dstack, np.full_like])
AT_LEAST = frozenset([np.atleast_1d, np.atleast_2d, np.atleast_3d])


def _holds_records(t) -> bool:
    if isinstance(t, TupleType):
        return any(_holds_records(e) for e in t.elements)
    return is_record(t) or is_record_array_type(t)


def is_record_array_type(t) -> bool:
    """A structured array, whatever its fields."""
    return isinstance(t, ArrayType) and is_record(t.dtype)


def _record_type(t):
    """The numba record type of moonlite type `t`, or None."""
    return t.numba_type if is_record(t) else None


def _whole_entry_index(t) -> bool:
    """An index naming one entry: an int, or a tuple of ints."""
    if isinstance(t, TupleType):
        return all(isinstance(e, IntType) for e in t.elements)
    return isinstance(t, IntType)
