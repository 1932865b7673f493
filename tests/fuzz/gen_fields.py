"""The wide profile's `@jitclass` instances whose fields the kernel writes after construction:
a state object built from floats in scope and advanced by a method in a loop (the method
assigning both float fields from both, and counting its calls in an int field), then perhaps
a field assigned in the kernel and another updated in place under a branch on a field. These
are what `ad/instance_fields.py` turns into local variables carried by the loop; the kernels
the generator wrote before only read fields of instances they built.

Like `gen_slices.py`, the block draws from its own random stream (`rng`): a seed's kernel
without the "fields" group is the same text as before the group existed.
"""

from __future__ import annotations

FIELD_FEATURES = frozenset({
    "field_method_loop", "field_assign", "field_inplace_branch", "field_counter",
})

_U_UPDATES = ("0.9 * self.u + c * np.tanh(self.w)", "self.u + 0.5 * math.sin(c * self.w)",
              "self.u * math.exp(-0.1 * c * c) + 0.2 * self.w")
_W_UPDATES = ("self.w - 0.3 * self.u * c", "0.8 * self.w + 0.1 * math.cos(self.u)",
              "np.tanh(self.w + c * self.u)")


def field_block(rng, scope, fresh, emit, features: set, prelude: list, indent: int = 1) -> str:
    """Emit the block (its class into `prelude`); return the name of the float it leaves."""
    cls = _state_class(rng, prelude)
    u0, w0 = (rng.choice(scope.floats) if scope.floats else "1.0" for _ in range(2))
    st = fresh("st")
    # clamped: the floats in scope may have grown huge or infinite, and the fields multiply
    # them (a clamp's tangent at a bound is that of the bound, 0; a tanh's would be 0 * inf)
    emit(indent, f"{st} = {cls}({_clamp(u0)}, {_clamp(w0)})")
    features.update(("field_method_loop", "field_counter"))
    if scope.arrays:
        v = fresh("v")
        emit(indent, f"for {v} in {rng.choice(scope.arrays)}:")
        emit(indent + 1, f"{st}.step({_clamp(v)})")
    else:
        i = fresh("i")
        emit(indent, f"for {i} in range({rng.randint(2, 4)}):")
        emit(indent + 1, f"{st}.step(0.5 * {_clamp(u0)} + {i})")
    if rng.random() < 0.5:
        features.add("field_assign")
        emit(indent, f"{st}.u = {st}.u * {_clamp(w0)} + 0.5")
    if rng.random() < 0.5:
        features.add("field_inplace_branch")
        emit(indent, f"if {st}.w > {u0}:")
        emit(indent + 1, f"{st}.w += np.tanh({st}.u)")
    out = fresh("fl")
    emit(indent, f"{out} = {st}.u * {st}.w + 0.01 * {st}.k")
    return out


def _clamp(name: str) -> str:
    return f"min(max({name}, -1.0), 1.0)"


def _state_class(rng, prelude: list) -> str:
    name = f"State{sum(line.startswith('class State') for line in prelude)}"
    prelude += ['@jitclass([("u", numba.float64), ("w", numba.float64), ("k", numba.int64)])',
                f"class {name}:", "    def __init__(self, u, w):", "        self.u = u",
                "        self.w = w", "        self.k = 0", "", "    def step(self, c):",
                f"        self.u = {rng.choice(_U_UPDATES)}",
                f"        self.w = {rng.choice(_W_UPDATES)}", "        self.k += 1", "", ""]
    return name
