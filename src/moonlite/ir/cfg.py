"""Control-flow graph utilities: predecessors, reverse post-order, dominators, natural loops.

All functions take a `Function` and read the CFG from the block terminators, so they are always
in step with the IR (nothing is cached on the IR itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ops
from .core import Block, Function


def predecessors(fn: Function) -> dict:
    """Block -> list of predecessor blocks, each listed once, in block order."""
    preds: dict = {b: [] for b in fn.blocks}
    for block in fn.blocks:
        for succ in block.successors():
            if succ in preds and block not in preds[succ]:
                preds[succ].append(block)
    return preds


def reverse_post_order(fn: Function) -> list:
    """Reachable blocks in reverse post-order (a definition's block comes before its uses')."""
    seen, order = set(), []
    stack = [(fn.entry, iter(fn.entry.successors()))]
    seen.add(fn.entry)
    while stack:
        block, succs = stack[-1]
        nxt = next((s for s in succs if s not in seen), None)
        if nxt is None:
            order.append(block)
            stack.pop()
        else:
            seen.add(nxt)
            stack.append((nxt, iter(nxt.successors())))
    order.reverse()
    return order


def reachable(fn: Function) -> set:
    return set(reverse_post_order(fn))


def immediate_dominators(fn: Function) -> dict:
    """Block -> immediate dominator (the entry maps to itself), for reachable blocks.

    Cooper, Harvey and Kennedy's iterative algorithm: simple and fast for the CFGs numba makes.
    """
    order = reverse_post_order(fn)
    index = {b: i for i, b in enumerate(order)}
    preds = predecessors(fn)
    idom = {fn.entry: fn.entry}

    def intersect(a, b):
        while a is not b:
            while index[a] > index[b]:
                a = idom[a]
            while index[b] > index[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for block in order[1:]:
            done = [p for p in preds[block] if p in idom]
            new = done[0]
            for p in done[1:]:
                new = intersect(p, new)
            if idom.get(block) is not new:
                idom[block] = new
                changed = True
    return idom


class Dominators:
    """Answers `dominates(a, b)` for the blocks of one function."""

    def __init__(self, fn: Function):
        self.idom = immediate_dominators(fn)

    def dominates(self, a: Block, b: Block) -> bool:
        """True if every path from the entry to `b` passes through `a` (a block dominates itself)."""
        if b not in self.idom:
            return True  # unreachable blocks are dominated by everything
        while True:
            if b is a:
                return True
            parent = self.idom[b]
            if parent is b:
                return False
            b = parent


@dataclass
class Loop:
    """A natural loop: its header, the blocks of its body (header included), its latches."""

    header: Block
    body: set = field(default_factory=set)
    latches: list = field(default_factory=list)

    def exits(self) -> list:
        """Blocks outside the loop that the loop branches to, each once, in a stable order."""
        found: dict = {}
        for b in sorted(self.body, key=lambda blk: blk._id):
            for s in b.successors():
                if s not in self.body:
                    found.setdefault(s, None)
        return list(found)


def natural_loops(fn: Function) -> list:
    """Natural loops, one per header (loops sharing a header are merged), outermost first."""
    dom = Dominators(fn)
    preds = predecessors(fn)
    live = reachable(fn)
    loops: dict = {}
    for block in fn.blocks:
        if block not in live:
            continue
        for succ in block.successors():
            if dom.dominates(succ, block):
                loop = loops.setdefault(succ, Loop(succ, {succ}))
                loop.latches.append(block)
                _collect_body(loop, block, preds, live)
    return sorted(loops.values(), key=lambda lp: -len(lp.body))


def _collect_body(loop: Loop, latch: Block, preds: dict, live: set) -> None:
    work = [latch]
    while work:
        b = work.pop()
        if b in loop.body or b not in live:
            continue
        loop.body.add(b)
        work.extend(preds[b])


def loop_test(header: Block, preds: dict):
    """(the blocks from a loop's header to its test, the test's branch): numba's header holds
    the phis and jumps to a block of its own, entered only from it, that tests and branches.
    None if the walk meets a join or a block twice before a branch."""
    chain, block = [header], header
    while isinstance(block.terminator, ops.Jump):
        block = block.terminator.target
        if block in chain or len(preds[block]) != 1:
            return None
        chain.append(block)
    term = block.terminator
    return (chain, term) if isinstance(term, ops.Branch) else None
