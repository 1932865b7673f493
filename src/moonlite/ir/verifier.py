"""The IR verifier: the invariants every pass must preserve.

- each block ends in exactly one terminator, and holds no other;
- phis come first in their block, and their incoming blocks are exactly the block's predecessors;
- every operand is an argument of the function or the result of one of its ops, and its definition
  dominates the use (for a phi, the end of the incoming block);
- every op matches its schema (operand count and constraints, result constraint) and its own
  type rules (`Op.type_errors`).

`verify(fn)` raises `VerificationError` listing every problem, the first shown in its context.
"""

from __future__ import annotations

from ..errors import VerificationError
from .cfg import Dominators, predecessors, reachable
from .core import Argument, Function, Op
from .ops import Phi
from .printer import Namer, format_context


class _Problems:
    def __init__(self):
        self.items: list = []  # (op or None, message)

    def add(self, op, message: str) -> None:
        self.items.append((op, message))


def verify(fn: Function) -> Function:
    """Check `fn`; return it unchanged, or raise VerificationError showing the offending IR."""
    problems = _Problems()
    _check_structure(fn, problems)
    if not problems.items:
        _check_phis(fn, problems)
        _check_definitions(fn, problems)
        _check_schemas(fn, problems)
    if problems.items:
        raise VerificationError(_report(fn, problems))
    return fn


def _report(fn: Function, problems: _Problems) -> str:
    lines = [f"IR verification failed for function {fn.name}: {len(problems.items)} problem(s)"]
    for op, message in problems.items:
        lines.append(f"  - {message}")
    first_op = next((op for op, _ in problems.items if op is not None), None)
    if first_op is not None and first_op.block is not None:
        lines.append("at:")
        lines.append(format_context(first_op))
    return "\n".join(lines)


def _check_structure(fn: Function, problems: _Problems) -> None:
    if not fn.blocks:
        problems.add(None, "function has no blocks")
        return
    blocks = set(fn.blocks)
    for block in fn.blocks:
        if block.function is not fn:
            problems.add(None, f"block {block!r} does not belong to this function")
        if not block.ops or not block.ops[-1].IS_TERMINATOR:
            last = block.ops[-1] if block.ops else None
            problems.add(last, f"block {block!r} does not end in a terminator")
        for op in block.ops[:-1]:
            if op.IS_TERMINATOR:
                problems.add(op, "terminator in the middle of a block")
        for op in block.ops:
            if op.block is not block:
                problems.add(op, "op's block back-reference is wrong")
        for succ in block.successors():
            if succ not in blocks:
                problems.add(block.ops[-1], f"branch to a block outside the function: {succ!r}")
    if not problems.items and predecessors(fn)[fn.entry]:
        problems.add(fn.entry.ops[0], "the entry block must have no predecessors")


def _blocks(blocks, names: Namer) -> str:
    return "[" + ", ".join(sorted(names.block(b) for b in blocks)) + "]"


def _check_phis(fn: Function, problems: _Problems) -> None:
    preds = predecessors(fn)
    names = Namer(fn)
    for block in fn.blocks:
        seen_other = False
        for op in block.ops:
            if not isinstance(op, Phi):
                seen_other = True
                continue
            if seen_other:
                problems.add(op, "phi after a non-phi op")
            incoming = list(op.incoming_blocks)
            if len(incoming) != len(op.operands):
                problems.add(op, f"phi has {len(op.operands)} incoming values for "
                                 f"{len(incoming)} incoming blocks")
                continue
            if len(set(incoming)) != len(incoming):
                problems.add(op, "phi lists an incoming block twice")
            if set(incoming) != set(preds[block]):
                problems.add(op, f"phi incoming blocks {_blocks(incoming, names)} differ from "
                                 f"the block's predecessors {_blocks(preds[block], names)}")


def _definition_sites(fn: Function, problems: _Problems) -> dict:
    """Value -> (block, index) where it is defined; arguments map to (None, -1)."""
    sites: dict = {arg: (None, -1) for arg in fn.args}
    for block in fn.blocks:
        for i, op in enumerate(block.ops):
            if op.result is None:
                continue
            if op.result in sites:
                problems.add(op, "value defined twice")
            sites[op.result] = (block, i)
    return sites


def _check_definitions(fn: Function, problems: _Problems) -> None:
    sites = _definition_sites(fn, problems)
    dom = Dominators(fn)
    live = reachable(fn)
    for block in fn.blocks:
        if block not in live:
            continue
        for i, op in enumerate(block.ops):
            if isinstance(op, Phi) and len(op.operands) != len(op.incoming_blocks):
                continue  # reported by _check_phis
            for k, value in enumerate(op.operands):
                if value not in sites:
                    kind = "an argument of another function" if isinstance(value, Argument) \
                        else "not defined in this function"
                    problems.add(op, f"operand {k} is {kind}")
                    continue
                use_block, use_index = block, i
                if isinstance(op, Phi):
                    use_block, use_index = op.incoming_blocks[k], len(op.incoming_blocks[k].ops)
                if not _dominates(sites[value], use_block, use_index, dom):
                    problems.add(op, f"operand {k} is used where its definition does not dominate")


def _dominates(site, use_block, use_index, dom: Dominators) -> bool:
    def_block, def_index = site
    if def_block is None:
        return True
    if def_block is use_block:
        return def_index < use_index
    return dom.dominates(def_block, use_block)


def _check_schemas(fn: Function, problems: _Problems) -> None:
    for op in fn.ops():
        _check_schema(op, problems)


def _check_schema(op: Op, problems: _Problems) -> None:
    defs = op.OPERANDS
    variadic = bool(defs) and defs[-1].variadic
    fixed = len(defs) - (1 if variadic else 0)
    n = len(op.operands)
    if n < fixed or (not variadic and n != fixed):
        problems.add(op, f"{op.mnemonic()} takes {fixed}{'+' if variadic else ''} operands, has {n}")
        return
    for k, value in enumerate(op.operands):
        odef = defs[min(k, len(defs) - 1)]
        if not odef.constraint(value.type):
            problems.add(op, f"operand '{odef.name}' must be {odef.constraint.name}, "
                             f"is {value.type}")
    if op.RESULT is not None and not op.RESULT(op.result.type):
        problems.add(op, f"result must be {op.RESULT.name}, is {op.result.type}")
    for message in op.type_errors():
        problems.add(op, message)
