"""The IR builder: the one way passes and the importer create IR.

A builder has an insertion block and a current source location; each method creates one op there
and returns its result value. Result types may be omitted wherever numba can infer them
(`typing.py`), which keeps AD passes free of type bookkeeping.
"""

from __future__ import annotations

import contextlib
from typing import Optional, Sequence

from ..errors import SourceLoc
from . import ops, typing
from .core import Argument, Block, Function, Op, Value
from .types import NoneType, SliceType, Type, from_numba
from .._numba import typeof


class Builder:
    def __init__(self, function: Function):
        self.function = function
        self.block: Optional[Block] = None
        self._before_terminator = False
        self._before_op: Optional[Op] = None
        self.loc: SourceLoc = function.loc
        # (callee, operands) -> Value: a pure call that `call` returns instead of emitting it
        # again (set by forward mode while a rule runs: see _ForwardPass._apply)
        self.known_calls: dict = {}

    # --- functions and blocks ------------------------------------------------------------------

    @classmethod
    def new_function(cls, name: str, argtypes: Sequence[Type], argnames: Sequence[str],
                     return_type: Type, **kwargs) -> "Builder":
        args = [Argument(t, i, n) for i, (t, n) in enumerate(zip(argtypes, argnames))]
        return cls(Function(name, args, return_type, **kwargs))

    def new_block(self, hint: Optional[str] = None) -> Block:
        return self.function.add_block(Block(hint))

    def position_at_end(self, block: Block) -> None:
        self.block = block
        self._before_terminator = False
        self._before_op = None

    @contextlib.contextmanager
    def before(self, op: Op):
        """Emit just before `op`, in its block, inside the `with` (a pass rewriting a function
        in place); then where the builder was."""
        saved = self.block, self._before_terminator, self._before_op
        self.block, self._before_terminator, self._before_op = op.block, False, op
        try:
            yield
        finally:
            self.block, self._before_terminator, self._before_op = saved

    @contextlib.contextmanager
    def before_terminator_of(self, block: Block):
        """Emit before `block`'s terminator inside the `with`, then where the builder was."""
        saved = self.block, self._before_terminator, self._before_op
        self.position_before_terminator(block)
        try:
            yield
        finally:
            self.block, self._before_terminator, self._before_op = saved

    def position_before_terminator(self, block: Block) -> None:
        """Insert before `block`'s terminator: where copies for a successor's phis go."""
        self.block = block
        self._before_terminator = True
        self._before_op = None

    def emit(self, op: Op) -> Op:
        if self.block is None:
            raise RuntimeError("builder has no insertion block")
        if getattr(self, "_before_op", None) is not None:
            return self.block.insert(self.block.ops.index(self._before_op), op)
        if getattr(self, "_before_terminator", False) and self.block.terminator is not None:
            return self.block.insert(len(self.block.ops) - 1, op)
        if self.block.terminator is not None:
            raise RuntimeError(f"block {self.block!r} is already terminated")
        return self.block.append(op)

    def _value(self, op: Op) -> Value:
        return self.emit(op).result

    # --- constants -----------------------------------------------------------------------------

    def const(self, value, type: Optional[Type] = None, hint=None) -> Value:
        if type is None:
            type = from_numba(typeof(value))
        return self._value(ops.Constant(value, type, self.loc, hint))

    def global_ref(self, obj, type: Type, hint=None) -> Value:
        return self._value(ops.GlobalRef(obj, type, self.loc, hint))

    def undef(self, type: Type) -> Value:
        return self._value(ops.Undef((), type, self.loc))

    # --- arithmetic ----------------------------------------------------------------------------

    def binary(self, cls: type, lhs: Value, rhs: Value, type: Optional[Type] = None,
               hint=None, checked: bool = False) -> Value:
        if type is None:
            type = typing.call_result_type(cls.PYFUNC, (lhs.type, rhs.type))
        return self._value(cls(lhs, rhs, type, self.loc, hint, checked))

    def add(self, lhs, rhs, hint=None):
        return self.binary(ops.Add, lhs, rhs, hint=hint)

    def sub(self, lhs, rhs, hint=None):
        return self.binary(ops.Sub, lhs, rhs, hint=hint)

    def mul(self, lhs, rhs, hint=None):
        return self.binary(ops.Mul, lhs, rhs, hint=hint)

    def div(self, lhs, rhs, hint=None):
        return self.binary(ops.TrueDiv, lhs, rhs, hint=hint)

    def unary(self, cls: type, value: Value, type: Optional[Type] = None, hint=None) -> Value:
        if type is None:
            type = typing.call_result_type(cls.PYFUNC, (value.type,))
        return self._value(cls(value, type, self.loc, hint))

    def neg(self, value, hint=None):
        return self.unary(ops.Neg, value, hint=hint)

    def inplace(self, binop: type, target: Value, value: Value, hint=None) -> Value:
        return self._value(ops.InplaceBinary(binop, target, value, self.loc, hint))

    def cast(self, value: Value, type: Type, hint=None) -> Value:
        if value.type == type:
            return value
        return self._value(ops.Cast(value, type, self.loc, hint))

    def select(self, cond: Value, if_true: Value, if_false: Value, hint=None) -> Value:
        return self._value(ops.Select(cond, if_true, if_false, self.loc, hint))

    # --- calls and attributes ------------------------------------------------------------------

    def call(self, callee, args: Sequence[Value], kwargs: Optional[dict] = None,
             type: Optional[Type] = None, hint=None) -> Value:
        kwargs = kwargs or {}
        if not kwargs and self.known_calls:
            known = self.known_calls.get((id(callee), tuple(map(id, args))))
            if known is not None and (type is None or type == known.type):
                return known
        if type is None:
            type = typing.call_result_type(callee, [a.type for a in args],
                                           {k: v.type for k, v in kwargs.items()})
        op = ops.Call(callee, [*args, *kwargs.values()], type, tuple(kwargs), self.loc, hint)
        return self._value(op)

    def method_call(self, method: str, receiver: Value, args: Sequence[Value] = (),
                    kwargs: Optional[dict] = None, type: Optional[Type] = None,
                    hint=None) -> Value:
        kwargs = kwargs or {}
        if type is None:
            type = typing.method_result_type(receiver.type, method, [a.type for a in args],
                                             {k: v.type for k, v in kwargs.items()})
        op = ops.MethodCall(method, receiver, [*args, *kwargs.values()], type, tuple(kwargs),
                            self.loc, hint)
        return self._value(op)

    def getattr(self, value: Value, name: str, type: Optional[Type] = None, hint=None) -> Value:
        if type is None:
            type = typing.attribute_type(value.type, name)
        return self._value(ops.GetAttr(value, name, type, self.loc, hint))

    # --- arrays, tuples, slices ----------------------------------------------------------------

    def getitem(self, value: Value, index: Value, type: Optional[Type] = None, hint=None):
        if type is None:
            import operator
            type = typing.call_result_type(operator.getitem, (value.type, index.type))
        return self._value(ops.GetItem(value, index, type, self.loc, hint))

    def setitem(self, target: Value, index: Value, value: Value) -> Op:
        return self.emit(ops.SetItem(target, index, value, self.loc))

    def tuple_getitem(self, tup: Value, index: int, hint=None) -> Value:
        return self._value(ops.TupleGetItem(tup, index, self.loc, hint))

    def build_tuple(self, items: Sequence[Value], hint=None, named=None) -> Value:
        """A tuple of `items`; a namedtuple if `named` (its numba type) is given."""
        return self._value(ops.BuildTuple(items, self.loc, hint, named))

    def build_slice(self, start: Value, stop: Value, step: Value, hint=None) -> Value:
        # numba types a slice with a None step as a two-member slice: a[:n] of a C array is
        # C, and reshaping it works (with three members it would be "A", and would not)
        members = 2 if isinstance(step.type, NoneType) else 3
        return self._value(ops.BuildSlice(start, stop, step, SliceType(members), self.loc, hint))

    # --- SSA and control flow ------------------------------------------------------------------

    def phi(self, type: Type, block: Optional[Block] = None, hint=None) -> ops.Phi:
        """A phi at the start of `block` (default: the insertion block), after existing phis.

        Returns the op so that incoming values can be added once their blocks exist."""
        block = block or self.block
        phi = ops.Phi(type, (), self.loc, hint)
        block.insert(len(block.phis), phi)
        return phi

    def jump(self, target: Block) -> None:
        self.emit(ops.Jump(target, self.loc))

    def branch(self, cond: Value, if_true: Block, if_false: Block) -> None:
        self.emit(ops.Branch(cond, if_true, if_false, self.loc))

    def ret(self, value: Value) -> None:
        self.emit(ops.Return(value, self.loc))

    def raise_(self, exc_class, args: Sequence[Value] = ()) -> None:
        self.emit(ops.Raise(exc_class, args, self.loc))

    # --- locals and tapes (AD passes) -----------------------------------------------------------

    def load(self, var: "ops.LocalVar", hint=None) -> Value:
        return self._value(ops.LoadLocal(var, self.loc, hint))

    def store(self, var: "ops.LocalVar", value: Value) -> None:
        self.emit(ops.StoreLocal(var, value, self.loc))

    def tape_new(self, element_type: Type, hint=None) -> Value:
        return self._value(ops.TapeNew(element_type, self.loc, hint))

    def tape_push(self, tape: Value, value: Value) -> None:
        self.emit(ops.TapePush(tape, value, self.loc))

    def tape_pop(self, tape: Value, hint=None) -> Value:
        return self._value(ops.TapePop(tape, self.loc, hint))

    def tape_top(self, tape: Value, hint=None) -> Value:
        return self._value(ops.TapePeek(tape, self.loc, hint))
