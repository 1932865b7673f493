"""Activity analysis: which values of a function may carry a derivative ("varied" values).

Reverse mode gives every float and float array an adjoint, but only values that depend on an
argument being differentiated can pass a nonzero one on. Knowing them lets the pass skip adjoint
work that cannot reach a gradient, and refuse only what matters (`refusals.py`): a namedtuple
built from `float(n)` holds no derivative, one built from `x` does.

The analysis is a forward fixpoint over the ops, conservative where memory is involved: every
writable float array counts as varied (a write through any alias may put a varied value in it),
so everything read from one does too; so does a structured array the function writes into.
Read-only arrays (constants) and arguments outside the active set that the function never
writes are not varied. Nor are ints, bools and tuples of them, whatever they are computed from:
`x.shape[0]`, `np.argmax(x)` and `int(x)` carry no derivative, so neither does a float made from
them (`np.arange(1.0, x.shape[0] + 1.0)` is a constant of the pullback, not a call to refuse).
"""

from __future__ import annotations

from ..ir import ops
from ..ir.core import Function
from ..ir.types import ArrayType, BoolType, IntType, TupleType, is_record_array
from ..ir.readonly import never_written
from ..rules.records import record_view
from ..rules.registry import has_adjoint, is_float_array
from .refusals import caller_instance


def varied_values(fn: Function, active=None, constant_arrays=frozenset()) -> set:
    """The values of `fn` that may depend on its arguments with indices in `active` (None:
    every argument)."""
    written_records = _written_record_arrays(fn)
    varied = {a for i, a in enumerate(fn.args)
              if ((active is None or i in active) and has_adjoint(a.type)
                  or _writable_float_array(a.type) or a in written_records)
              and a not in constant_arrays}
    varied |= written_records - set(fn.args)
    ops = [op for op in fn.ops() if op.result is not None]
    changed = True
    while changed:  # phis read values defined later: iterate to the fixpoint
        changed = False
        for op in ops:
            result = op.result
            if result in varied:
                continue
            if _writable_float_array(result.type) or not _derivative_free(result.type) \
                    and not caller_instance(op) and any(v in varied for v in op.operands):
                varied.add(result)
                changed = True
    return varied


def _derivative_free(t) -> bool:
    """Ints, bools and (nested) tuples of them: values that never carry a derivative."""
    if isinstance(t, TupleType):
        return all(_derivative_free(e) for e in t.elements)
    return isinstance(t, (IntType, BoolType))


def _written_record_arrays(fn: Function) -> set:
    """Structured arrays of float records the function writes into (a field write, or an
    njit call given one of their entries): a varied value may land in them, as in a writable
    float array."""
    candidates = [v for v in (*fn.args, *(op.result for op in fn.ops()))
                  if v is not None and is_record_array(v.type) and not v.type.readonly]
    written = {v for v in candidates if not never_written(fn, v)}
    # a record argument is read as `record_view(r)[0]`: written when its view is
    written |= {op.operands[0] for op in fn.ops() if isinstance(op, ops.Call)
                and op.callee is record_view and op.result in written}
    return written


def _writable_float_array(t) -> bool:
    return is_float_array(t) and isinstance(t, ArrayType) and not t.readonly
