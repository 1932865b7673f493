"""How rules see an op: its primitive (the registry key), its primals and keyword operands, and
a description for error messages. The passes ask the same questions (`ad/opinfo.py`)."""

from __future__ import annotations

from ..ir import ops
from ..ir.core import Op
from .define import Attribute, Method, RuleNotApplicable


def primitive(op: Op):
    """The key of the op's rules: the callee, `Method(name)`, `Attribute(name)` or the op class."""
    if isinstance(op, ops.Call):
        return op.callee
    if isinstance(op, ops.MethodCall):
        return Method(op.method)
    if isinstance(op, ops.GetAttr):
        return Attribute(op.name)
    return type(op)


def positional(op: Op) -> tuple:
    """The operands rules see as primals (a method's receiver first; no keyword arguments)."""
    if isinstance(op, ops.Call):
        return op.positional
    if isinstance(op, ops.MethodCall):
        return (op.receiver, *op.positional)
    return op.operands


def keyword_values(op: Op) -> tuple:
    if isinstance(op, (ops.Call, ops.MethodCall)):
        return tuple(op.keywords.values())
    return ()


def first_optional(op: Op) -> list:
    """The one optional argument most reductions take (an axis, an offset), by position or by
    keyword: `[value]`, or `[]` when absent."""
    return (list(keyword_values(op)) + list(positional(op)[1:]))[:1]


def describe(op: Op) -> str:
    types = ", ".join(str(v.type) for v in positional(op))
    if isinstance(op, ops.Call):
        return f"a call of {ops.short_name(op.callee)}({types})"
    if isinstance(op, ops.MethodCall):
        return f"the method .{op.method}() on ({types})"
    if isinstance(op, ops.GetAttr):
        return f"the attribute .{op.name} of {op.value.type}"
    return f"the operation {op.mnemonic()!r} on ({types})"


def name_of(op: Op) -> str:
    """The name of a call's callee or of a method (`max` for np.max and a.max())."""
    if isinstance(op, ops.MethodCall):
        return op.method
    return getattr(getattr(op, "callee", None), "__name__", "")


# --- what adjoints read (the `reads` field of a registration) ----------------------------------

def reads_first(op: Op) -> set:
    return {positional(op)[0]}


def reads_first_two(op: Op) -> set:
    return set(positional(op)[:2])


def reads_nothing(op: Op) -> set:
    return set()


def reads_all(op: Op) -> set:
    return set(positional(op)) | set(keyword_values(op))


def reads_options(op: Op) -> set:
    """Everything but the array: the axis, offset or index arguments."""
    return set(positional(op)[1:]) | set(keyword_values(op))


def checked_positional(rv, op: Op, arity: int, check, usage: str, fix: str) -> tuple:
    """The `arity` positional operands of `op` in a reverse adjoint, refused (naming the op)
    when there are others or keywords (`usage`: how to call it) or when `check(*operands)`
    raises RuleNotApplicable (`fix`: what to pass instead)."""
    args = positional(op)
    if len(args) != arity or keyword_values(op):
        raise rv.unsupported(op, f"{describe(op)} with other than {arity} positional "
                             f"arguments", usage)
    try:
        check(*args)
    except RuleNotApplicable as exc:
        raise rv.unsupported(op, f"{describe(op)} in reverse mode ({exc})", fix) from None
    return args
