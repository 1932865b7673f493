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

import numpy as np

from .. import _numba as nb
from ..ir.core import Value
from ..ir.types import ArrayType, IntType, OpaqueType, TupleType, from_numba, is_record, none
from ..rules.jitclasses import field_store, fields_of, is_numba_instance_type
from ..rules.records import (array_field_of, field_setter, field_view_of, is_array_field,
                             read_nested_record_through_view, write_field_through_view)

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


def _record_type(t):
    """The numba record type of moonlite type `t`, or None."""
    return t.numba_type if is_record(t) else None


def _whole_entry_index(t) -> bool:
    """An index naming one entry: an int, or a tuple of ints."""
    if isinstance(t, TupleType):
        return all(isinstance(e, IntType) for e in t.elements)
    return isinstance(t, IntType)
