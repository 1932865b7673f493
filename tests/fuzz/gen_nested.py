"""The wide profile's tuples of tuples (issue #20: parameters kept as (weights, bias) pairs,
states as ((position, momentum), time)): a block near the end of a kernel that builds a tuple
of (float, array) pairs from the floats and arrays in scope, loops over it (`for c, v in
pairs`, an entry picked at run time), indexes it (`pairs[1][1][0]`), unpacks it by name, hands
it to an njit helper that unpacks it again, and carries a nested state around a loop. Reverse
mode refused nested tuples before; no earlier generated kernel wrote one.

Like `gen_slices.py`, the block draws from its own random stream (`rng`) and reads names only:
a seed's kernel without the "nested" group is the same text as before the group existed.
"""

from __future__ import annotations

NESTED_FEATURES = frozenset({
    "nested_loop", "nested_index", "nested_unpack", "nested_helper", "nested_state",
})


def nested_block(rng, scope, fresh, emit, features: set, prelude: list,
                 indent: int = 1) -> str:
    """Emit the block (and, into `prelude`, a helper it calls); return the name of the float
    it leaves (0.0 without arrays)."""
    out = fresh("nt")
    emit(indent, f"{out} = 0.0")
    if not scope.arrays:
        return out
    f = rng.choice(scope.floats) if scope.floats else "1.0"
    g = rng.choice(scope.floats) if scope.floats else "0.5"
    a, b = rng.choice(scope.arrays), rng.choice(scope.arrays)
    pairs = fresh("pairs")
    # both entries (float64, 1-D C array): a homogeneous tuple numba can index at run time
    emit(indent, f"{pairs} = (({f}, np.sin({a})), (0.5 * {g}, {b} * {f}))")
    for form in rng.sample(["loop", "index", "unpack", "helper", "state"], rng.randint(2, 4)):
        features.add(f"nested_{form}")
        if form == "loop":
            emit(indent, f"for c, v in {pairs}:")
            emit(indent + 1, f"{out} += c * np.sum(np.tanh(v))")
        elif form == "index":
            emit(indent, f"{out} += {pairs}[1][0] * {pairs}[0][1][0] + {pairs}[1][1][-1]")
        elif form == "unpack":
            emit(indent, f"(c0, v0), (c1, v1) = {pairs}")
            emit(indent, f"{out} += np.sum(v0 * v1) * c1 + c0")
        elif form == "helper":
            helper = _helper(fresh, prelude)
            emit(indent, f"{out} += {helper}({pairs}, {f})")
        else:
            _state_loop(out, a, f, fresh, emit, indent)
    return out


def _helper(fresh, prelude: list) -> str:
    name = fresh("unpair")
    prelude += ["@numba.njit", f"def {name}(pairs, w):",
                "    (c0, v0), (c1, v1) = pairs",
                "    return c0 * np.sum(v1 ** 2) - w * c1 * np.sum(np.cos(v0))", "", ""]
    return name


def _state_loop(out, a, f, fresh, emit, indent) -> None:
    """((u, w), v) updated step by step: a phi of a tuple of tuples around the loop."""
    st = fresh("st")
    emit(indent, f"{st} = (({f}, 0.25), {a} * 0.5)")
    emit(indent, f"for k in range(len({a})):")
    emit(indent + 1, f"(u, w), v = {st}")
    emit(indent + 1, f"{st} = ((w, 0.5 * u + np.tanh(v[k])), v * 0.9)")
    emit(indent, f"(u, w), v = {st}")
    emit(indent, f"{out} += u * w + np.sum(v)")
