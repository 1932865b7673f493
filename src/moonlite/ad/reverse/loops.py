"""Loop counters the pullback recovers by arithmetic instead of taping them.

A counted loop (`for i in range(...)`, a `while` loop stepping an integer by a constant) has a
header phi `i = phi [entry: init], [latch: i + c]`. Taping `i` and the block the header came from
costs two tape pushes and pops per iteration, the bulk of the pullback of a cheap loop body. For
such a loop the pullback instead keeps `i` in a local: the forward sweep stores each instance
there; the pullback steps it back (`i - c`) when it leaves the header along the latch, and knows it
came along the entry edge exactly when `i == init`. A loop inside another loop is entered many
times, so the instance the local held before each entry is pushed once per entry (not once per
iteration) and popped when the pullback leaves along the entry edge. Unless every run of the loop
ends with the same counter: a `for i in range(init, n)` loop whose `init` and `n` do not change
in the enclosing loops, and which is left only by its test, ends each run at `max(init, n)`; the
pullback sets the counter to that when it leaves along the entry edge, and nothing is pushed
(the kinematic chain's 3x3 products: 13 pushes a link).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...ir import ops
from ...ir.cfg import loop_test
from ...ir.core import Block, Function, Op, Value
from ...ir.types import IntType, TupleType


@dataclass
class Induction:
    phi: ops.Phi
    init: Value        # the incoming value along the entry edge
    step: int          # i = i_previous + step along the latch
    entry: Block       # the predecessor outside the loop
    latch: Block       # the predecessor inside the loop
    reentered: bool    # the entry block is itself in a loop: the header is entered many times
    bound: Optional[Value] = None  # n in `i < n` (step 1) when every run ends at max(init, n)


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
                ind = Induction(phi, phi.value_from(entry), step, entry, latch, reentered)
                if reentered:
                    ind.bound = _same_end_every_run(ind, loop, loops, preds)
                found[header] = ind
                break
    return found


def _same_end_every_run(ind: Induction, loop, loops: list, preds: dict) -> Optional[Value]:
    """`n` if the loop is `i = init; while i < n: ...; i += 1`, left only by that test, with
    `init` and `n` defined outside every loop around it: each run then ends at max(init, n)."""
    if ind.step != 1:
        return None
    found = loop_test(loop.header, preds)
    if found is None:
        return None
    chain, test = found
    block = chain[-1]
    if test.if_true not in loop.body or test.if_false in loop.body:
        return None
    cond = getattr(test.cond, "op", None)
    if not isinstance(cond, ops.Lt) or cond.lhs is not ind.phi.result:
        return None
    exiting = [b for b in loop.body if any(s not in loop.body for s in b.successors())]
    if exiting != [block]:
        return None  # a break: runs may end anywhere
    around = set().union(*(lp.body for lp in loops if loop.header in lp.body and lp is not loop))
    if not (_fixed(ind.init, around) and _fixed(cond.rhs, around)):
        return None
    return cond.rhs


def _fixed(v: Value, around: set) -> bool:
    """True if `v` has the same value in every iteration of the loops `around`: defined outside
    them, a constant, or integer arithmetic on the shape of an array defined outside them
    (`range(x.shape[0])` evaluates `x.shape[0]` in the enclosing loop's body)."""
    op = getattr(v, "op", None)
    if not isinstance(op, Op) or op.block not in around or isinstance(op, ops.Constant):
        return True
    if isinstance(op, ops.GetAttr) and op.name in ("shape", "size", "ndim"):
        return _fixed(op.value, around)
    if isinstance(op, (ops.TupleGetItem, ops.Add, ops.Sub, ops.Mul)) \
            and isinstance(v.type, (IntType, TupleType)):
        return all(_fixed(u, around) for u in op.operands)
    return False


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
