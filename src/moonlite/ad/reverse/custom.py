"""Reverse mode through calls of functions that have a user's rule (`rules/custom.py`).

- A VJP rule: the forward sweep calls `fwd(*args) -> (out, residuals)` in place of the function
  and keeps `residuals` for the pullback (in a local, or on a tape inside a loop), which calls
  `bwd(residuals, dout)` and adds each cotangent to its argument's adjoint (a float's local, an
  array's shadow).
- A JVP rule alone: scalar functions only, by the elementwise path (the derivative in argument k
  is the JVP with a unit tangent in k); arrays are refused, pointing at `custom_vjp`.
- A non-differentiable function: nothing flows back. It must not write into its array
  arguments, since the pullback could not undo the write; this is checked on its IR.

A mixin of `_ReversePass`.
"""

from __future__ import annotations

from ...ir import ops
from ...ir.core import Op
import numpy as np

from ...debug import emit_output_check
from ...ir.types import ArrayType, FloatType, TupleType, none
from ...rules import RuleNotApplicable
from ...rules.custom import call_user_rule, lookup_custom
from ..opinfo import describe as _describe
from .helpers import add_cotangent
from .reads import active_operands
from .types import (Entry, has_adjoint as _has_adjoint, is_float as _is_float,
                            is_float_array, writable)
from .keep import ShadowOf


class CustomRuleAdjoints:
    """Forward-sweep and pullback handlers for calls of functions with a user's rule."""

    def fw_call(self, op: ops.Call) -> None:
        custom = lookup_custom(op.callee)
        if custom is not None and custom.nondifferentiable:
            self._refuse_writes_by_nondifferentiable(op, custom)
        if custom is None or custom.fwd is None or not _active(op):
            return self.fw_default(op)
        if op.kwnames:
            raise self.unsupported(op, f"a keyword-argument call of {_describe(op)}, which has a "
                                   "custom rule", "pass the arguments by position")
        args = [self.values[a] for a in op.positional]
        try:
            pair = call_user_rule(self.b, custom.fwd, args,
                                  f"the forward half of the VJP rule of {custom.name}")
        except RuleNotApplicable as exc:
            raise self.unsupported(op, f"differentiating {_describe(op)}: {exc}",
                                   "fix the custom VJP rule") from None
        if not (isinstance(pair.type, TupleType) and len(pair.type.elements) == 2
                and pair.type.elements[0] == op.result.type):
            raise self.unsupported(op, f"the VJP rule of {custom.name}: fwd returns {pair.type}, "
                                   f"not (out, residuals) with out of type {op.result.type}",
                                   "return (out, residuals) from fwd")
        out = self.b.tuple_getitem(pair, 0)
        emit_output_check(self.b, op.callee, args, out, op, custom.name)
        self.values[op.result] = out
        self.keep(op, self.b.tuple_getitem(pair, 1), key=("residuals", op))
        self.after_definition(op)
        if isinstance(op.result.type, ArrayType) and _has_adjoint(op.result.type):
            self._make_shadow(op.result, out)
        if isinstance(op.result.type, TupleType):  # entries' shadows, read back by the pullback
            self._refuse_nested(op.result, op)
            for k, t in enumerate(op.result.type.elements):
                if is_float_array(t) and not t.readonly:
                    shadow = self.b.call(np.zeros_like, [self.b.tuple_getitem(out, k)],
                                         type=writable(t))
                    self.shadows[Entry(op.result, k)] = shadow
                    self.keep(op, shadow, key=ShadowOf(Entry(op.result, k)))

    def rv_custom(self, op: ops.Call, custom) -> bool:
        """The pullback of a call with a user's rule; False if the generic path applies."""
        if custom.nondifferentiable:
            return True
        if ("residuals", op) in self.kept:
            self._pull_through_vjp(op, custom)
            return True
        if custom.jvp is not None and any(isinstance(v.type, ArrayType)
                                          for v in (*op.operands, op.result)):
            raise self.unsupported(op, f"reverse mode through {custom.name}, whose custom rule is "
                                   "a JVP, with array arguments or output",
                                   f"give {custom.name} a VJP rule as well: "
                                   "moonlite.custom_vjp(f, fwd, bwd)")
        return False

    def _pull_through_vjp(self, op: ops.Call, custom) -> None:
        dout = self._output_cotangent(op)
        residuals = self.recall(op, key=("residuals", op))
        if dout is not None:
            cotangents = self._call_bwd(op, custom, residuals, dout)
            operands = op.positional
            for k in active_operands(op):
                cotangent = self._checked_cotangent(op, custom, cotangents, k)
                shadow = self.shadow(operands[k]) if is_float_array(operands[k].type) else None
                if shadow is not None:
                    self.b.call(add_cotangent, [shadow, cotangent], type=none)
                elif _is_float(operands[k].type):
                    self.send(operands[k], cotangent)
        self.release(op, key=("residuals", op))

    def _output_cotangent(self, op: ops.Call):
        """The adjoint of the call's result as `bwd` takes it: a float, an array (the shadow),
        or a tuple of those (None for entries that carry none); None if nothing flows back."""
        result = op.result
        if _is_float(result.type):
            return self.take_adjoint(result)
        if isinstance(result.type, ArrayType):
            return self.shadow(result)
        items = []
        for k, t in enumerate(result.type.elements):
            key = ShadowOf(Entry(result, k))
            if _is_float(t):
                items.append(self.take_adjoint(Entry(result, k)))
            elif key in self.kept:
                items.append(self.recall(op, key=key))
                self.release(op, key=key)
            elif is_float_array(t):
                raise self.unsupported(op, f"a read-only array returned by {_describe(op)} in "
                                       "reverse mode", "return a writable array")
            else:
                items.append(self.b.const(None, none))
        return self.b.build_tuple(items)

    def _call_bwd(self, op: Op, custom, residuals, dout):
        try:
            cotangents = call_user_rule(self.b, custom.bwd, [residuals, dout],
                                        f"the backward half of the VJP rule of {custom.name}")
        except RuleNotApplicable as exc:
            raise self.unsupported(op, f"differentiating {_describe(op)}: {exc}",
                                   "fix the custom VJP rule") from None
        n = len(op.positional)
        if not (isinstance(cotangents.type, TupleType) and len(cotangents.type.elements) == n):
            raise self.unsupported(op, f"the VJP rule of {custom.name}: bwd returns "
                                   f"{cotangents.type}, not a tuple of {n} cotangent(s), one per "
                                   "argument", "return a tuple, e.g. (g,) for one argument")
        return cotangents

    def _checked_cotangent(self, op: Op, custom, cotangents, k: int):
        want = op.positional[k].type
        got = cotangents.type.elements[k]
        # a cotangent of a float is a float: an int one is the sign of a wrong rule (a
        # truncated value, or the derivative of something else)
        ok = (isinstance(want, FloatType) and isinstance(got, FloatType)) or \
            (isinstance(want, ArrayType) and isinstance(got, ArrayType)
             and got.ndim == want.ndim and isinstance(got.dtype, FloatType))
        if not ok:
            raise self.unsupported(op, f"the VJP rule of {custom.name}: the cotangent of argument "
                                   f"{k} has type {got}, the argument is {want}",
                                   "return a cotangent shaped like the argument")
        return self.b.tuple_getitem(cotangents, k)

    def _refuse_writes_by_nondifferentiable(self, op: ops.Call, custom) -> None:
        from ... import _numba as nb
        from ...ir.readonly import never_written
        arrays = [a for a in op.positional if isinstance(a.type, ArrayType)
                  and _has_adjoint(a.type) and not a.type.readonly]
        if not arrays or not nb.is_njit_dispatcher(op.callee):
            return
        callee = self.context.callee_ir(op.callee, tuple(a.type.to_numba() for a in op.positional))
        for param, arg in zip(callee.args, op.positional):
            if arg in arrays and not never_written(callee, param):
                raise self.unsupported(op, f"{custom.name}, declared non-differentiable, writing "
                                       f"into its array argument {param.name!r}",
                                       "return a new array instead, or write a custom VJP rule")


def _active(op: ops.Call) -> bool:
    return op.result is not None and _has_adjoint(op.result.type) and bool(active_operands(op))
