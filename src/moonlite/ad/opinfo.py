"""What AD passes ask of any op: its primitive (the registry key), its positional and keyword
operands and a description for error messages (the rules' own answers, `rules/operands.py`),
and whether it may write memory (its traits)."""

from __future__ import annotations

from ..ir import ops
from ..ir.core import Op
from ..ir.traits import Trait
from ..rules.operands import describe, keyword_values, positional, primitive  # noqa: F401


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


def writes_no_memory(op: Op) -> bool:
    """True for ops that cannot change an array's contents (reads stay valid across them)."""
    return not op.traits() & Trait.WRITES
