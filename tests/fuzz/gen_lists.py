"""The wide profile's lists (issue #20): a block at the end of a kernel that builds a list of
floats from what is in scope (a comprehension over an array or a range, filtered by the index,
appends in a for loop and under a branch, appends in a while loop that reads the list back) and
reduces it to a float (`sum`, `np.array(...)`, `max`, `len`, an index, a for loop over it); some
go on to append tuples made from its entries to a list of pairs, read back, some to sort or
reverse the list in place and read it again, some to append arrays to a list of arrays, and some
to give a list of tuples or of arrays to an njit helper (defined before the kernel).

The block draws from its own random stream (`rng`) and reads names only, never drawing from the
kernel's stream: a seed's kernel without the "lists" group is the same text as before the group
existed, and one with it is that text plus this block (the regression seeds keep what they test).
Filters test the index, not the values, so that finite differences never move an entry across a
filter.
"""

from __future__ import annotations

LIST_FEATURES = frozenset({
    "list_comprehension", "list_comprehension_range", "list_filtered", "list_append_loop",
    "list_append_branch", "list_while", "list_sum", "list_np_array", "list_max", "list_len",
    "list_index", "list_iterated", "list_of_pairs", "list_of_pairs_asarray", "list_sorted",
    "list_edited", "list_of_pairs_picked", "list_copied", "list_of_arrays",
    "list_given_to_helper",
})
PAIRS_CHANCE = 0.4  # a block of the lists group that goes on to build a list of tuples
SORT_CHANCE = 0.3  # ... that goes on to sort or reverse the list in place and read it again
EDIT_CHANCE = 0.3  # ... that goes on to insert into the list, pop(i) or remove from it
PICK_CHANCE = 0.3  # a list of pairs also picked from by min() or max()
COPY_CHANCE = 0.3  # a block that goes on to build a new list from the list, grow and read it
ARRAYS_CHANCE = 0.3  # ... that goes on to append arrays to a list of arrays and walk it
HELPER_CHANCE = 0.3  # ... that goes on to give a list of tuples or of arrays to an njit helper

_MAPS = ("np.sin({v}) * {f}", "{v} * {v} + {f}", "np.tanh({v} + {f})", "{v} * {f} - 0.5")


def list_block(rng, scope, fresh, emit, features: set, prelude: list = None,
               indent: int = 1) -> str:
    """Emit the block (helpers it calls into `prelude`); return the name of the float it
    leaves."""
    f = rng.choice(scope.floats) if scope.floats else "1.0"
    name = fresh("lst")
    _build(rng, scope, f, name, emit, features, indent)
    out = fresh("r")
    form = _reduce(rng, name, f, out, emit, features, indent)
    # drawn last: the blocks drawn before stay as they were. Not after np.array(list): numba
    # rewrites `np.array([... for ...])` into array code, which then fails to type another use
    if rng.random() < PAIRS_CHANCE and form != "array":
        _pairs(rng, f, name, out, emit, features, indent)
    if rng.random() < SORT_CHANCE and form != "array":  # drawn after the pairs, for the same
        _reordered(rng, name, out, emit, features, indent)
    if rng.random() < EDIT_CHANCE and form != "array":  # drawn after the sort, likewise
        _edited(rng, name, out, emit, features, indent)
    if rng.random() < COPY_CHANCE and form != "array":  # drawn after the edits, likewise
        _copied(rng, name, out, emit, features, indent)
    if rng.random() < ARRAYS_CHANCE and scope.arrays:  # drawn after the copies, likewise
        _arrays(rng, scope, f, name, out, emit, features, indent)
    if rng.random() < HELPER_CHANCE and prelude is not None and form != "array":  # likewise
        _given_to_helper(rng, scope, f, name, out, emit, features, prelude, indent)
    return out


def _given_to_helper(rng, scope, f, name, out, emit, features, prelude, indent) -> None:
    """A list of tuples made from the list, or a list of arrays made from an array in scope,
    given to an njit helper (defined in `prelude`) that walks it, by index or by a for loop,
    and may first write its entries (`pts[k] = (...)`, seen by the kernel after the call)."""
    features.add("list_given_to_helper")
    given, walk = f"{name}_given", f"{name}_walk"
    arrays = bool(scope.arrays) and rng.random() < 0.4
    if arrays:
        a = rng.choice(scope.arrays)
        emit(indent, f"{given} = [{a} * 0.5, np.sin({a})]")
        emit(indent, f"{given}.append({a} * np.tanh({f}))")
        body = ["    s = 0.0", "    for row in rows:", "        s += np.sum(np.tanh(row)) * np.tanh(w)",
                "    return s + rows[-1][0]"]
        prelude += ["@numba.njit", f"def {walk}(rows, w):"] + body + ["", ""]
        emit(indent, f"{out} += {walk}({given}, {f})")
        return
    emit(indent, f"{given} = [(v, k) for k, v in enumerate({name})]")
    body = ["    s = 0.0"]
    if rng.random() < 0.5:  # the helper writes the entries first
        body += ["    for k in range(len(pts)):", "        v, i = pts[k]",
                 "        pts[k] = (v * np.tanh(w) + 0.5, i)"]
    body += (["    for v, i in pts:", "        s += np.cos(v) * (i + 1)"] if rng.random() < 0.5
             else ["    for k in range(len(pts)):", "        s += pts[k][0] * pts[-1 - k][0]"])
    prelude += ["@numba.njit", f"def {walk}(pts, w):"] + body + ["    return s", "", ""]
    emit(indent, f"{out} += {walk}({given}, {f})")
    emit(indent, f"if len({given}) > 0:")
    emit(indent + 1, f"{out} += {given}[0][0]")


def _arrays(rng, scope, f, name, out, emit, features, indent) -> None:
    """A list of arrays appended in a loop (new arrays made from an array in scope, or its
    copy), walked by for or enumerate, or read at both ends. Its names are the list's with a
    suffix, as in `_copied`."""
    features.add("list_of_arrays")
    a = rng.choice(scope.arrays)
    rows, row = f"{name}_rows", f"{name}_row"
    entry = rng.choice([f"{a} * (j + 1.0)", f"np.sin({a}) * {f} + j", f"{a}.copy()"])
    emit(indent, f"{rows} = []")
    emit(indent, f"for j in range({rng.randint(2, 4)}):")
    emit(indent + 1, f"{rows}.append({entry})")
    walk = rng.choice(["for", "enumerate", "ends"])
    if walk == "for":
        emit(indent, f"for {row} in {rows}:")
        emit(indent + 1, f"{out} += 0.1 * np.sum({row} * {row})")
    elif walk == "enumerate":
        emit(indent, f"for j, {row} in enumerate({rows}):")
        emit(indent + 1, f"{out} += (j + 1) * {row}[0] * {f}")
    else:
        emit(indent, f"{out} += 0.1 * np.dot({rows}[0], {rows}[-1]) + len({rows})")


def _copied(rng, name, out, emit, features, indent) -> None:
    """A new list from the list (a copy, a slice, sorted, the list joined to itself), maybe
    extended by the list or by `+=` of a literal, then read: its sum and its ends. Its name is
    the list's with a suffix: the names `fresh` gives later blocks stay as they were."""
    features.add("list_copied")
    copy = f"{name}_copy"
    emit(indent, f"{copy} = " + rng.choice([
        f"{name}.copy()", f"list({name})", f"{name}[::2]", f"{name}[1:]", f"sorted({name})",
        f"sorted({name}, reverse=True)", f"{name} + {name}"]))
    grow = rng.choice(["extend", "plus", "none"])
    if grow == "extend":
        emit(indent, f"{copy}.extend({name})")
    elif grow == "plus":
        emit(indent, f"{copy} += [{out}, 0.5]")
    emit(indent, f"if len({copy}) > 0:")
    emit(indent + 1, f"{out} += 0.5 * sum({copy}) + {copy}[0] * {copy}[-1]")


def _edited(rng, name, out, emit, features, indent) -> None:
    """An entry inserted (at the front, before the last or in the middle), then pop(i) and/or
    remove(v) when the list has room, the ends read again."""
    features.add("list_edited")
    place = rng.choice(["0", "-1", f"len({name}) // 2"])
    emit(indent, f"{name}.insert({place}, 0.5 * {out})")
    edit = rng.choice(["pop", "remove", "both"])
    if edit in ("pop", "both"):
        emit(indent, f"if len({name}) > 1:")
        emit(indent + 1, f"{out} += 0.25 * {name}.pop({rng.choice(['0', '1', '-2'])})")
    if edit in ("remove", "both"):
        emit(indent, f"if len({name}) > 1:")
        emit(indent + 1, f"{name}.remove({name}[-1])")
    emit(indent, f"{out} += 1.5 * {name}[0] + {name}[-1]")


def _reordered(rng, name, out, emit, features, indent) -> None:
    """The list sorted (ascending or descending) or reversed in place, its ends read again.
    Entries tie only by coincidence (or as copies of one value, which move together), so
    finite differences do not cross a change of order."""
    features.add("list_sorted")
    emit(indent, f"{name}.{rng.choice(['sort()', 'sort(reverse=True)', 'reverse()'])}")
    emit(indent, f"{out} += 2.0 * {name}[0] + {name}[-1] * {name}[len({name}) // 2]")


def _pairs(rng, f, name, out, emit, features, indent) -> None:
    """A list of tuples appended from the list (a float and its int position, or two floats),
    walked by a for loop that unpacks them, read at an index, or read by np.asarray. Its name
    is the list's with a suffix: the names `fresh` gives later blocks stay as they were."""
    pairs, a, b = f"{name}_pairs", f"{name}_a", f"{name}_b"
    features.add("list_of_pairs")
    with_int = rng.random() < 0.5
    second = "k" if with_int else f"v * {f}"
    emit(indent, f"{pairs} = []")
    emit(indent, f"for k, v in enumerate({name}):")
    emit(indent + 1, f"{pairs}.append((np.sin(v) + {f}, {second}))")
    form = rng.choice(["loop", "index"] if with_int else ["loop", "index", "asarray"])
    if form == "loop":
        emit(indent, f"for {a}, {b} in {pairs}:")
        emit(indent + 1, f"{out} += {a} * ({b} + 1)")
    elif form == "index":
        emit(indent, f"{a}, {b} = {pairs}[len({pairs}) // 2]")
        emit(indent, f"{out} += {a} * {b} + {pairs}[-1][0]")
    else:
        features.add("list_of_pairs_asarray")
        emit(indent, f"{out} += np.sum(np.asarray({pairs})[:, 1] ** 2)")
    if rng.random() < PICK_CHANCE:  # drawn last: the pairs block is as it was before
        features.add("list_of_pairs_picked")
        emit(indent, f"if len({pairs}) > 0:")
        emit(indent + 1, f"{a}, {b} = {rng.choice(['min', 'max'])}({pairs})")
        emit(indent + 1, f"{out} += {a} * ({b} + 0.5)")


def _build(rng, scope, f, name, emit, features, indent) -> None:
    form = rng.choice(["comprehension", "range", "loop", "while"] if scope.arrays
                      else ["range", "while"])
    g = rng.choice(_MAPS)
    if form == "comprehension":
        features.add("list_comprehension")
        a = rng.choice(scope.arrays)
        emit(indent, f"{name} = [{g.format(v='v', f=f)} for v in {a}]")
    elif form == "range":
        features.add("list_comprehension_range")
        a = rng.choice(scope.arrays) if scope.arrays else None
        source = f"{a}[i]" if a else f"{f} * (i + 1)"
        stop = f"len({a})" if a else "3"
        keep = ""
        if rng.random() < 0.5:
            features.add("list_filtered")
            keep = " if i % 2 == 0"  # i = 0 is kept: never empty
        emit(indent, f"{name} = [{g.format(v=source, f=f)} for i in range({stop}){keep}]")
    elif form == "loop":
        features.add("list_append_loop")
        a = rng.choice(scope.arrays)
        emit(indent, f"{name} = [{f}]" if rng.random() < 0.5 else f"{name} = []")
        emit(indent, f"for i in range(len({a})):")
        emit(indent + 1, f"{name}.append({g.format(v=f'{a}[i]', f=f)})")
        if rng.random() < 0.5:
            features.add("list_append_branch")
            emit(indent + 1, "if i % 2 == 1:")
            emit(indent + 2, f"{name}.append({name}[-1] * {f})")
    else:
        features.add("list_while")
        emit(indent, f"{name} = [{f}]")
        emit(indent, f"while len({name}) < {rng.choice([3, 4, 6])}:")
        emit(indent + 1, f"{name}.append(np.sin({name}[-1]) + 0.5 * {f})")


# one-line reductions of a list {l} to a float: (feature, text)
_REDUCTIONS = {
    "sum": ("list_sum", "sum({l})"),
    "array": ("list_np_array", "np.sum(np.array({l}) ** 2)"),
    "max": ("list_max", "max({l}) + sum({l})"),
    "len": ("list_len", "sum({l}) / len({l})"),
    "index": ("list_index", "{l}[0] * {l}[-1] + {l}[len({l}) // 2]"),
}


def _reduce(rng, name, f, out, emit, features, indent) -> str:
    """Emit the reduction; return its form."""
    form = rng.choice(["sum", "array", "max", "len", "index", "iterate"])
    if form in _REDUCTIONS:
        feature, text = _REDUCTIONS[form]
        features.add(feature)
        emit(indent, f"{out} = {text.format(l=name)}")
        return form
    features.add("list_iterated")
    emit(indent, f"{out} = 0.0")
    emit(indent, f"for k, v in enumerate({name}):")
    emit(indent + 1, f"{out} += v * (k + 1)")
    return form
