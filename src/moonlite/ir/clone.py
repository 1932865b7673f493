"""Copying ops into another function: the step every IR-to-IR pass starts from."""

from __future__ import annotations

import copy

from . import ops
from .core import Op, OpResult

_BLOCK_ATTRIBUTES = {ops.Jump: ("target",), ops.Branch: ("if_true", "if_false")}


def clone_op(op: Op, values: dict, blocks: dict) -> Op:
    """A copy of `op` whose operands are `values[v]` and whose branch targets are `blocks[b]`.

    The copy gets a fresh result (recorded in `values`) and belongs to no block yet. Phis are
    copied without incoming values: their blocks may not exist yet when the phi is cloned."""
    new = copy.copy(op)
    new.block = None
    if isinstance(op, ops.Phi):
        new.operands, new.incoming_blocks = (), ()
    else:
        new.operands = tuple(values[v] for v in op.operands)
    for attr in _BLOCK_ATTRIBUTES.get(type(op), ()):
        setattr(new, attr, blocks[getattr(op, attr)])
    if op.result is not None:
        new.result = OpResult(op.result.type, new, op.result.hint)
        values[op.result] = new.result
    return new
