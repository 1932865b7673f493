"""Which way control came into a merge block, found again by the pullback instead of taped.

A block with several predecessors records which one control came from (the block stack, an
int64 tape push per visit), so that its reverse can go back the same way. When the ways split at
a branch `br c, T, F` in the block's immediate dominator, and each predecessor is reached
through one side only (a side with several is split again by a branch below, as
`1.0 if t > 0 else (-1.0 if t < 0 else 0.0)`), the way taken follows from the conditions: the pullback reads `c` again (recomputed when it can be, as
`x[i] > m` from a re-read `x[i]` and a kept `m`; a hoisted loop-invariant test costs nothing;
else `c` is kept, one byte instead of eight) and branches on it. The reprojection kernel's
`if theta2 > 1e-12` pushed a block-stack entry for every observation.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import ops
from ...ir.cfg import Dominators
from ...ir.core import Block, Function, Value


@dataclass
class Choice:
    cond: Value        # the branch condition that decided the way
    if_true: object    # the predecessor reached when it was true, or a Choice among several
    if_false: object   # the same for false

    def conditions(self) -> list:
        return [self.cond] + [c for side in (self.if_true, self.if_false)
                              if isinstance(side, Choice) for c in side.conditions()]


def find_choices(fn: Function, preds: dict, loops: list, inductions: dict) -> dict:
    """merge block -> Choice, for the merge blocks whose way in branches decided."""
    dom = Dominators(fn)
    idom = dom.idom
    headers = {lp.header for lp in loops}
    found = {}
    for block in fn.blocks:
        ins = preds.get(block, [])
        if len(ins) < 2 or block in headers or block in inductions or block not in idom:
            continue
        decider = idom[block]
        if decider is block or _loops_around(decider, loops) != _loops_around(block, loops):
            continue
        choice = _decide(decider, list(ins), block, idom, dom, preds)
        if choice is not None:
            found[block] = choice
    return found


def _decide(decider: Block, ins: list, merge: Block, idom: dict, dom, preds: dict):
    """The Choice among predecessors `ins` of `merge` that `decider`'s branch (and branches
    below it) make, or None."""
    branch = decider.terminator
    if not isinstance(branch, ops.Branch) or branch.if_true is branch.if_false:
        return None
    sides = {True: [], False: []}
    for pred in ins:
        side = _side(pred, decider, branch, merge, dom, preds)
        if side is None:
            return None
        sides[side].append(pred)
    if not sides[True] or not sides[False]:
        return None
    ways = []
    for side, start in ((True, branch.if_true), (False, branch.if_false)):
        group = sides[side]
        if len(group) == 1:
            ways.append(group[0])
            continue
        below = _common_dominator(group, idom, dom)
        if below is None or below is merge or not dom.dominates(start, below):
            return None
        way = _decide(below, group, merge, idom, dom, preds)
        if way is None:
            return None
        ways.append(way)
    return Choice(branch.cond, ways[0], ways[1])


def _common_dominator(blocks: list, idom: dict, dom):
    candidate = blocks[0]
    while not all(dom.dominates(candidate, b) for b in blocks):
        parent = idom.get(candidate)
        if parent is None or parent is candidate:
            return None
        candidate = parent
    return candidate


def _side(pred: Block, decider: Block, branch: ops.Branch, merge: Block, dom,
          preds: dict) -> object:
    """True/False: `pred` is reached only through the branch's true/false side; None: unknown.
    A side counts when its first block is entered from the branch alone and dominates `pred`."""
    if pred is decider:  # the branch jumps straight into the merge block
        if branch.if_true is merge:
            return True
        return False if branch.if_false is merge else None

    def through(side: Block) -> bool:
        return side is not merge and preds.get(side) == [decider] and dom.dominates(side, pred)

    on_true, on_false = through(branch.if_true), through(branch.if_false)
    if on_true == on_false:
        return None
    return on_true


def _loops_around(block: Block, loops: list) -> frozenset:
    return frozenset(lp.header for lp in loops if block in lp.body)
