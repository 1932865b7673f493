"""What AD passes ask of any op: its primitive (the rule-table key), its positional and keyword
operands, and a description for error messages. One place, shared by every pass."""

from __future__ import annotations

from ..ir import ops
from ..ir.core import Op
from ..rules import Attribute, Method


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


def describe(op: Op) -> str:
    types = ", ".join(str(v.type) for v in positional(op))
    if isinstance(op, ops.Call):
        return f"a call of {ops.short_name(op.callee)}({types})"
    if isinstance(op, ops.MethodCall):
        return f"the method .{op.method}() on ({types})"
    if isinstance(op, ops.GetAttr):
        return f"the attribute .{op.name} of {op.value.type}"
    return f"the operation {op.mnemonic()!r} on ({types})"


def hashable(obj) -> bool:
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def is_math_call(op: Op) -> bool:
    """A call of a `math` function by position: pure, scalar in, scalar out."""
    return isinstance(op, ops.Call) and getattr(op.callee, "__module__", None) == "math" \
        and not op.kwnames


_WRITE_NOTHING = (ops.Constant, ops.BinaryOp, ops.UnaryOp, ops.Cast, ops.Select, ops.GetAttr,
                  ops.GetItem, ops.TupleGetItem, ops.BuildSlice, ops.BuildTuple, ops.Phi,
                  ops.Jump, ops.Branch)


def writes_no_memory(op: Op) -> bool:
    """True for ops that cannot change an array's contents (reads stay valid across them)."""
    return isinstance(op, _WRITE_NOTHING) or is_math_call(op)

