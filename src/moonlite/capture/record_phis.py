"""Records chosen by a branch or carried around a loop, read again as entries of an array.

numba passes a record as a reference to an entry of the array it was read from, so
`r = p[0] if c else p[1]` and `best = p[i]` in a loop are phis of records. Every mode follows a
record read as `p[i]` (reverse mode sends its fields' adjoints to `shadow[i]`, and capture
writes its fields through views of the whole field: `record_fields.py`), but not a phi of them.
So after the phis are filled, each phi of records becomes a phi of indices (and of arrays, when
the records come from several arrays), followed by the entry `p[i]` they name: the record the
phi chose, the same reference as numba's. The field writes and nested-record reads capture
made of the phi's record are made again as writes and reads through views.

A phi one of whose records is not an entry read from an array here (a helper's result, a field
of another record) is left as it is: forward mode follows it, reverse mode refuses it by name.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional

from ..ir import ops
from ..ir.builder import Builder
from ..ir.core import Function
from ..ir.types import ArrayType, IntType, TupleType, int64, is_record
from ..rules.define import njit_from_source
from ..rules.records import (field_set_by, read_nested_record_through_view, record_source,
                             write_field_through_view)


def route_record_phis(fn: Function) -> None:
    """Rewrite every phi of records whose records are all entries of arrays (see above)."""
    phis = [phi for block in fn.blocks for phi in block.phis if is_record(phi.result.type)]
    routable = _routable(phis)
    if not routable:
        return
    b = Builder(fn)
    chosen: set = set()
    for component in _components(routable):
        chosen |= _route(b, component)
    if chosen:
        _rewrite_record_uses(b, fn, chosen)


def _routable(phis: list) -> list:
    """The phis whose incoming records are all entries read from arrays or routable phis."""
    good = {phi.result: phi for phi in phis}
    changed = True
    while changed:
        changed = False
        for result, phi in list(good.items()):
            if not all(v in good or record_source(v) is not None for v in phi.operands):
                del good[result]
                changed = True
    return list(good.values())


def _components(phis: list) -> list:
    """The routable phis grouped by the phis they take records from (one group is routed
    together: its index phis feed each other)."""
    by_result = {phi.result: phi for phi in phis}
    parent = {phi: phi for phi in phis}

    def root(phi):
        while parent[phi] is not phi:
            phi = parent[phi]
        return phi

    for phi in phis:
        for v in phi.operands:
            if v in by_result:
                parent[root(by_result[v])] = root(phi)
    groups: dict = {}
    for phi in phis:
        groups.setdefault(root(phi), []).append(phi)
    return list(groups.values())


def _route(b: Builder, component: list) -> set:
    """Route one group of phis; the entries `p[i]` now standing for them."""
    results = {phi.result for phi in component}
    incoming = [v for phi in component for v in phi.operands if v not in results]
    source_of = {v: (record_source(v).value, record_source(v).index) for v in incoming}
    array_type = _common_array_type({a.type for a, _ in source_of.values()})
    if array_type is None or len({i.type for _, i in source_of.values()}) != 1:
        # records of arrays of several dimensions: each the entry 0 of a one-entry view
        source_of = _as_one_entry_views(b, incoming)
        array_type = None if source_of is None else _common_array_type(
            {a.type for a, _ in source_of.values()})
        if array_type is None:
            return set()  # (arrays of several mutabilities: left to each mode, see above)
    index_type = next(iter(source_of.values()))[1].type
    arrays = {a for a, _ in source_of.values()}
    one_array = arrays.pop() if len(arrays) == 1 else None
    index_of, array_of = {}, {}
    for phi in component:
        b.loc = phi.loc
        index_of[phi.result] = b.phi(index_type, phi.block, hint="entry")
        if one_array is None:
            array_of[phi.result] = b.phi(array_type, phi.block, hint="entries")
    for phi in component:
        for block, v in phi.incoming:
            inner = v in results
            index_of[phi.result].add_incoming(
                block, index_of[v].result if inner else source_of[v][1])
            if one_array is None:
                array_of[phi.result].add_incoming(
                    block, array_of[v].result if inner else source_of[v][0])
    chosen = {}
    for phi in component:
        block = phi.block
        first = block.ops[len(block.phis)]
        b.loc = phi.loc
        with b.before(first):
            array = one_array if one_array is not None else array_of[phi.result].result
            chosen[phi.result] = b.getitem(array, index_of[phi.result].result,
                                           type=phi.result.type)
    for op in list(b.function.ops()):
        if op not in component:
            op.operands = tuple(chosen.get(v, v) for v in op.operands)
    for phi in component:
        phi.block.ops.remove(phi)
    return set(chosen.values())


def _as_one_entry_views(b: Builder, records: list) -> Optional[dict]:
    """{record `p[i]`: (a view of p holding only that entry, 0)}, each view made right after
    its record is read (`entry_slice`: `p[i:i + 1]`, `grid[i, j:j + 1]`), so that records of
    arrays of several dimensions are entries of one-dimensional arrays alike."""
    found = {}
    for record in records:
        read = record_source(record)
        index = read.index
        items = list(index.type.elements) if isinstance(index.type, TupleType) else [index.type]
        if not all(isinstance(t, IntType) for t in items):
            return None
        b.loc = read.loc
        with b.before(read.block.ops[read.block.ops.index(read) + 1]):  # (just after it)
            parts = [b.tuple_getitem(index, k) for k in range(len(items))] \
                if isinstance(index.type, TupleType) else [index]
            array = read.value
            view_type = ArrayType(array.type.dtype, 1, "A", array.type.readonly)
            view = b.call(entry_slice(len(parts)), [array, *parts], type=view_type)
            found[record] = (view, b.const(0, int64))
    return found


@functools.lru_cache(maxsize=None)
def entry_slice(ndim: int):
    """The njit function `entry_slice(a, i0, ..., ik)`: the view `a[i0, ..., ik:ik + 1]` of
    the one entry `a[i0, ..., ik]` (a negative last index counted from the end, as indexing
    counts it)."""
    names = [f"i{k}" for k in range(ndim)]
    lead = "".join(f"{n}, " for n in names[:-1])
    last = names[-1]
    source = (f"def entry_slice(a, {', '.join(names)}):\n"
              f"    if {last} < 0:\n        {last} += a.shape[{ndim - 1}]\n"
              f"    return a[{lead}{last}:{last} + 1]\n")
    return njit_from_source(source, "entry_slice", f"entry slice of {ndim} dimensions")


def _common_array_type(types: set):
    """The type of a phi of arrays of `types`: theirs, or layout "A" when only their layouts
    differ; None when their dtypes, dimensions or mutability differ."""
    if len(types) == 1:
        return next(iter(types))
    if len({(t.dtype, t.ndim, t.readonly) for t in types}) != 1:
        return None
    return dataclasses.replace(next(iter(types)), layout="A")


def _rewrite_record_uses(b: Builder, fn: Function, chosen: set) -> None:
    """A field write `set_field(r, v)` or nested-record read `r.pos` capture made of a record
    `chosen` now holds as an entry `p[i]`: made again through views of the whole field (in
    block order, so a nested record read this way is written through views too)."""
    for op in list(fn.ops()):
        b.loc = op.loc
        if isinstance(op, ops.Call) and field_set_by(op.callee) is not None:
            record, value = op.positional
            if record not in chosen:
                continue
            with b.before(op):
                write_field_through_view(b, record, field_set_by(op.callee), value)
            op.block.ops.remove(op)
        elif (isinstance(op, ops.GetAttr) and is_record(op.result.type)
              and op.value in chosen):
            with b.before(op):
                nested = read_nested_record_through_view(b, op.value, op.name, op.result.type)
            chosen.add(nested)
            for user in fn.ops():
                user.operands = tuple(nested if v is op.result else v for v in user.operands)
            op.block.ops.remove(op)
