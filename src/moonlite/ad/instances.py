"""Fields of jitclass instances built in a function, read out of what they were built from.

Capture turns `Box(a, b)` into `make(fields(a, b))` (`capture/jitclasses.py`). Once the calls
taking the instance are inlined (`inline.py`), a field read `obj.x` is the entry of `fields` for
`x`: the inliner reads it from there (`field_of_built_instance`), and a phi choosing between
such instances (`box = Box(...)` again in a loop or in a branch) becomes a phi of their fields
tuples (`read_through_instance_phis`). No instance is then left carrying a derivative, and the
`make` calls, unused, are dropped. An instance not built here that meets them at a phi (an
argument: `Box(x) if c else given`) joins with its fields read at the end of the edge it takes,
when no field of its class is written. What is left (an instance returned in a tuple, given to a
function with a rule) is refused by `refusals.py`.
"""

from __future__ import annotations

from typing import Optional

from ..rules.jitclasses import (any_layout, field_index, fields_of, is_instance_type, maker,
                               stored_field)
from ..ir import ops
from ..ir.core import Function
from ..ir.types import ArrayType, TupleType, from_numba


def field_of_built_instance(b, instance, name: str, want):
    """`instance.name` read straight out of the fields tuple `instance` was made from, when
    `instance` is the result of a `make` call here: the value (converted to the field's type
    `want` if a scalar of another type), or None."""
    made = getattr(instance, "op", None)
    ctor = maker(getattr(made, "callee", None)) if made is not None else None
    k = None if ctor is None else field_index(ctor, name)
    if k is None:
        return None
    fields = made.operands[0]
    built = getattr(fields, "op", None)
    item = built.items[k] if isinstance(built, ops.BuildTuple) else b.tuple_getitem(fields, k)
    return as_field(b, item, want)


def as_field(b, item, want):
    if item.type == want:
        return item
    if item.type.is_scalar and want.is_scalar:
        return b.cast(item, want)
    if _same_array_but_layout(item.type, want):
        return item  # a C-ordered array set into a field declared any-layout: the same array
    return None


def _substitute(fn: Function, found: dict) -> None:
    """In place: every operand `v` in `found` replaced by `found[v]`."""
    for op in fn.ops():
        op.operands = tuple(found.get(v, v) for v in op.operands)


def retype_field_arrays(fn: Function, builder) -> Function:
    """In place: a C array read out of a field declared "A" is handed back as it is by
    `as_field` (indexing it stays contiguous); where a tuple or a return holds it, whose type
    is numba's for the field's read, it is retyped "A" by `any_layout` first. `fn`."""
    for op in list(fn.ops()):
        if isinstance(op, ops.BuildTuple):
            wanted = op.result.type.elements
        elif isinstance(op, ops.Return) and op.operands:
            wanted = (fn.return_type,)
        else:
            continue
        operands = list(op.operands)
        for k, (v, want) in enumerate(zip(operands, wanted)):
            if v.type != want and _same_array_but_layout(v.type, want):
                builder.loc = op.loc
                with builder.before(op):
                    operands[k] = builder.call(any_layout, [v], type=want)
        op.operands = tuple(operands)
    return fn


def _same_array_but_layout(got, want) -> bool:
    return all(hasattr(t, "ndim") and hasattr(t, "dtype") for t in (got, want)) \
        and (got.ndim, got.dtype) == (want.ndim, want.dtype) and want.layout == "A"


def read_through_built_instances(fn: Function, builder) -> Function:
    """In place: every field read `obj.x` of an instance `obj` built here read out of the
    fields tuple it was built from, then those of phis of such instances (what the inliner
    does as it copies ops, for a function whose fields were written: `instance_fields.py`)."""
    found = {}
    for op in list(fn.ops()):
        if isinstance(op, ops.GetAttr):
            builder.loc = op.loc
            with builder.before(op):
                field = field_of_built_instance(builder, op.value, op.name, op.result.type)
            if field is not None:
                found[op.result] = field
    _substitute(fn, found)
    return read_through_instance_phis(fn, builder)


def read_through_instance_phis(fn: Function, builder) -> Function:
    """In place: each phi of instances that are all built here from fields tuples of one type
    (directly, or through other such phis) gets a phi of those tuples beside it, and its field
    reads read that phi's entries. `builder`: a Builder on `fn`. Tuple phis holding instances
    (`state = (Box(...), t)` carried around a loop) are first split into a phi per entry."""
    split_tuple_phis(fn, builder)
    sources = _phis_of_built_instances(fn)
    if not sources:
        return fn
    tuples = {}
    for phi, (ctor, fields_type) in sources.items():
        twin = ops.Phi(fields_type, loc=phi.loc, hint="fields")
        phi.block.insert(phi.block.ops.index(phi), twin)
        tuples[phi.result] = (ctor, twin)
    for phi in sources:
        twin = tuples[phi.result][1]
        for block, value in phi.incoming:
            if value in tuples:
                fields = tuples[value][1].result
            elif _made(value):
                fields = _fields_as(builder, value.op, twin.result.type)
            else:
                fields = _given_fields(builder, value, block, twin.result.type)
            twin.add_incoming(block, fields)
    _replace_field_reads(fn, builder, tuples)
    return fn


def _made(value) -> bool:
    op = getattr(value, "op", None)
    return isinstance(op, ops.Call) and maker(op.callee) is not None


def _given_fields(builder, instance, block, want: TupleType):
    """The fields of an instance not built here (an argument, a helper's result), read at the
    end of `block`, the edge it takes into a phi beside instances built here: what the phi's
    field reads read. Exact, since no field of its class is written in the function
    (`_phis_of_built_instances`); an array field is the same array."""
    struct = fields_of(instance.type.numba_type)
    with builder.before_terminator_of(block):
        entries = [builder.getattr(instance, name, from_numba(t)) for name, t in struct.items()]
        return builder.build_tuple([e if e.type == t else builder.call(any_layout, [e], type=t)
                                    for e, t in zip(entries, want.elements)])


def _fields_as(builder, make: ops.Call, want: TupleType):
    """The fields tuple `make` built an instance from, its arrays retyped "A" by `any_layout`
    where the phi of such tuples (`want`) has arrays of several layouts."""
    fields = make.operands[0]
    if fields.type == want:
        return fields
    builder.loc = make.loc
    with builder.before(make):
        entries = [builder.tuple_getitem(fields, k) for k in range(len(want.elements))]
        return builder.build_tuple([e if e.type == t else builder.call(any_layout, [e], type=t)
                                    for e, t in zip(entries, want.elements)])


def _phis_of_built_instances(fn: Function) -> dict:
    """{phi: (its constructor, the fields tuple type)} for the phis of instances whose values,
    followed back through other phis, are `make` results of one constructor (and instances of
    its class not built here, when no field of the class is written in `fn`), of fields tuple
    types that unify (`_unified_fields_type`; then so are those of every phi they pass
    through)."""
    phis = dict.fromkeys(op for op in fn.ops()  # ordered: twins go in in the same order
                         if isinstance(op, ops.Phi) and is_instance_type(op.result.type))
    found = {}
    written = {_stored_class(op) for op in fn.ops()} - {None}
    for phi in phis:
        sources = _sources_through_phis(phi, phis)
        if sources is None:
            continue
        ctors = {ctor for ctor, _ in sources if ctor is not None}
        given = any(ctor is None for ctor, _ in sources)
        if len(ctors) != 1 or given and phi.result.type.numba_type in written:
            continue  # (a given instance whose fields may change: no snapshot of them)
        unified = _unified_fields_type([t for _, t in sources])
        if unified is not None:
            found[phi] = (ctors.pop(), unified)
    return found


def _stored_class(op):
    """The numba instance type whose field the op writes (a `field_store` call), else None."""
    if isinstance(op, ops.Call) and stored_field(op.callee) is not None:
        return op.operands[0].type.numba_type
    return None


def _unified_fields_type(types: list) -> Optional[TupleType]:
    """The one fields tuple type, or the type of a tuple holding any of `types` when they
    differ only in the layouts of their arrays (`Box(x * 2.0) if c else Box(x[::2])`): those
    entries of layout "A" (`any_layout`); None when they differ otherwise."""
    if len(set(types)) == 1:
        return types[0]
    if len({len(t.elements) for t in types}) != 1:
        return None
    unified = []
    for entries in zip(*(t.elements for t in types)):
        if len(set(entries)) == 1:
            unified.append(entries[0])
        elif all(_same_array_but_layout(e, _as_any_layout(entries[0])) for e in entries):
            unified.append(_as_any_layout(entries[0]))
        else:
            return None
    return TupleType(tuple(unified))


def _as_any_layout(t):
    return ArrayType(t.dtype, t.ndim, "A", t.readonly) if isinstance(t, ArrayType) else t


def _sources_through_phis(phi, phis: dict) -> Optional[set]:
    """The (constructor, fields tuple type) of every `make` whose result reaches `phi`, with
    (None, the declared fields' types) for an instance not built here, or None if a value that
    is no instance reaches it."""
    sources, seen, todo = set(), {phi}, [phi]
    while todo:
        for value in todo.pop().operands:
            op = getattr(value, "op", None)
            if op in phis:
                if op not in seen:
                    seen.add(op)
                    todo.append(op)
                continue
            ctor = maker(op.callee) if isinstance(op, ops.Call) else None
            if ctor is None:  # an instance not built here: its fields read as they are
                if not is_instance_type(value.type):
                    return None
                struct = fields_of(value.type.numba_type)
                sources.add((None, TupleType(tuple(from_numba(t) for t in struct.values()))))
                continue
            sources.add((ctor, op.operands[0].type))
    return sources


def _replace_field_reads(fn: Function, builder, tuples: dict) -> None:
    replaced = {}
    for block in fn.blocks:
        for op in list(block.ops):
            if not (isinstance(op, ops.GetAttr) and op.value in tuples):
                continue
            ctor, twin = tuples[op.value]
            k = field_index(ctor, op.name)
            if k is None:
                continue
            builder.loc = op.loc
            with builder.before(op):  # op then goes unused
                new = as_field(builder, builder.tuple_getitem(twin.result, k), op.result.type)
            if new is not None:
                replaced[op.result] = new
    _substitute(fn, replaced)


def split_tuple_phis(fn: Function, builder) -> None:
    """In place: a phi of tuples with an instance or a tuple among their entries becomes one
    phi per entry and the tuple rebuilt after them, and reads of an entry of a tuple built here
    read the entry itself. The instance phis are then phis of built instances (above), and a
    nested tuple carried around a loop (`st = ((a, b), c)`) is flat tuples and numbers, which
    reverse mode follows (it refuses nested tuples)."""
    while _split_once(fn, builder):  # the entry phis may hold tuples in turn
        pass


def _split_once(fn: Function, builder) -> bool:
    tuple_phis = [op for op in fn.ops() if isinstance(op, ops.Phi)
                  and isinstance(op.result.type, TupleType)
                  and any(is_instance_type(t) or isinstance(t, TupleType)
                          for t in op.result.type.elements)]
    if not tuple_phis:
        return False
    entries = {phi.result: [ops.Phi(t, loc=phi.loc, hint="entry")
                            for t in phi.result.type.elements] for phi in tuple_phis}
    for phi in tuple_phis:
        for k, entry in enumerate(entries[phi.result]):
            phi.block.insert(phi.block.ops.index(phi), entry)
    rebuilt = {}
    for phi in tuple_phis:
        for block, value in phi.incoming:
            for k, entry in enumerate(entries[phi.result]):
                entry.add_incoming(block, _entry_at_end(builder, block, value, k, entries))
        builder.loc = phi.loc
        first = phi.block.ops[len(phi.block.phis)]
        with builder.before(first):
            rebuilt[phi.result] = builder.build_tuple(
                [e.result for e in entries[phi.result]],
                named=getattr(phi.result.type, "numba_type", None))
    for op in fn.ops():
        op.operands = tuple(rebuilt.get(v, v) for v in op.operands)
    for phi in tuple_phis:
        phi.block.ops.remove(phi)
    _read_entries_of_built_tuples(fn)
    return True


def _entry_at_end(builder, block, value, k: int, entries: dict):
    """Entry `k` of the tuple `value` arriving from `block`."""
    if value in entries:
        return entries[value][k].result
    made = getattr(value, "op", None)
    if isinstance(made, ops.BuildTuple):
        return made.items[k]
    with builder.before_terminator_of(block):
        return builder.tuple_getitem(value, k)


def _read_entries_of_built_tuples(fn: Function) -> None:
    """`(a, b)[0]` is `a`."""
    same = {}
    for op in fn.ops():
        if isinstance(op, ops.TupleGetItem):
            made = getattr(op.tuple, "op", None)
            if isinstance(made, ops.BuildTuple):
                same[op.result] = made.items[op.index]

    def resolve(v):
        while v in same:  # ((a, b)[0], c)[0] is a too
            v = same[v]
        return v

    for op in fn.ops():
        op.operands = tuple(resolve(v) for v in op.operands)
