"""Where adjoints live: scalar adjoints in locals (reset where their value is defined),
array adjoints in shadow arrays made beside their primals, and sending a contribution to an
operand's adjoint (summed over broadcast axes).

A mixin of the reverse pass (`core._ReversePass`)."""

from __future__ import annotations

from __future__ import annotations

from typing import Optional

import numpy as np

from ...ir import ops
from ...ir.core import Argument, Op, Value
from ...ir.types import ArrayType, TupleType, int64, is_float_record
from ...rules.records import holder_type, record_holder
from .helpers import SUM_TO_SHAPE, same_size_or_raise
from .types import (has_adjoint as _has_adjoint, is_float as _is_float,
                    is_float_array as _is_float_array, has_shadow, leaves, path_of, shadow_type,
                    value_at)
from .keep import How, Kept, ShadowOf


class AdjointStore:
    def adjoint_var(self, old: Value) -> ops.LocalVar:
        var = self.adjoints.get(old)
        if var is None:
            var = self.adjoints[old] = ops.LocalVar(old.type, f"adj{len(self.adjoints)}")
        return var

    def accumulate(self, old: Value, contribution: Optional[Value]) -> None:
        """adjoint(old) += contribution, for a float `old` (arrays go through their shadow).

        An adjoint known to be zero here takes the contribution as it is: LLVM may not fold
        `0.0 + c` into `c` (they differ when c is -0.0), and these additions lengthened the
        pullback's dependency chains (rosenbrock's gradient: 4.1x the primal with them, 3.1x
        with fast-math `nsz`). Only the sign of a zero gradient can change."""
        if contribution is None or not _is_float(old.type):
            return
        var = self.adjoint_var(old)
        contribution = self.b.cast(contribution, old.type)
        zeros = self._zero_adjoints()
        if old in zeros:
            zeros.discard(old)
            self.b.store(var, contribution)
            return
        self.b.store(var, self.b.add(self.b.load(var), contribution))

    def take_adjoint(self, old: Value) -> Value:
        """Read adjoint(old) and reset it to zero (the definition of `old` is reached)."""
        var = self.adjoint_var(old)
        value = self.b.load(var)
        self.b.store(var, self.b.const(0.0, var.type))
        self._zero_adjoints().add(old)
        return value

    def _zero_adjoints(self, start=None) -> set:
        """Values whose adjoint is known to hold zero where the builder emits: those reset
        earlier in the current block, and (`start`, given when a block's pullback begins) values
        used only in their own block, whose adjoint the previous pass through that block reset.
        accumulate and take_adjoint are the adjoints' only writers after the entry block's
        initialisation; the set is forgotten when the builder moves to another block."""
        block, zeros = self._zeros_in_block
        if block is not self.b.block or start is not None:
            zeros = set(start or ())
            self._zeros_in_block = (self.b.block, zeros)
        return zeros

    def _used_only_in_own_block(self) -> set:
        """Float values of fn all of whose uses are ordinary ops of the block defining them (a
        phi's operand gets its adjoint on an edge, so it never counts)."""
        if self._local_values is None:
            home = {op.result: block for block in self.fn.blocks for op in block.ops
                    if op.result is not None and _is_float(op.result.type)}
            outside = {v for block in self.fn.blocks for op in block.ops for v in op.operands
                       if isinstance(op, ops.Phi) or home.get(v) is not block}
            self._local_values = {v for v in home if v not in outside}
        return self._local_values

    def shadow(self, old: Value) -> Optional[Value]:
        """In the pullback: the shadow array of the float array `old` (None for constants)."""
        if _is_float(old.type):  # a rule asking this of a number would send nothing back
            raise AssertionError(f"moonlite bug: the shadow of the number {old} was asked; "
                                 "numbers have adjoints (result_adjoint)")
        while old in self.shadow_alias:
            old = self.shadow_alias[old]
        if ShadowOf(old) not in self.kept:
            return None
        return self.recall(old, key=ShadowOf(old))

    def _shadow_arguments(self) -> None:
        for old, new in zip(self.fn.args, self.b.function.args):
            if is_float_record(old.type) and old in self.varied:
                self.shadows[old] = self.b.call(record_holder, [new], type=holder_type(old.type))
                self.keep(old, self.shadows[old], key=ShadowOf(old))
            elif old not in self.constant_arrays:
                self._make_shadow(old, new)
            if isinstance(old.type, TupleType) and _has_adjoint(old.type):
                for entry, t in leaves(old):
                    if _is_float_array(t):
                        array = value_at(self.b, new, path_of(entry))
                        self.shadows[entry] = self.b.call(np.zeros_like, [array],
                                                          type=shadow_type(t))
            if old in self.need:
                self.kept[old] = Kept(How.DIRECT, new)

    def _refuse_nested(self, value: Value, op: Optional[Op]) -> None:
        if any(isinstance(t, TupleType) and _has_adjoint(t) for t in value.type.elements):
            raise self.unsupported(op, f"nested tuples ({value.type}) in reverse mode",
                                   "pass the inner tuples' entries as separate arguments")

    def _make_shadow(self, old: Value, new: Value, shadow: Optional[Value] = None) -> None:
        # a read-only array is a constant unless it is an argument or a view of one
        if not has_shadow(old.type) or (old.type.readonly and shadow is None
                                               and not isinstance(old, Argument)):
            return
        if shadow is None:
            shadow = self.b.call(np.zeros_like, [new], type=shadow_type(old.type))
        self.shadows[old] = shadow
        self.keep(old, shadow, key=ShadowOf(old))

    def result_adjoint(self, result: Value) -> Optional[Value]:
        """The adjoint of a result: a float's (taken, reset) or an array's shadow."""
        if _is_float(result.type):
            return self.take_adjoint(result)
        return self.shadow(result)

    def send_to_every_entry(self, operand: Value, scalar: Value) -> None:
        """Every entry of `operand` gets `scalar` (the adjoint of a sum or mean of it)."""
        if operand.type.is_scalar:
            return self.send(operand, scalar)
        shadow = self.shadow(operand)
        if shadow is not None:
            self.b.inplace(ops.Add, shadow, scalar)

    def send(self, operand: Value, contribution: Value) -> None:
        """Add `contribution` (shaped like the op's result) to the adjoint of `operand`."""
        if _is_float(operand.type):
            if isinstance(contribution.type, ArrayType):
                contribution = self.b.call(np.sum, [contribution])
            self.accumulate(operand, contribution)
        elif _is_float_array(operand.type):
            shadow = self.shadow(operand)
            if shadow is not None:
                self.b.inplace(ops.Add, shadow, self._unbroadcast(contribution, operand, shadow))

    def _unbroadcast(self, contribution: Value, operand: Value, shadow: Value) -> Value:
        """Sum a contribution over the axes broadcasting stretched `operand` along: the leading
        axes it lacked, and (known only at run time) its axes of length 1."""
        ndim = operand.type.ndim
        while isinstance(contribution.type, ArrayType) and contribution.type.ndim > ndim:
            contribution = self.b.call(np.sum, [contribution],
                                       {"axis": self.b.const(0, int64)})
        if isinstance(contribution.type, ArrayType) and contribution.type.ndim == ndim > 0:
            # numba's `shadow += contribution` does not check shapes: never skip this
            helper = SUM_TO_SHAPE.get(ndim, same_size_or_raise)
            contribution = self.b.call(helper, [contribution, shadow])  # shaped like operand
        return contribution
