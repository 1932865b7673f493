"""Inline calls of njit functions: the reverse pass differentiates one flat function.

A derived reverse rule must keep the callee's forward state (its tapes, the arrays it wrote)
alive until the caller's reverse sweep reaches the call. Inlining the callee's IR makes that
state part of the caller's own sweep, with no closure to carry it: the reverse pass then sees
loops, branches and writes of callees exactly as it sees its own. Recursion cannot be inlined and
is refused with a clear error.
"""

from __future__ import annotations

from .. import _numba as nb
from ..rules.jitclasses import is_instance_type, maker, stored_field
from ..errors import UnsupportedError
from ..ir import Builder, ops, reverse_post_order
from ..ir.cleanup import remove_dead_code
from ..ir.clone import clone_op
from ..ir.core import Block, Function
from ..ir.traits import Trait
from ..ir.types import ArrayType, is_record
from ..rules.custom import lookup_custom
from ..rules.registry import lookup_field
from ..rules.records import (field_set_by, one_entry_view, record_view,
                             write_field_through_view)
from .context import NO_CALLEES, PassContext
from .instance_fields import promote_instance_fields, writes_instance_fields
from .instances import (field_of_built_instance, read_through_built_instances,
                        retype_field_arrays,
                        read_through_instance_phis, split_tuple_phis)
from .opinfo import is_math_call, writes_no_memory


def inline_njit_calls(fn: Function, keep=lambda callee: False,
                      context: PassContext = NO_CALLEES, _stack: tuple = (),
                      only=lambda call: True, mode: str = "reverse mode",
                      _read_through: bool = True) -> Function:
    """A new function with every call of an njit function (except those `keep` accepts, and
    those the op predicate `only` rejects) replaced by the callee's body (its IR from
    `context.callee_ir`), recursively; `fn` is left untouched. Fields of jitclass instances
    built here are read out of what they were built from (`capture/jitclasses.py`), and fields
    the code writes become local variables (`instance_fields.py`)."""
    inliner = _Inliner(fn, keep, context, _stack, only, mode, _read_through)
    inlined = inliner.run()
    if _stack or not _read_through or not writes_instance_fields(inlined):
        return retype_field_arrays(inlined, inliner.b)
    # A field written: reading fields through as ops are copied would read a field before
    # stores that come later. Again, reading them once every store is a local's.
    inliner = _Inliner(fn, keep, context, _stack, only, mode, read_through=False)
    inlined = promote_instance_fields(inliner.run(), inliner.b, mode)
    read_through_built_instances(inlined, inliner.b)
    return remove_dead_code(retype_field_arrays(inlined, inliner.b))


class _Inliner:
    def __init__(self, fn: Function, keep, context: PassContext, stack: tuple, only, mode,
                 read_through: bool):
        self.fn, self.keep, self.context, self.stack = fn, keep, context, stack
        self.only, self.mode, self.read_through = only, mode, read_through
        self.b = Builder.new_function(fn.name, fn.argtypes, [a.name for a in fn.args],
                                      fn.return_type, py_func=fn.py_func, loc=fn.loc,
                                      boundscheck=fn.boundscheck)
        self.values = dict(zip(fn.args, self.b.function.args))
        self.blocks: dict = {}
        self.exit_block: dict = {}  # old block -> new block holding its terminator
        self.phis: list = []
        self.available: dict = {}  # new block -> {key of a pure op: its result} (local CSE)

    def run(self) -> Function:
        order = reverse_post_order(self.fn)  # definitions before uses; dead blocks dropped
        for block in order:
            self.blocks[block] = self.b.new_block(block.hint)
        for block in order:
            self.b.position_at_end(self.blocks[block])
            for op in block.ops:
                self.b.loc = op.loc
                if self._inlinable(op):
                    self._inline(op)
                else:
                    new = self._emit(op, self.values, self.blocks)
                    if isinstance(op, ops.Phi):
                        self.phis.append((op, new))
            self.exit_block[block] = self.b.block
        for old, new in self.phis:
            for block, value in old.incoming:
                if block in self.exit_block:
                    new.add_incoming(self.exit_block[block], self.values[value])
        if self.read_through:
            read_through_instance_phis(self.b.function, self.b)
        else:
            split_tuple_phis(self.b.function, self.b)
        return remove_dead_code(self.b.function)  # tuples whose entries were all read off

    def _emit(self, op, values: dict, blocks: dict):
        """Copy `op`, except that an entry of a tuple built in view is read from its builder:
        `(a, b)[0]` is `a`. (Tuples the reverse pass sees then come from arguments and phis
        only, and zip/enumerate loops and calls taking tuples cost nothing.)"""
        if isinstance(op, ops.TupleGetItem):
            builder = getattr(values[op.tuple], "op", None)
            if isinstance(builder, ops.BuildTuple):
                values[op.result] = builder.items[op.index]
                return None
        if isinstance(op, ops.GetAttr) and self.read_through:
            field = field_of_built_instance(self.b, values[op.value], op.name, op.result.type)
            if field is not None:
                values[op.result] = field
                return None
        if isinstance(op, ops.Call) and op.callee is record_view:
            # a helper's record parameter given an entry p[i]: its view holds p alive
            values[op.result] = one_entry_view(self.b, values[op.operands[0]])
            return None
        name = field_set_by(op.callee) if isinstance(op, ops.Call) else None
        if name is not None and write_field_through_view(
                self.b, values[op.operands[0]], name, values[op.operands[1]]):
            # a helper's record argument is an entry p[i] here: written as p['a'][i]
            self._forget_reads()
            return None
        new = clone_op(op, values, blocks)
        available = self.available.setdefault(self.b.block, {})
        key = _value_key(new)
        if not self.read_through and isinstance(new, ops.GetAttr) \
                and is_instance_type(new.value.type):
            key = None  # a field read, which a store may change
        if key is not None and key in available:
            values[op.result] = available[key]  # computed earlier in this block
            return None
        if key is None and not writes_no_memory(new):
            self._forget_reads()  # it may write memory: reads of array entries are done again
        new = self.b.emit(new)
        if key is not None:
            available[key] = new.result
        return new

    def _forget_reads(self) -> None:
        available = self.available.setdefault(self.b.block, {})
        for k in [k for k in available if k[0] is ops.GetItem]:
            del available[k]

    def _inlinable(self, op) -> bool:
        # a function with a user's rule, or with a registered reverse rule (records.py's
        # field views and setters), is called, never inlined: the rule applies to the call
        return (isinstance(op, ops.Call) and nb.is_njit_dispatcher(op.callee)
                and not op.kwnames and not self.keep(op.callee) and self.only(op)
                and lookup_custom(op.callee) is None and maker(op.callee) is None
                and stored_field(op.callee) is None
                and lookup_field(op.callee, "adjoint") is None)

    def _inline(self, call: ops.Call) -> None:
        argtypes = tuple(a.type.to_numba() for a in call.operands)
        key = (call.callee, argtypes)
        if key in self.stack:
            raise UnsupportedError(
                f"recursive functions in {self.mode}", function=self.fn.name,
                argtypes=self.fn.argtypes, loc=call.loc,
                hint="rewrite the recursion as a loop, or write a custom rule for the function")
        callee = inline_njit_calls(self.context.callee_ir(call.callee, argtypes), self.keep,
                                   self.context, self.stack + (key,), self.only, self.mode,
                                   self.read_through)
        self.b.function.boundscheck |= callee.boundscheck
        continuation = self.b.new_block("after_call")
        returns = self._copy_body(callee, [self.values[a] for a in call.operands], continuation)
        self.b.position_at_end(continuation)
        if len(returns) == 1:
            self.values[call.result] = returns[0][1]
        else:
            phi = self.b.phi(call.result.type, continuation, hint=call.result.hint)
            for block, value in returns:
                phi.add_incoming(block, value)
            self.values[call.result] = phi.result

    def _copy_body(self, callee: Function, args: list, continuation: Block) -> list:
        """Copy the callee's blocks in; its returns jump to `continuation`. Returns the
        (block, value) pairs of the returns."""
        values = dict(zip(callee.args, args))
        order = reverse_post_order(callee)
        blocks = {blk: self.b.new_block(blk.hint) for blk in order}
        self.b.jump(blocks[callee.entry])
        returns, phis = [], []
        for blk in order:
            self.b.position_at_end(blocks[blk])
            for op in blk.ops:
                if isinstance(op, ops.Return):
                    returns.append((blocks[blk], values[op.value]))
                    self.b.jump(continuation)
                    continue
                new = self._emit(op, values, blocks)
                if isinstance(op, ops.Phi):
                    phis.append((op, new))
        for old, new in phis:
            for blk, value in old.incoming:
                if blk in blocks:
                    new.add_incoming(blocks[blk], values[value])
        return returns


# --- local common-subexpression elimination --------------------------------------------------
# `x[i] * x[i]` reads x[i] twice; the pullback would then add twice into x's shadow at i, a
# read-modify-write each. Within a block, an op identical to an earlier pure op (same kind,
# operands and attributes) reuses its result; a scalar read of an array entry only until
# something may have written memory.

# Ops that write nothing but are not shared all the same: reads of locals and tapes (their
# contents change), and calls other than `math` functions (numpy calls allocate). Fresh objects
# (`Trait.ALLOCATES`: two tapes are two tapes) and writes never are.
_NOT_SHARED = (ops.LoadLocal, ops.TapePeek, ops.Call, ops.MethodCall)


def _value_key(op):
    if op.result is None or isinstance(op, (ops.Phi, ops.MatMul)):
        return None
    if isinstance(op, ops.Constant):
        if isinstance(op.result.type, ArrayType):
            return None
        return (ops.Constant, repr(op.value), op.result.type)
    pure_call = is_math_call(op)
    if isinstance(op, ops.GetItem) and isinstance(op.result.type, ArrayType):
        return None  # a view: keep each its own (shadows follow views)
    if isinstance(op, ops.GetAttr) and is_record(op.value.type):
        return None  # a field of a record reads memory: a write in between changes it
    if op.traits() & (Trait.WRITES | Trait.ALLOCATES) or (isinstance(op, _NOT_SHARED)
                                                         and not pure_call):
        return None
    if isinstance(op.result.type, ArrayType):
        return None  # a new array: two of them are two objects
    callee = id(op.callee) if pure_call else None
    return (type(op), tuple(map(id, op.operands)), op.attributes(), callee, op.result.type)
