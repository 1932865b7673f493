"""The wide profile's order statistics and lookups (issue #20's users' numpy calls): a block
near the end of a kernel that reads arrays in scope through `np.sort`, `np.median`,
`np.percentile`/`np.quantile`, `np.interp` over a table built from them, `np.convolve` and
`np.correlate`, and `np.linalg.norm` with an order, each mixed into a float the kernel returns.
The derivative of each follows an entry to its sorted place or its interval: entries that come
close enough for the checker's steps to reorder them read as a kink, which the checker skips.

Like `gen_slices.py`, the block draws from its own random stream (`rng`) and reads names only:
a seed's kernel without the "orders" group is the same text as before the group existed.
"""

from __future__ import annotations

ORDER_FEATURES = frozenset({
    "order_sort", "order_median", "order_percentile", "order_interp", "order_convolve",
    "order_norm",
})


def order_block(rng, scope, fresh, emit, features: set, indent: int = 1) -> str:
    """Emit the block; return the name of the float it leaves (0.0 without arrays)."""
    out = fresh("od")
    emit(indent, f"{out} = 0.0")
    if not scope.arrays:
        return out
    f = rng.choice(scope.floats) if scope.floats else "1.0"
    for _ in range(rng.randint(1, 2)):
        a, b = rng.choice(scope.arrays), rng.choice(scope.arrays)
        form = rng.choice(["sort", "median", "percentile", "interp", "convolve", "norm"])
        features.add(f"order_{form}")
        if form == "sort":
            emit(indent, f"{out} += np.sum(np.sort(np.sin({a}) + {b}) "
                         f"* np.arange(1.0, {a}.shape[0] + 1.0))")
        elif form == "median":
            emit(indent, f"{out} += np.median({a} * {f}) + np.median(np.cos({b}))")
        elif form == "percentile":
            q = rng.choice([12.5, 37.0, 61.0, 88.0])
            emit(indent, f"{out} += np.percentile({a} * {a}, {q}) "
                         f"+ np.quantile(np.tanh({b}), {q / 100.0})")
        elif form == "interp":
            table = f"{out}_xp"
            emit(indent, f"{table} = np.cumsum(np.abs({a}) + 0.25)")
            emit(indent, f"{out} += np.interp(np.tanh({f}) * {table}[-1], {table}, np.sin({b}))")
        elif form == "convolve":
            emit(indent, f"{out} += np.sum(np.convolve({a}, {b}) ** 2) "
                         f"+ np.sum(np.correlate({a}, {b}[:2]))")
        else:
            order = rng.choice(["1", "3", "np.inf"])
            emit(indent, f"{out} += np.linalg.norm({a} + {f}, {order})")
    return out
