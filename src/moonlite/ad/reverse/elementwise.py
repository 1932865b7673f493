"""Adjoints of elementwise primitives, derived from their forward rules: the derivative in
operand k is the rule's tangent for a unit tangent in k (or the partial a `defpartials` rule
keeps), multiplied by the result's adjoint.

A mixin of the reverse pass (`core._ReversePass`)."""

from __future__ import annotations

from __future__ import annotations

from typing import Optional

import numpy as np

from ...ir import ops
from ...ir.core import Op, Value
from ...ir.types import ArrayType, TupleType
from ...rules import RuleNotApplicable, lookup_jvp
from ...ir.traits import ELEMENTWISE
from ...rules import has_bounded_partials, is_one as _is_one
from ...rules.scalar import is_checked_division
from ...rules.strong_zeros import strong_product
from ..opinfo import (describe as _describe,
                     keyword_values as _keyword_values, positional as _positional,
                     primitive as _primitive)
from .reads import active_operands, known_calls_for, known_results, reads
from .types import (has_adjoint as _has_adjoint, is_float as _is_float, is_float_array as _is_float_array,
                            unit_tangent)


class ElementwiseAdjoints:
    def rv_elementwise(self, op: Op) -> None:
        """Adjoint of an elementwise primitive from its forward rule: the derivative with
        respect to operand k is the forward rule applied to a unit tangent in k."""
        result = op.result
        if result is None or not _has_adjoint(result.type):
            return  # an int, bool or none result: its derivative is zero (`refusals.py` vetted it)
        if not (_is_float(result.type) or _is_float_array(result.type)):
            if isinstance(op, (ops.Call, ops.MethodCall)):  # np.linalg.qr, np.linalg.svd
                raise self.unsupported(op, f"differentiating {_describe(op)}, which returns "
                                       f"{result.type}, in reverse mode: no reverse rule is "
                                       "registered", "write a custom rule (moonlite.custom_vjp), "
                                       "or mark the function non-differentiable "
                                       "(moonlite.nondifferentiable)")
            raise self.unsupported(op, f"the operation {op.mnemonic()!r} producing "
                                   f"{result.type} in reverse mode", "report this construct")
        operands = _positional(op)
        active = [k for k in active_operands(op) if operands[k] in self.varied]
        if any(v in self.varied for v in _keyword_values(op)):
            raise self.unsupported(op, f"{_describe(op)} given a value being differentiated by "
                                   "keyword, in reverse mode", "pass it by position")
        if _varied_tuples(op, self.varied):
            raise self.unsupported(op, f"differentiating {_describe(op)} with a tuple argument "
                                   "in reverse mode", "pass the tuple's entries as separate "
                                   "arguments, or make it an array")
        if not active:
            return  # constant operands only (np.arange(3.0), ...): nothing flows back
        if _mentions_array(op) and not _elementwise(op):
            raise self.unsupported(op, f"differentiating {_describe(op)} in reverse mode: no "
                                   "reverse rule is registered", "write a custom rule "
                                   "(moonlite.custom_vjp), or mark the function "
                                   "non-differentiable (moonlite.nondifferentiable)")
        rule = lookup_jvp(_primitive(op))
        if rule is None:
            raise self.unsupported(op, f"differentiating {_describe(op)}: no rule is registered",
                                   "write a custom rule (moonlite.custom_vjp), or mark the "
                                   "function non-differentiable (moonlite.nondifferentiable)")
        adjoint = self.result_adjoint(result)
        if adjoint is None:
            return
        read = reads(op)
        # operands the rule does not read (found by a dry run) are not kept: stand-ins
        primals = tuple(self.recall(v) if v in read else self.b.undef(v.type) for v in operands)
        keywords = dict(zip(getattr(op, "kwnames", ()), (self.recall(v) for v in
                                                          _keyword_values(op))))
        partials = getattr(rule, "partials", None)  # defpartials' rules: no unit tangents
        # math calls the primal already made (cos(x) beside sin(x)): read back, not called
        known = {key: self.recall(v) for key, v in known_results(op).items() if v in read}
        self.b.known_calls = known_calls_for(known, primals)
        try:
            derivatives = [(k, self._derivative(op, rule, partials, primals, keywords, k))
                           for k in active]
        finally:
            self.b.known_calls = {}
        for k, derivative in derivatives:
            if derivative is None:
                continue
            if _is_one(derivative):
                self.send(operands[k], adjoint)  # d(x + y)/dx: the adjoint itself
                continue
            if self._plain_product(rule, primals, derivative, op):
                # finite partials: a plain product is exact (an overflow's nan is rerun)
                self.send(operands[k], self.b.mul(adjoint, derivative))
            else:  # a zero factor gives exactly zero, even against an infinite one
                self.send(operands[k], strong_product(self.b, adjoint, derivative))

    def _derivative(self, op: Op, rule, partials, primals: tuple, keywords: dict, k: int):
        try:
            return (self._partial(partials[k], primals) if partials is not None
                    else self._derivative_by_unit(rule, primals, keywords, k))
        except RuleNotApplicable as exc:
            raise self.unsupported(op, f"differentiating {_describe(op)}: {exc}",
                                   "write a custom rule for this signature") from None

    def _partial(self, partial, primals: tuple) -> Optional[Value]:
        if partial is None:
            raise RuleNotApplicable("the argument is declared non-differentiable")
        return partial(self.b, *primals)

    def _derivative_by_unit(self, rule, primals: tuple, keywords: dict, k: int):
        """The derivative in operand k from a forward rule: its tangent for a unit tangent in k
        (the rule's output broadcasts to the result's shape)."""
        unit = [None] * len(primals)
        unit[k] = unit_tangent(self.b, primals[k])
        derivative = rule(self.b, primals, tuple(unit), keywords)
        if derivative is None:
            return None
        derivative = _without_unit_factor(derivative, unit[k])
        return self.b.const(1.0) if derivative is unit[k] else derivative

    def _plain_product(self, rule, primals: tuple, derivative: Value, primal_op: Op) -> bool:
        """A derivative that is finite wherever the primals are: a finite constant (the -1 of a
        subtraction), or partials declared bounded, of scalars. Arrays multiply strongly even
        then: array code computes every entry, masked ones too, so a primal entry may itself be
        nan or inf (`np.where(d > 0, np.sqrt(d) * c, 0)`: the adjoint of `c` gets 0 * nan from
        the entries `where` drops; fuzz, wide profile, seeds 78, 168, 180, 234).

        Bounded partials are finite only where the primals are: after an overflow (a primal
        of inf that the result reads only through a saturated tanh, say) a zero adjoint times
        an infinite partial is nan. The strong-zeros variant of the pass (`strong_zeros`)
        guards these products too; the API reruns a gradient with it when one has a nan."""
        op = getattr(derivative, "op", None)
        if isinstance(op, ops.Neg):
            op = getattr(op.value, "op", None)
        if isinstance(op, ops.Constant) and isinstance(op.value, (int, float)) \
                and np.isfinite(op.value):
            return True
        if self.strong_zeros:
            return False
        if is_checked_division(primal_op):
            # the primal's own scalar `/` raised for a zero divisor: 1/y and -x/y**2 are finite
            # past it, barring overflow, as a product's partials are (the zero guards were a
            # fifth of the reprojection residual's gradient)
            return True
        arrays = isinstance(derivative.type, ArrayType) or any(
            isinstance(v.type, ArrayType) for v in primals)
        return not arrays and has_bounded_partials(rule, primals)


def _elementwise(op: Op) -> bool:
    """Ops whose result entry k depends only on the operands' entries k (after broadcasting):
    for them the forward rule's tangent of a unit input is the diagonal of the Jacobian."""
    return bool(op.traits() & ELEMENTWISE)


def _without_unit_factor(derivative: Value, unit: Value) -> Value:
    """`d` for a derivative the rule built as `unit * d` or `d * unit` (most rules multiply the
    tangent by the partial derivative): 1 * d is d, and an array product costs a pass."""
    op = getattr(derivative, "op", None)
    if isinstance(op, ops.Mul) and unit in op.operands:
        other = op.rhs if op.lhs is unit else op.lhs
        if other.type == derivative.type:
            return other
    return derivative


def _varied_tuples(op: Op, varied: set) -> list:
    """Positions of tuple operands holding a derivative (no elementwise rule takes tuples)."""
    return [k for k, v in enumerate(_positional(op)) if isinstance(v.type, TupleType)
            and _has_adjoint(v.type) and v in varied]


def _mentions_array(op: Op) -> bool:
    values = list(op.operands) + ([op.result] if op.result is not None else [])
    return any(isinstance(v.type, ArrayType) for v in values)
