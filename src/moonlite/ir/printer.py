"""The canonical text form of moonlite IR.

    func kernel(%x: array(float64, 1d, C), %n: int64) -> float64 {
    bb0:
      %s = const 0.0 : float64                            # kernel.py:4
      jump bb1
    bb1:                                                  # preds bb0, bb2
      %i = phi [bb0: %c0], [bb2: %i.1] : int64
      ...
    }

Names exist only here: a value is printed under its hint (the source variable it came from) when
that is unambiguous, with a suffix otherwise, and under a number when it has no hint. Every IR
error message is built from this printer, so errors always show IR; `parser.py` reads the text
back.
"""

from __future__ import annotations

from typing import Optional

from .core import Block, Function, Op, Value
from .ops import Branch, Call, Jump, MethodCall, Phi

_COMMENT_COLUMN = 56


class Namer:
    """Assigns printable names to values and blocks of one function, stable within one print."""

    def __init__(self, function: Optional[Function] = None):
        self._values: dict = {}
        self._used: set = set()
        self._counter = 0
        self._blocks: dict = {}
        if function is not None:
            for i, block in enumerate(function.blocks):
                self._blocks[block] = f"bb{i}"
            for arg in function.args:
                self.value(arg)
            for op in function.ops():
                if op.result is not None:
                    self.value(op.result)

    def value(self, v: Value) -> str:
        name = self._values.get(v)
        if name is None:
            name = self._fresh(v.hint)
            self._values[v] = name
        return "%" + name

    def block(self, b: Block) -> str:
        return self._blocks.get(b) or f"bb?{b._id}"

    def _fresh(self, hint: Optional[str]) -> str:
        if hint and hint not in self._used:
            self._used.add(hint)
            return hint
        while True:
            base = f"{hint}.{self._counter}" if hint else str(self._counter)
            self._counter += 1
            if base not in self._used:
                self._used.add(base)
                return base


def _operands(op: Op, names: Namer) -> str:
    if isinstance(op, Phi):
        return ", ".join(f"[{names.block(b)}: {names.value(v)}]" for b, v in op.incoming)
    if isinstance(op, (Call, MethodCall)):
        values = op.operands if isinstance(op, Call) else op.args
        npos = len(values) - len(op.kwnames)
        parts = [names.value(v) for v in values[:npos]]
        parts += [f"{k}={names.value(v)}" for k, v in zip(op.kwnames, values[npos:])]
        receiver = names.value(op.receiver) if isinstance(op, MethodCall) else ""
        return f"{receiver}{op.attributes()}({', '.join(parts)})"
    return ", ".join(names.value(v) for v in op.operands)


def _body(op: Op, names: Namer) -> str:
    mnemonic = op.mnemonic()
    if isinstance(op, (Call, MethodCall)):
        text = f"{mnemonic} {_operands(op, names)}"
    else:
        attrs = op.attributes()
        text = " ".join(part for part in (mnemonic, attrs, _operands(op, names)) if part)
    if isinstance(op, Jump):
        text += f" {names.block(op.target)}"
    elif isinstance(op, Branch):
        text += f", {names.block(op.if_true)}, {names.block(op.if_false)}"
    if op.result is not None:
        text = f"{names.value(op.result)} = {text} : {op.result.type}"
    return text


def _with_comment(text: str, comment: str) -> str:
    if not comment:
        return text
    return f"{text.ljust(_COMMENT_COLUMN - 2)}  # {comment}"


def format_op(op: Op, names: Optional[Namer] = None, indent: str = "") -> str:
    """One op on one line, with its source location as a trailing comment."""
    if names is None:
        fn = op.block.function if op.block is not None else None
        names = Namer(fn)
    loc = str(op.loc) if op.loc.line else ""
    return _with_comment(indent + _body(op, names), loc)


def _header(fn: Function, names: Namer) -> str:
    args = ", ".join(f"{names.value(a)}: {a.type}" for a in fn.args)
    # shown only when set, so that the text keeps everything lowering needs (parser.py)
    flags = " boundscheck" if fn.boundscheck else ""
    return _with_comment(f"func {fn.name}({args}) -> {fn.return_type}{flags} {{",
                         str(fn.loc) if fn.loc.line else "")


def _block_lines(fn: Function, block: Block, names: Namer, preds: dict, marker) -> list:
    pred_names = ", ".join(names.block(p) for p in preds.get(block, ()))
    lines = [_with_comment(f"{names.block(block)}:", f"preds {pred_names}" if pred_names else "")]
    for op in block.ops:
        line = format_op(op, names, indent="  ")
        if marker is not None and op is marker:
            line = "> " + line[2:] + "    <-- here"
        lines.append(line)
    return lines


def format_function(fn: Function, marker: Optional[Op] = None) -> str:
    """The whole function; `marker` flags one op (used by error messages)."""
    from .cfg import predecessors
    names = Namer(fn)
    preds = predecessors(fn)
    lines = [_header(fn, names)]
    for block in fn.blocks:
        lines.extend(_block_lines(fn, block, names, preds, marker))
    lines.append("}")
    return "\n".join(lines)


def format_context(op: Op, radius: int = 5) -> str:
    """The lines of the function around `op`, with `op` marked: what IR errors show."""
    fn = op.block.function if op.block is not None else None
    if fn is None:
        return "  " + format_op(op, Namer())
    lines = format_function(fn, marker=op).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("> "))
    lo, hi = max(0, at - radius), min(len(lines), at + radius + 1)
    shown = lines[lo:hi]
    if lo > 0:
        shown.insert(0, "  ...")
    if hi < len(lines):
        shown.append("  ...")
    return "\n".join(shown)
