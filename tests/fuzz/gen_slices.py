"""The wide profile's writes through slices that overlap what they read: a block near the end of
a kernel that shifts arrays in scope (`a[1:] = c * a[:-1]`), reverses one in place
(`a[:] = a[::-1]`), updates rows of a matrix from the row before (`M[i][:] += c * M[i - 1]`,
which Python runs as a write of the row with itself), copies a column onto another, and runs a
delay line (a buffer shifted at every step, as streaming filters keep their history). Reverse
mode once lost the adjoint of such writes (the value written shared the shadow of the region
it overwrote); no earlier generated kernel wrote one. Every form here means the same in numba
and NumPy (in-place operators on overlapping memory do not: moonlite refuses them, and they
are not written).

Like `gen_records.py`, the block draws from its own random stream (`rng`) and reads names only:
a seed's kernel without the "slices" group is the same text as before the group existed.
"""

from __future__ import annotations

SLICE_FEATURES = frozenset({
    "slice_shift", "slice_reverse", "slice_row_update", "slice_column_copy", "slice_delay_line",
})


def slice_block(rng, scope, fresh, emit, features: set, indent: int = 1) -> str:
    """Emit the block; return the name of the float it leaves."""
    f = rng.choice(scope.floats) if scope.floats else "1.0"
    c = f"0.5 * np.tanh({f})"
    out = fresh("sl")
    emit(indent, f"{out} = 0.0")
    for a in rng.sample(scope.arrays, min(len(scope.arrays), 2)):
        _vector(rng, a, c, out, emit, features, indent)
    for M in scope.mats[:1]:
        _matrix(rng, M, c, out, emit, features, indent)
    if rng.random() < 0.5 and scope.arrays:
        _delay_line(rng, rng.choice(scope.arrays), c, out, fresh, emit, features, indent)
    return out


def _vector(rng, a, c, out, emit, features, indent) -> None:
    if rng.random() < 0.6:
        features.add("slice_shift")
        emit(indent, f"{a}[1:] = {rng.choice([c + ' * ', ''])}{a}[:-1]")
        emit(indent, f"{a}[0] = {c}")
    else:
        features.add("slice_reverse")
        emit(indent, f"{a}[:] = {a}[::-1]")
    emit(indent, f"{out} += np.sum(np.sin({a}) * {a})")


def _matrix(rng, M, c, out, emit, features, indent) -> None:
    if rng.random() < 0.7:
        features.add("slice_row_update")
        emit(indent, f"for i in range(1, {M}.shape[0]):")
        emit(indent + 1, f"{M}[i][:] {rng.choice(['+=', '-='])} {c} * {M}[i - 1]")
        if rng.random() < 0.5:
            emit(indent + 1, f"{M}[i, :] = np.tanh({M}[i])")
    if rng.random() < 0.5:
        features.add("slice_column_copy")
        emit(indent, f"{M}[:, 0] = {M}[:, -1]")
    emit(indent, f"{out} += np.sum({M} * {M})")


def _delay_line(rng, a, c, out, fresh, emit, features, indent) -> None:
    features.add("slice_delay_line")
    h = fresh("hist")
    emit(indent, f"{h} = np.zeros({rng.choice([2, 3])})")
    emit(indent, f"for k in range(len({a})):")
    emit(indent + 1, f"{h}[1:] = {h}[:-1]")
    emit(indent + 1, f"{h}[0] = np.tanh({a}[k]) + {c}")  # bounded: the kernel may grow {a}
    emit(indent + 1, f"{out} += {h}[0] * {h}[-1]")
