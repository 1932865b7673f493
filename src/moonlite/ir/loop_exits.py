"""Loop-exit phis: a scalar a loop defines and code after the loop reads is read through a phi in
the exit block (LLVM's "loop-closed SSA" form, for scalars).

Why reverse mode wants it: the pullback reads a value where the forward sweep defined it. A loop
phi such as `r` in

    for j in range(m):
        r -= x[j] * power
    total += r * r

is defined in the loop header, so reverse mode kept it on a tape at every iteration (m + 1
pushes) although the pullback of the loop body never reads it: only `r * r`, after the loop,
does. Read through `r_exit = phi [header: r]` in the exit block, the value is kept once per
exit, and the loop itself keeps nothing for it. On polynomial least squares this halved the tape.

The phis are added where the exit block's predecessors all lie in the loop and the value is
defined in a block that dominates them (so the phi reads it on every incoming edge); other uses
are left as they are (still correct: only less tape saved).
"""

from __future__ import annotations

from . import ops
from .cfg import Dominators, natural_loops, predecessors
from .core import Function, Op, Value
from .types import BoolType, FloatType, IntType

_SCALARS = (FloatType, IntType, BoolType)


def add_loop_exit_phis(fn: Function) -> Function:
    """Add the phis in place, innermost loop first (a phi added at an inner loop's exit is
    itself a value of the enclosing loop); returns `fn`."""
    dom, preds = Dominators(fn), predecessors(fn)  # phis leave the CFG as it is
    for loop in sorted(natural_loops(fn), key=lambda lp: len(lp.body)):
        for exit_block in loop.exits():
            if all(p in loop.body for p in preds[exit_block]):
                _close_values_at(fn, loop, exit_block, preds[exit_block], dom)
    return fn


def _close_values_at(fn: Function, loop, exit_block, exit_preds, dom: Dominators) -> None:
    uses = _uses_outside(fn, loop)
    for value, users in uses.items():
        defined_in = value.op.block
        if not all(dom.dominates(defined_in, p) for p in exit_preds):
            continue
        reached = [op for op in users if _reached_only_through(op, value, exit_block, dom)]
        if not reached:
            continue
        phi = ops.Phi(value.type, [(p, value) for p in exit_preds], value.op.loc,
                      value.hint)
        exit_block.insert(len(exit_block.phis), phi)
        for op in reached:
            op.operands = tuple(phi.result if v is value else v for v in op.operands)


def _uses_outside(fn: Function, loop) -> dict:
    """Scalar values defined in `loop` -> the ops outside it that read them (a phi reading one
    along an edge from inside the loop reads it inside the loop: not counted)."""
    found: dict = {}
    for block in fn.blocks:
        if block in loop.body:
            continue
        for op in block.ops:
            for k, v in enumerate(op.operands):
                if not _defined_in(v, loop) or not isinstance(v.type, _SCALARS):
                    continue
                if isinstance(op, ops.Phi) and op.incoming_blocks[k] in loop.body:
                    continue
                found.setdefault(v, {})[op] = None
    return {v: list(users) for v, users in found.items()}


def _defined_in(value: Value, loop) -> bool:
    op = getattr(value, "op", None)
    return isinstance(op, Op) and op.block in loop.body


def _reached_only_through(op: Op, value: Value, exit_block, dom: Dominators) -> bool:
    """True if `op` (outside the loop) reads `value` only after leaving through `exit_block`;
    a phi reads an operand at the end of its incoming block."""
    if isinstance(op, ops.Phi):
        return all(dom.dominates(exit_block, b) for b, v in op.incoming if v is value)
    return dom.dominates(exit_block, op.block)
