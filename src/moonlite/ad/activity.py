"""Activity analysis: which values of a function may carry a derivative ("varied" values).

Reverse mode gives every float and float array an adjoint, but only values that depend on an
argument being differentiated can pass a nonzero one on. Knowing them lets the pass skip adjoint
work that cannot reach a gradient, and refuse only what matters (`refusals.py`): a namedtuple
built from `float(n)` holds no derivative, one built from `x` does.

The analysis is a forward fixpoint over the ops, conservative where memory is involved: every
writable float array counts as varied (a write through any alias may put a varied value in it),
so everything read from one does too. Read-only arrays (constants) and arguments outside the
active set that the function never writes are not varied.
"""

from __future__ import annotations

from ..ir.core import Function
from ..ir.types import ArrayType
from ..rules.registry import has_adjoint, is_float_array


def varied_values(fn: Function, active=None, constant_arrays=frozenset()) -> set:
    """The values of `fn` that may depend on its arguments with indices in `active` (None:
    every argument)."""
    varied = {a for i, a in enumerate(fn.args)
              if ((active is None or i in active) and has_adjoint(a.type)
                  or _writable_float_array(a.type)) and a not in constant_arrays}
    ops = [op for op in fn.ops() if op.result is not None]
    changed = True
    while changed:  # phis read values defined later: iterate to the fixpoint
        changed = False
        for op in ops:
            result = op.result
            if result in varied:
                continue
            if _writable_float_array(result.type) or any(v in varied for v in op.operands):
                varied.add(result)
                changed = True
    return varied


def _writable_float_array(t) -> bool:
    return is_float_array(t) and isinstance(t, ArrayType) and not t.readonly
