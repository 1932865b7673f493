"""Store-to-load forwarding of locals, within blocks.

The reverse pass keeps adjoints in locals (`LocalVar`) and reads, adds and writes them op by op:
a reverse rule's blocks are full of `store $adj v` followed by `load $adj`, and of stores a later
store in the same block overwrites unread. LLVM's mem2reg removes them, but only after numba has
typed and lowered each one, and forward mode over a reverse rule (Hessians) gives every float
local one more per direction. Forwarding them in the IR shrinks the gradient's code and, more,
the Hessian's (docs/benchmarks.md, "seventh latency session").

Within a block, a load of a local stored earlier in that block (with the type of the local)
becomes the stored value; a store that a later store of the same block overwrites before any
load is dropped, and so are stores of locals no load reads at all. Values never move between
blocks, so block-level analyses that come after (the vjp cut) see the same block structure.
"""

from __future__ import annotations

from .core import Function
from .ops import LoadLocal, StoreLocal


def forward_locals(fn: Function) -> Function:
    """Forward and drop local stores and loads of `fn`, in place (IR under construction)."""
    replaced: dict = {}  # a forwarded load's result -> the value it reads
    for block in fn.blocks:
        _forward_in_block(block, replaced)
    if replaced:
        _rewrite_uses(fn, replaced)
    _drop_unread_stores(fn)
    return fn


def _resolved(value, replaced: dict):
    while value in replaced:
        value = replaced[value]
    return value


def _forward_in_block(block, replaced: dict) -> None:
    stored: dict = {}  # local -> (the value last stored in this block, its store op)
    dead: set = set()  # ids of stores overwritten in this block before any load
    kept = []
    for op in block.ops:
        if isinstance(op, LoadLocal):
            last = stored.get(op.var)
            if last is not None and last[0].type == op.result.type:
                replaced[op.result] = last[0]
                continue
            stored.pop(op.var, None)  # this load reads the store: it is no longer dead
        elif isinstance(op, StoreLocal):
            value = _resolved(op.value, replaced)
            if value is not op.value:
                op.operands = (value,)
            earlier = stored.get(op.var)
            if earlier is not None:
                dead.add(id(earlier[1]))
            stored[op.var] = (value, op)
        kept.append(op)
    block.ops = [op for op in kept if id(op) not in dead]


def _rewrite_uses(fn: Function, replaced: dict) -> None:
    for op in fn.ops():
        if any(v in replaced for v in op.operands):
            op.operands = tuple(_resolved(v, replaced) for v in op.operands)


def _drop_unread_stores(fn: Function) -> None:
    read = {op.var for op in fn.ops() if isinstance(op, LoadLocal)}
    for block in fn.blocks:
        if any(isinstance(op, StoreLocal) and op.var not in read for op in block.ops):
            block.ops = [op for op in block.ops
                         if not (isinstance(op, StoreLocal) and op.var not in read)]
