"""Reverse mode: one function holding a forward sweep and a pullback (Mooncake's reverse mode).

`reverse_transform(fn)` (for `fn` whose njit calls are already inlined: `inline.py`) builds

    fn_rev(*primals, dout) -> (out, (grad_0, grad_1, ...))

with one gradient per argument (a float for a float, an array for a float array, a tuple for a
tuple, none for the rest).

**Forward sweep.** The primal's blocks, copied, plus bookkeeping:
- every float array gets a *shadow* array of the same shape, made where the array is made and
  threaded through views, phis and tuples exactly like a forward-mode tangent; adjoints of arrays
  are accumulated in shadows (incremented, never overwritten): Mooncake's fdata;
- a block with several predecessors pushes which one control came from onto the block stack;
- a value the pullback reads is kept for it: in a local if its block runs at most once, on a
  tape (one per value) if its block is in a loop;
- a write (`a[i] = v`, `a += b`) first saves what it overwrites.

**Pullback.** One reverse block per forward block, visited in reverse: each op's adjoint rule runs
in reverse order, then the phis hand their adjoints to the incoming value of the edge actually
taken (popped from the block stack), writes are undone (so every input array ends up holding what
it held before the call) and the shadows of their targets are cleared where they were
overwritten. Scalar adjoints live in locals (Mooncake's rdata), reset to zero once their
definition is reached, so loop iterations do not leak into each other.

Adjoint rules: an elementwise primitive reuses its forward rule (the derivative with respect to
operand k is the forward rule applied to a unit tangent in k); structural and linear-algebra ops
have their own rules in `REVERSE_HANDLERS` below.

The pass is a package, one concern per module: `core` (state, entry points, handler tables),
`keep` (what the pullback reads: kept or recomputed), `adjoints` (adjoint locals and shadows),
`sweep` (the forward sweep), `pullback` (its control flow), `elementwise` and `memory` (adjoint
rules of the pass's own ops; primitives' adjoints are registered in `rules/`), `custom` (calls of
functions with a user's rule), `reads`, `loops`, `split`, `types`, `helpers`.
"""

from .core import (FORWARD_HANDLERS, REVERSE_HANDLERS, _CONTROL, _ReversePass,  # noqa: F401
                   reverse_transform, reverse_transform_split)
