"""The wide profile's structured arrays (issue #20): a block at the end of a kernel that fills a
structured array it allocates from what is in scope (fields of entries written by key and by
attribute, an int field too), updates it in place (a for loop over its records, a whole field
written through its view) and reduces it to a float (a whole-field sum, or a loop reading the
fields of each entry). A third dtype has a field holding an array (`('v', 'f8', (3,))`),
written and read by entry, by element and as the `(n, 3)` view of every entry's. Then the
entry an argmax loop picks may be written through the record it keeps, and last whole records
may be copied: the array copied or gathered in sorted order, entries shifted by a slice
assignment, one broadcast into another.

Like `gen_lists.py`, the block draws from its own random stream (`rng`) and reads names only:
a seed's kernel without the "records" group is the same text as before the group existed. Its
dtype is a module-level global (numba cannot build a dtype inside a kernel), sometimes with a
bool field after the floats, which makes its records unaligned (17 bytes).
"""

from __future__ import annotations

RECORD_FEATURES = frozenset({
    "record_field_write", "record_attr_write", "record_int_field", "record_iterate_write",
    "record_whole_field_write", "record_whole_field_read", "record_field_read",
    "record_unaligned", "record_array_field", "record_chosen_write", "record_copies",
})

_DTYPES = {
    "aligned": "[('x', 'f8'), ('w', 'f8'), ('k', 'i8')]",
    "unaligned": "[('x', 'f8'), ('w', 'f8'), ('on', '?')]",
    "vector": "[('x', 'f8'), ('v', 'f8', (3,)), ('w', 'f8')]",
}
_MAPS = ("np.sin({v}) * {f}", "{v} * {v} + {f}", "np.tanh({v} + {f})", "{v} * {f} - 0.5")


def record_block(rng, scope, fresh, emit, features: set, prelude: list, indent: int = 1) -> str:
    """Emit the block (its dtype into `prelude`); return the name of the float it leaves."""
    f = rng.choice(scope.floats) if scope.floats else "1.0"
    kind = rng.choice(sorted(_DTYPES))
    dtype = fresh("REC").upper()
    prelude += [f"{dtype} = np.dtype({_DTYPES[kind]})", "", ""]
    if kind == "unaligned":
        features.add("record_unaligned")
    table = fresh("tb")
    _fill(rng, scope, f, table, dtype, kind, emit, features, indent)
    _update(rng, f, table, emit, features, indent)
    if kind == "vector":
        _vectors(rng, f, table, emit, features, indent)
    out = fresh("r")
    _reduce(rng, table, out, emit, features, indent)
    _chosen(rng, f, table, out, fresh, emit, features, indent)  # (drawn after the rest:
    _copied(rng, f, table, out, fresh, emit, features, indent)  # older seeds keep their text)
    return out


def _fill(rng, scope, f, table, dtype, kind, emit, features, indent) -> None:
    a = rng.choice(scope.arrays) if scope.arrays else None
    emit(indent, f"{table} = np.zeros({f'len({a})' if a else 3}, dtype={dtype})")
    emit(indent, f"for i in range(len({table})):")
    source = f"{a}[i]" if a else f"{f} * (i + 1)"
    features.add("record_field_write")
    emit(indent + 1, f"{table}[i]['x'] = {rng.choice(_MAPS).format(v=source, f=f)}")
    features.add("record_attr_write")
    emit(indent + 1, f"{table}[i].w = 0.5 * {f} + 0.25 * i")
    if rng.random() < 0.5 and kind != "vector":
        features.add("record_int_field")
        flag = "k" if kind == "aligned" else "on"
        value = "i" if kind == "aligned" else "i % 2 == 0"
        emit(indent + 1, f"{table}[i]['{flag}'] = {value}")


def _update(rng, f, table, emit, features, indent) -> None:
    if rng.random() < 0.6:
        features.add("record_iterate_write")
        emit(indent, f"for rec in {table}:")
        emit(indent + 1, f"rec.x += {f} * rec.w")
        emit(indent + 1, "rec['w'] = np.tanh(rec.x) + rec.w")
    if rng.random() < 0.5:
        features.add("record_whole_field_write")
        emit(indent, f"{table}['w'][:] = np.sin({table}['x']) * {f}")


def _vectors(rng, f, table, emit, features, indent) -> None:
    """The array field: filled from the entry's floats, updated in place, folded back."""
    features.add("record_array_field")
    emit(indent, f"for i in range(len({table})):")
    emit(indent + 1, f"{table}[i].v[:] = {table}[i].x * np.arange(1.0, 4.0) + {f}")
    emit(indent + 1, f"{table}[i]['v'][1] *= {table}[i].w")
    if rng.random() < 0.5:
        emit(indent, f"for rec in {table}:")
        emit(indent + 1, f"rec.v[:] += {f} * rec.w")
        emit(indent + 1, "rec.x += 0.1 * np.sum(np.sin(rec.v))")
    else:
        emit(indent, f"{table}['w'][:] += np.sum(np.sin({table}['v']), axis=1)")


def _chosen(rng, f, table, out, fresh, emit, features, indent) -> None:
    """The entry an argmax loop picks, kept as a record around the loop, then written
    through (capture/record_phis.py)."""
    if rng.random() >= 0.5:
        return
    features.add("record_chosen_write")
    best = fresh("best")
    emit(indent, f"{best} = {table}[0]")
    emit(indent, f"for i in range(1, len({table})):")
    emit(indent + 1, f"if {table}[i].x > {best}.x:")
    emit(indent + 2, f"{best} = {table}[i]")
    emit(indent, f"{best}.w = {best}.w * {f} + {best}.x")
    emit(indent, f"{out} += {best}.w + {table}[0].w")


def _reduce(rng, table, out, emit, features, indent) -> None:
    if rng.random() < 0.5:
        features.add("record_whole_field_read")
        emit(indent, f"{out} = np.sum({table}['x'] * {table}['w'])")
        return
    features.add("record_field_read")
    emit(indent, f"{out} = 0.0")
    emit(indent, f"for i in range(len({table})):")
    emit(indent + 1, f"{out} += {table}[i].x * {table}[i]['w'] * (i + 1)")


def _copied(rng, f, table, out, fresh, emit, features, indent) -> None:
    """Whole records copied (capture/record_fields.py: copy_records_into, gather_records): a
    copy or a sorted gather of the table, its entries shifted down by one (overlapping
    slices), the last written over the first, then read."""
    if rng.random() >= 0.5:
        return
    features.add("record_copies")
    copy = fresh("cp")
    source = rng.choice((f"{table}.copy()", f"{table}[np.argsort({table}['x'])]"))
    emit(indent, f"{copy} = {source}")
    emit(indent, f"{copy}[1:] = {copy}[:-1]")
    emit(indent, f"{copy}[0] = {table}[len({table}) - 1]")
    emit(indent, f"{copy}[0].x = {copy}[0].x * {f}")
    emit(indent, f"{out} += np.sum({copy}['x'] * {copy}['w'])")
