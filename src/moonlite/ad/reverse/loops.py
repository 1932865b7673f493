"""Loop counters the pullback recovers by arithmetic instead of taping them.

A counted loop (`for i in range(...)`, a `while` loop stepping an integer by a constant) has a
header phi `i = phi [entry: init], [latch: i + c]`. Taping `i` and the block the header came from
costs two tape pushes and pops per iteration, the bulk of the pullback of a cheap loop body. For
such a loop the pullback instead keeps `i` in a local: the forward sweep stores each instance
there; the pullback steps it back (`i - c`) when it leaves the header along the latch, and knows it
came along the entry edge exactly when `i == init`. A loop inside another loop is entered many
times, so the instance the local held before each entry is pushed once per entry (not once per
iteration) and popped when the pullback leaves along the entry edge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...ir import ops
from ...ir.core import Block, Function, Value
from ...ir.types import IntType


@dataclass
class Induction:
    phi: ops.Phi
    init: Value        # the incoming value along the entry edge
    step: int          # i = i_previous + step along the latch
    entry: Block       # the predecessor outside the loop
    latch: Block       # the predecessor inside the loop
    reentered: bool    # the entry block is itself in a loop: the header is entered many times


def find_inductions(fn: Function, loops: list, preds: dict, loop_blocks: set) -> dict:
    """header -> Induction, for loop headers with one entry edge, one latch and a counter."""
    found = {}
    for loop in loops:
        header = loop.header
        edges = preds[header]
        if len(edges) != 2 or len(loop.latches) != 1:
            continue
        latch = loop.latches[0]
        entry = edges[0] if edges[1] is latch else edges[1]
        if entry in loop.body or latch not in edges:
            continue
        reentered = entry in loop_blocks
        if reentered and not isinstance(entry.terminator, ops.Jump):
            continue  # the once-per-entry push needs an edge of its own
        for phi in header.phis:
            step = _counter_step(phi, latch)
            if step:
                found[header] = Induction(phi, phi.value_from(entry), step, entry, latch,
                                          reentered)
                break
    return found


def _counter_step(phi: ops.Phi, latch: Block) -> Optional[int]:
    """c if the value phi takes along the latch is `phi + c` or `phi - c` for an int constant c."""
    if not isinstance(phi.result.type, IntType):
        return None
    update = getattr(phi.value_from(latch), "op", None)
    if not isinstance(update, (ops.Add, ops.Sub)):
        return None
    lhs, rhs = update.operands
    if isinstance(update, ops.Add) and rhs is phi.result:
        lhs, rhs = rhs, lhs
    c = ops.constant_value(rhs)
    if lhs is not phi.result or not isinstance(c, int) or isinstance(c, bool):
        return None
    return c if isinstance(update, ops.Add) else -c
