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
from ..ir.core import Value
from ..ir.types import (ArrayType, BoolType, IntType, OpaqueType, TupleType, from_numba,
                        int64, is_record, none)
from ..rules.jitclasses import field_store, fields_of, is_numba_instance_type
from ..rules.records import (array_field_of, field_setter, field_view_of, is_array_field,
                             read_nested_record_through_view, records_empty_like,
                             records_gathered_like,
                             write_field_through_view)

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
