"""The forward sweep: the primal's blocks copied, with shadows made beside arrays, the
predecessor of each join recorded, values kept for the pullback and what writes overwrite saved.

A mixin of the reverse pass (`core._ReversePass`)."""

from __future__ import annotations

from __future__ import annotations

from typing import Optional

import numpy as np

from ...ir import ops
from ...ir.clone import clone_op
from ...ir.core import Argument, Block, Op, Value
from ...ir.types import ArrayType, TupleType, int64, is_float_record, is_record_like
from ...rules.operands import name_of as _name
from ...ir.readonly import never_written
from ...ir.traits import AXES_VIEW
from ..opinfo import (positional as _positional,
                     writes_no_memory)
from ..tangents import mentions_complex
from ..refusals import refusal
from .types import (Entry, entry_at, has_adjoint as _has_adjoint, has_shadow,
                    is_float_array as _is_float_array, leaves, path_of, shadow_type, value_at,
                    writable as _writable)
from .keep import How, Kept, Saved, ShadowOf
from ...rules.records import entry_view, record_source, record_view

# numpy calls whose result is the array itself or a copy, as its layout at run time decides
# (np.asfortranarray returns a Fortran-ordered array itself, and a contiguous 1-D one)
_COPIES_OR_VIEWS = ("ascontiguousarray", "asfortranarray")


def _may_be_itself(name: str, t: ArrayType) -> bool:
    """Whether numba's np.ascontiguousarray / np.asfortranarray (`name`) of an array typed
    `t` may return the array itself: typed in the asked order (capture makes that call the
    array itself where the types agree), 1-D contiguous, or of any layout (decided at run
    time). An array of two dimensions or more typed in the other order is always copied."""
    wanted = "C" if name == "ascontiguousarray" else "F"
    return t.layout in (wanted, "A") or t.ndim == 1

class ForwardSweep:
    def _forward_block(self, block: Block) -> None:
        self.b.position_at_end(self.blocks[block])
        preds = self.preds[block]
        for op in block.ops:
            self.b.loc = op.loc
            if isinstance(op, ops.Phi):
                self._forward_phi(op)
                continue
            if op is block.ops[len(block.phis)] and len(preds) > 1 \
                    and block not in self.inductions and block not in self.choices:
                self._record_predecessor(block, preds)
            if any(mentions_complex(v.type) for v in _values_of(op)):
                raise self.unsupported(op, "differentiating complex numbers in reverse mode",
                                       "split the computation into real and imaginary parts")
            why = refusal(op, self.varied.__contains__, self.hidden_arrays) \
                or _record_in_tuple(op, self.varied)
            if why is not None:
                raise self.unsupported(op, *why)
            self.FORWARD_HANDLERS[type(op)](self, op)
        self.exit_of[block] = self.b.block

    def _record_predecessor(self, block: Block, preds: list) -> None:
        came_from = self.b.phi(int64, self.blocks[block], hint="came_from")
        self.phis.append((None, came_from, preds))
        if self.block_stack is None:
            self.block_stack = self._tape_for(int64)
        self.b.tape_push(self.block_stack, came_from.result)

    def _forward_phi(self, op: ops.Phi) -> None:
        new = self.b.phi(op.result.type, self.blocks[op.block], hint=op.result.hint)
        self.values[op.result] = new.result
        self.phis.append((op, new, None))
        if has_shadow(op.result.type):
            shadow = self.b.phi(_writable(op.result.type), self.blocks[op.block])
            self.phis.append((("shadow", op, None), shadow, None))
            self.shadows[op.result] = shadow.result
        if isinstance(op.result.type, TupleType) and _has_adjoint(op.result.type):
            for entry, t in leaves(op.result):
                if _is_float_array(t):
                    shadow = self.b.phi(_writable(t), self.blocks[op.block])
                    self.phis.append((("shadow", op, path_of(entry)), shadow, None))
                    self.shadows[entry] = shadow.result

    def _fill_forward_phis(self) -> None:
        for old, new, preds in self.phis:
            if old is None:  # the came_from phi: the index of each predecessor
                for k, pred in enumerate(preds):
                    new.add_incoming(self.exit_of[pred], self._const_at_end(pred, k))
                continue
            shadow = isinstance(old, tuple)
            phi, path = (old[1], old[2]) if shadow else (old, None)
            for pred, value in phi.incoming:
                if not shadow:
                    incoming = self.values[value]
                else:
                    incoming = self.shadows.get(entry_at(value, path or ()))
                if incoming is None:  # a constant array flowing into an array phi
                    self.b.position_before_terminator(self.exit_of[pred])
                    array = value_at(self.b, self.values[value], path or ())
                    incoming = self.b.call(np.zeros_like, [array], type=new.result.type)
                new.add_incoming(self.exit_of[pred], incoming)
        # now that every phi has its inputs, keep what the pullback reads
        for old, new, _ in self.phis:
            if old is None or isinstance(old, tuple):
                continue
            block = self.blocks[old.block]
            self.b.position_at_end(block)
            self._keep_after_phis(old, new, block)

    def _keep_after_phis(self, old: ops.Phi, new: ops.Phi, block: Block) -> None:
        """Keep phi results (and phi shadows) at the first non-phi position of their block."""
        index = len(block.phis)
        tail = block.ops[index:]
        block.ops = block.ops[:index]
        if old.result in self.need:
            self.keep(old.result, new.result)
        if old.result in self.shadows:
            self.keep(old.result, self.shadows[old.result], key=ShadowOf(old.result))
        for op in tail:
            block.append(op)

    def _const_at_end(self, pred: Block, k: int) -> Value:
        self.b.position_before_terminator(self.exit_of[pred])
        return self.b.const(k, int64)

    def emit_clone(self, op: Op) -> Op:
        return self.b.emit(clone_op(op, self.values, self.blocks))

    def after_definition(self, op: Op) -> None:
        if op.result is not None and op.result in self.need:
            self.keep(op.result, self.values[op.result])

    def fw_default(self, op: Op) -> None:
        self._refuse_copy_or_view_of_written(op)
        self.emit_clone(op)
        self.after_definition(op)
        result = op.result
        if isinstance(op, ops.Undef):
            # a variable not assigned on a path into a phi (`g` assigned in a loop and read
            # after it): its shadow is undefined there too, never a zeros_like of it
            if has_shadow(result.type):
                self.shadows[result] = self.b.undef(shadow_type(result.type))
            return
        if isinstance(op, (ops.TupleGetItem, ops.GetItem)) \
                and isinstance(result.type, TupleType) and _has_adjoint(result.type):
            self._shadows_of_inner_tuple(op)
        if result is not None and has_shadow(result.type):
            if _view_source(op) in self.constant_arrays:
                self.constant_arrays.add(result)  # a view of constant data
                return
            self._make_shadow(result, self.values[result], self._shadow_of_result(op))

    def _shadow_of_result(self, op: Op) -> Optional[Value]:
        """Views share their source's shadow; other new arrays get a fresh zero shadow."""
        if isinstance(op, ops.TupleGetItem):  # the array in the tuple: its shadow is the entry's
            return self.shadows.get(Entry(op.tuple, op.index))
        source = _view_source(op)
        if isinstance(op, ops.Call) and op.callee in (record_view, entry_view):
            return self._entry_view_shadow(op)
        if isinstance(op, ops.GetItem) and isinstance(op.value.type, TupleType):
            return self._shadow_of_entry_at(op)
        if source is not None and is_float_record(source.type):
            src_shadow = self._record_shadow(source, op)
        elif source is None or source not in self.shadows:
            return None
        else:
            src_shadow = self.shadows[source]
        if src_shadow is None:
            return None
        if isinstance(op, ops.GetItem):
            return self.b.getitem(src_shadow, self.values[op.index])
        if isinstance(op, ops.GetAttr):
            return self.b.getattr(src_shadow, op.name)
        if isinstance(op, ops.Call):
            return self.b.call(op.callee, [src_shadow, *(self.values[a] for a in op.positional[1:])],
                               {k: self.values[v] for k, v in op.keywords.items()})
        args = [self.values[a] for a in op.positional]
        return self.b.method_call(op.method, src_shadow, args)

    def _shadow_of_entry_at(self, op: ops.GetItem, path: tuple = ()) -> Optional[Value]:
        """`t[i]` of a tuple of arrays with `i` known at run time (`for W in layers`): the
        shadow of entry `i`, picked at run time out of the tuple of the entries' shadows (a
        zero stand-in for a constant entry), so the adjoints sent to `t[i]` reach entry `i`.
        With a `path`, the array at that path in the tuples the entries are
        (`for W, b in layers`)."""
        n = len(op.value.type.elements)
        shadows = [self.shadows.get(entry_at(op.value, (k, *path))) for k in range(n)]
        if all(s is None for s in shadows):
            return None
        tup = self.values[op.value]
        items = [s if s is not None else
                 self.b.call(np.zeros_like, [value_at(self.b, tup, (k, *path))],
                             type=shadow_type(entry_at(op.value, (k, *path)).type))
                 for k, s in enumerate(shadows)]
        if len({item.type for item in items}) != 1:
            raise self.unsupported(op, f"indexing a tuple of {op.result.type} with an index "
                                   "known only at run time, in reverse mode, where the "
                                   "entries' shadows differ in layout",
                                   "index it with a constant, or make it an array")
        return self.b.getitem(self.b.build_tuple(items), self.values[op.index],
                              type=items[0].type)

    def _shadows_of_inner_tuple(self, op: Op) -> None:
        """A tuple taken out of a tuple (`t[0]`, or `t[i]` with `i` known at run time): its
        leaves' shadows are those of the entry's leaves."""
        for entry, t in leaves(op.result):
            path = path_of(entry)
            if isinstance(op, ops.TupleGetItem):
                shadow = self.shadows.get(entry_at(op.tuple, (op.index, *path)))
            elif _is_float_array(t):
                shadow = self._shadow_of_entry_at(op, path)
            else:
                shadow = None
            if shadow is not None:
                self.shadows[entry] = shadow

    def _entry_view_shadow(self, op: ops.Call) -> Optional[Value]:
        """The shadow of a one-entry view of a record (`record_view`, `entry_view`): the
        one-entry shadow of a record argument itself, or the same view of the entry's shadow
        holding the shadow array alive (a view of a record holds nothing: records.py)."""
        record = op.operands[0]
        if isinstance(record, Argument):
            return self.shadows.get(record)
        entry = self._record_shadow(record, op)
        if entry is None:
            return None
        owner = self.shadows.get(record_source(record).value)
        return self.b.call(entry_view, [entry, owner], type=op.result.type)

    def _record_shadow(self, record: Value, op: Op) -> Optional[Value]:
        """In the forward sweep: the shadow record of a record an array field is read from
        (`array_field`): entry 0 of a record argument's one-entry shadow, or `shadow[i]` for a
        record read as `p[i]`; None for constant data."""
        if isinstance(record, Argument):
            holder, index = self.shadows.get(record), self.b.const(0, int64)
        else:
            source = record_source(record)
            if source is None:
                if record not in self.varied:
                    return None
                raise self.unsupported(op, "reading an array field of a record that is not "
                                       f"read from a structured array here ({record.type}) in "
                                       "reverse mode",
                                       "read fields as p[i]['a'] of a structured array p")
            holder, index = self.shadows.get(source.value), self.values[source.index]
        return None if holder is None else self.b.getitem(holder, index, type=record.type)

    def fw_setitem(self, op: ops.SetItem) -> None:
        # save what the write overwrites, so the pullback can restore it
        self._refuse_write_through_reshape(op, op.target)
        target, index = self.values[op.target], self.values[op.index]
        if op in self.unrestored:  # a scratch array nobody reads back (scratch.py)
            self.emit_clone(op)
            return
        earlier = _earlier_read(op)
        if earlier is not None and earlier in self.kept:
            # `a[i] += ...` read a[i] already and kept it: that is the value to restore
            self.kept[Saved(op)] = Kept(How.ALIAS, earlier)
            self.emit_clone(op)
            return
        old_value = self.b.getitem(target, index, type=_item_type(op))
        if isinstance(old_value.type, ArrayType):
            old_value = self.b.method_call("copy", old_value, [])
        self.keep(op, old_value, key=Saved(op))
        self.emit_clone(op)

    def fw_inplace(self, op: ops.InplaceBinary) -> None:
        self._refuse_write_through_reshape(op, op.target)
        target = self.values[op.target]
        self.keep(op, self.b.method_call("copy", target, []), key=Saved(op))
        self.emit_clone(op)
        if op.target in self.shadows:
            # the result is the target itself: it shares the target's shadow
            self.shadows[op.result] = self.shadows[op.target]
            self.shadow_alias[op.result] = op.target
        self.after_definition(op)

    def _refuse_copy_or_view_of_written(self, op: Op) -> None:
        """np.ascontiguousarray of an array not typed C-contiguous: numba's result is a view or
        a copy as its run-time layout decides, and its shadow is its own (a copy's). A write
        into the array's memory (after the call, read back through its result, is what would
        go wrong) is refused: any write, to stay simple. (Capture makes the call of a C array
        the array itself, `rewrites.contiguous_view`; numba's ravel copies every array not
        typed C, and views those typed C, which capture makes reshapes.)"""
        name = _name(op)
        if name not in _COPIES_OR_VIEWS or not op.operands:
            return
        operand = root = _positional(op)[0]
        if not _is_float_array(operand.type) or not _may_be_itself(name, operand.type):
            return
        while getattr(root, "op", None) is not None and _view_source(root.op) is not None:
            root = _view_source(root.op)
        if not never_written(self.fn, root):
            raise self.unsupported(op, f"np.{name} of an array typed "
                                   f"{operand.type.layout}-ordered whose memory the function "
                                   f"also writes, in reverse mode (numba's result is a view or "
                                   f"a copy as the array's layout at run time decides)",
                                   "copy it instead (a.copy()), or write into another array")

    def _refuse_write_through_reshape(self, op: Op, target: Value) -> None:
        """ascontiguousarray results of arrays not typed C get shadows of their own (they may
        be copies), so a write through one would not reach the gradient of the array it may
        view: refuse it. (reshape and expand_dims are always views in numba: their shadows are
        views too; ravel of an array not typed C is always a copy, with its own shadow.)"""
        while True:
            source_op = getattr(target, "op", None)
            if source_op is None:
                return
            if _name(source_op) in _COPIES_OR_VIEWS and _is_float_array(target.type) \
                    and _may_be_itself(_name(source_op), _positional(source_op)[0].type):
                raise self.unsupported(op, f"writing into the result of np.{_name(source_op)} "
                                       f"of an array not typed in its order, in reverse mode",
                                       "write into the "
                                       "original array, or copy the reshaped array first "
                                       "(.copy())")
            source = _view_source(source_op)
            if source is None:
                return
            target = source

    def fw_return(self, op: ops.Return) -> None:
        out = self.values[op.value]
        if isinstance(out.type, ArrayType):
            out = self.b.method_call("copy", out, [])  # the pullback restores written arrays
        elif isinstance(out.type, TupleType):
            out = self._tuple_output(op.value, out)
        self.b.store(self.out_var, out)
        self.b.store(self.return_var, self.b.const(len(self.returns), int64))
        self.returns.append(op.block)
        self.b.jump(self.handoff)

    def _tuple_output(self, old: Value, out: Value, path: tuple = ()) -> Value:
        """A tuple output as the plain tuple the rule returns (arrays copied, as above; a tuple
        in it likewise); the shadows of its arrays stored for the pullback (`rv_return`), a zero
        array standing in for the shadow of a constant one."""
        items = []
        for k, t in enumerate(out.type.elements):
            item, here = self.b.tuple_getitem(out, k), (*path, k)
            if isinstance(t, TupleType):
                item = self._tuple_output(old, item, here)
            elif here in self.out_shadow_vars:  # a float array
                shadow = self.shadows.get(entry_at(old, here))
                if shadow is None:
                    shadow = self.b.call(np.zeros_like, [item], type=shadow_type(t))
                self.b.store(self.out_shadow_vars[here], shadow)
                item = self.b.method_call("copy", item, [])
            items.append(item)
        return self.b.build_tuple(items)

    def _hand_over(self) -> None:
        """handoff -> resume -> the reverse of the block whose return was taken."""
        self.b.position_at_end(self.handoff)
        self.b.jump(self.resume)
        self.b.position_at_end(self.resume)
        if not self.returns:  # every path raises: the pullback is never reached
            self.b.jump(self.finish)
            return
        taken = self.b.load(self.return_var) if len(self.returns) > 1 else None
        for k, block in enumerate(self.returns[:-1]):
            rest = self.b.new_block("resume_next")
            self.b.branch(self.b.binary(ops.Eq, taken, self.b.const(k, int64)),
                          self.rblocks[block], rest)
            self.b.position_at_end(rest)
        self.b.jump(self.rblocks[self.returns[-1]])

    def fw_build_tuple(self, op: ops.BuildTuple) -> None:
        self.emit_clone(op)
        self.after_definition(op)
        for k, item in enumerate(op.items):
            if item in self.shadows:
                self.shadows[Entry(op.result, k)] = self.shadows[item]
            elif isinstance(item.type, TupleType):  # a tuple in the tuple: its leaves' shadows
                for entry, _ in leaves(item):
                    if entry in self.shadows:
                        self.shadows[entry_at(op.result, (k, *path_of(entry)))] = \
                            self.shadows[entry]


def _record_in_tuple(op: Op, varied: set):
    """A structured array being differentiated put into or taken out of a tuple: the shadows
    of tuple entries are made for float arrays only (adjoints.py), so refused."""
    if isinstance(op, ops.BuildTuple):
        values = [v for v in op.operands if v in varied]
    elif isinstance(op, ops.TupleGetItem) and op.tuple in varied:
        values = [op.result]
    else:
        return None
    if any(is_record_like(v.type) for v in values):
        return ("a tuple holding a structured array or record being differentiated, in reverse "
                "mode", "pass the structured array as an argument of its own")
    return None


def _item_type(op: ops.SetItem):
    from ...ir import typing
    import operator
    return typing.call_result_type(operator.getitem, (op.target.type, op.index.type))


def _shadow_item_type(op: ops.SetItem):
    t = _item_type(op)
    return ArrayType(t.dtype, t.ndim, t.layout, False) if isinstance(t, ArrayType) else t


def _earlier_read(op: ops.SetItem) -> Optional[Value]:
    """A scalar read `op.target[op.index]` earlier in op's block with nothing in between that
    could write memory: it holds what `op` overwrites."""
    block = op.block
    for earlier in reversed(block.ops[:block.ops.index(op)]):
        if isinstance(earlier, ops.GetItem) and earlier.value is op.target \
                and earlier.index is op.index and not isinstance(earlier.result.type, ArrayType):
            return earlier.result
        if not writes_no_memory(earlier):
            return None
    return None


def _view_source(op: Op) -> Optional[Value]:
    if isinstance(op, ops.GetItem) and isinstance(op.result.type, ArrayType):
        # an index array (x[idx], x[mask]) copies: the result gets its own shadow
        return None if _advanced_index(op) else op.value
    if isinstance(op, ops.GetAttr) and op.name == "T":
        return op.value
    if isinstance(op, (ops.Call, ops.MethodCall)) and op.traits() & AXES_VIEW:
        return _positional(op)[0]
    # ravel and ascontiguousarray may copy (a non-contiguous input): their results get their
    # own shadows, sent back to the input by their adjoints
    return None


def _advanced_index(op: ops.GetItem) -> bool:
    t = op.index.type
    items = t.elements if isinstance(t, TupleType) else (t,)
    return any(isinstance(item, ArrayType) for item in items)


def _values_of(op: Op) -> tuple:
    return (*op.operands, *([op.result] if op.result is not None else []))
