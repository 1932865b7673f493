"""Which array arguments a function never writes to.

An inactive argument (one no tangent is asked for) has a zero tangent. If the function may write
into it, that zero must be a real array the writes can land in; if it never does, the symbolic
`ZERO` is enough and no array is allocated. This analysis answers "never writes" conservatively:
it follows every value an argument's array can flow into (ops with the `VIEW` trait: slices,
phis, selects, reshapes, and the tuples built of it) and gives up (answers "may write") when one
of them is written (an op with the `WRITES` trait: a setitem, an njit call, a numpy call with
`out=`, an op it does not know) or escapes (a return, a raise, a store into a local).
"""

from __future__ import annotations

from . import ops
from .core import Function
from .traits import Trait
from .types import ArrayType, TupleType, is_record

# Ops that let an array escape to where this analysis cannot follow it: the caller.
_ESCAPES = (ops.Return, ops.Raise)


def never_written(fn: Function, arg) -> bool:
    """True if `fn` provably never writes into the array argument `arg` (or a view of it; a
    record argument is an array to this question: capture reads it through a view of it)."""
    if not (isinstance(arg.type, ArrayType) or is_record(arg.type) or _holds_arrays(arg.type)):
        return True
    users = value_users(fn)
    return not any(use_kind(op, position) == "write"
                   for value in views_of(users, [arg]) for op, position in users.get(value, ()))


def views_of(users: dict, roots):
    """`roots` and every value they flow into through views (slices, phis, selects,
    reshapes: uses `use_kind` calls "view"), each once; `users` is `value_users` of the function."""
    seen, work = set(), list(roots)
    while work:
        value = work.pop()
        if value in seen:
            continue
        seen.add(value)
        yield value
        for op, position in users.get(value, ()):
            if use_kind(op, position) == "view" and op.result is not None:
                work.append(op.result)


def value_users(fn: Function) -> dict:
    """value -> [(op reading it, operand position)] over the whole function."""
    users: dict = {}
    for op in fn.ops():
        for position, v in enumerate(op.operands):
            users.setdefault(v, []).append((op, position))
    return users


def use_kind(op, position: int) -> str:
    """'read' (harmless), 'view' (follow the result), or 'write' (may write or escape), from
    the op's traits (`ir/traits.py`: calls answer per callee, unknown ones `WRITES`)."""
    if isinstance(op, (ops.SetItem, ops.InplaceBinary)):
        return "write" if position == 0 else "read"
    if isinstance(op, _ESCAPES):
        return "write"
    traits = op.traits()
    if traits & Trait.WRITES:
        return "write"
    if traits & Trait.VIEW and _memory_result(op):
        return "view"  # a slice, a phi or select of arrays (or of tuples of them), a record
    if isinstance(op, ops.TupleGetItem) and _memory_result(op):
        return "view"  # an array entry of a tuple is that array
    if isinstance(op, ops.BuildTuple):
        # a tuple holds the array itself (`[W1, W2]` given to a helper becomes one): follow it
        return "view" if _memory_result(op) else "write"
    if isinstance(op, ops.GetItem) and position == 0 and is_record(op.result.type):
        return "view"  # an entry of a structured array points into it: a field write writes it
    return "read"


def _holds_arrays(t) -> bool:
    """A tuple with an array or a record among its entries (its entries are read out as
    views)."""
    return isinstance(t, TupleType) and any(_holds_memory(e) for e in t.elements)


def _holds_memory(t) -> bool:
    """An array, a record (a view into its array), or a tuple holding one of them."""
    return isinstance(t, ArrayType) or is_record(t) or _holds_arrays(t)


def _memory_result(op) -> bool:
    return op.result is not None and _holds_memory(op.result.type)
