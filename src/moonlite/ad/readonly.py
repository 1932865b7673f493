"""Which array arguments a function never writes to.

An inactive argument (one no tangent is asked for) has a zero tangent. If the function may write
into it, that zero must be a real array the writes can land in; if it never does, the symbolic
`ZERO` is enough and no array is allocated. This analysis answers "never writes" conservatively:
it follows every value an argument's array can flow into (views, phis, selects) and gives up
(answers "may write") when one of them is written, escapes into a tuple, a return or a call of
anything but a known numpy function, or is reached by an op it does not know.
"""

from __future__ import annotations

from ..ir import ops
from ..ir.core import Function
from ..ir.types import ArrayType

# Ops whose array result may alias their array operand (a view), so writes to it count.
_VIEW_OPS = (ops.GetItem, ops.GetAttr, ops.MethodCall, ops.Phi, ops.Select)
# Ops that read an array without writing it or letting it escape.
_READ_OPS = (ops.BinaryOp, ops.UnaryOp, ops.Cast, ops.Compare)
_WRITING_METHODS = {"fill", "sort", "resize", "put", "itemset"}


def never_written(fn: Function, arg) -> bool:
    """True if `fn` provably never writes into the array argument `arg` (or a view of it)."""
    if not isinstance(arg.type, ArrayType):
        return True
    users = _users(fn)
    seen, work = set(), [arg]
    while work:
        value = work.pop()
        if value in seen:
            continue
        seen.add(value)
        for op, position in users.get(value, ()):
            verdict = _use(op, position)
            if verdict == "write":
                return False
            if verdict == "view" and op.result is not None:
                work.append(op.result)
    return True


def _users(fn: Function) -> dict:
    users: dict = {}
    for op in fn.ops():
        for position, v in enumerate(op.operands):
            users.setdefault(v, []).append((op, position))
    return users


def _use(op, position: int) -> str:
    """'read' (harmless), 'view' (follow the result), or 'write' (may write or escape)."""
    if isinstance(op, ops.SetItem):
        return "write" if position == 0 else "read"
    if isinstance(op, ops.InplaceBinary):
        return "write" if position == 0 else "read"
    if isinstance(op, ops.MethodCall):
        if op.method in _WRITING_METHODS:
            return "write"
        return "view" if _array_result(op) else "read"
    if isinstance(op, ops.Call):
        return "read" if _numpy_reader(op) else "write"
    if isinstance(op, _VIEW_OPS):
        return "view" if _array_result(op) else "read"
    if isinstance(op, _READ_OPS) or isinstance(op, (ops.Branch, ops.TupleGetItem)):
        return "read"
    return "write"  # tuples, returns, raises, unknown ops: the array escapes


def _array_result(op) -> bool:
    return op.result is not None and isinstance(op.result.type, ArrayType)


def _numpy_reader(op: ops.Call) -> bool:
    """numpy functions and builtins read their array arguments (none of them writes, except
    through `out=`, which moonlite does not support)."""
    module = getattr(op.callee, "__module__", "") or ""
    name = getattr(op.callee, "__name__", "")
    if "out" in op.kwnames:
        return False
    if module.startswith("numpy") and not module.startswith("numpy.random"):
        return not _array_result(op) or name not in _VIEW_FUNCTIONS
    return op.callee in (len, min, max, abs, sum)


# numpy functions whose result may be a view of their argument: a write to it writes the input.
_VIEW_FUNCTIONS = {"reshape", "ravel", "transpose", "asarray", "ascontiguousarray", "squeeze",
                   "expand_dims", "swapaxes", "moveaxis", "atleast_1d", "atleast_2d", "diagonal",
                   "real", "imag"}

