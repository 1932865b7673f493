"""Reverse mode: one function holding a forward sweep and a pullback (Mooncake's reverse mode).

`reverse_transform(fn)` (for `fn` whose njit calls are already inlined: `inline.py`) builds

    fn_rev(*primals, dout) -> (out, (grad_0, grad_1, ...))

with one gradient per argument (a float for a float, an array for a float array, a tuple for a
tuple, none for the rest).

**Forward sweep.** The primal's blocks, copied, plus bookkeeping:
- every float array gets a *shadow* array of the same shape, made where the array is made and
  threaded through views, phis and tuples exactly like a forward-mode tangent; adjoints of arrays
  are accumulated in shadows (incremented, never overwritten): Mooncake's fdata;
- a block with several predecessors pushes which one control came from onto the block stack;
- a value the pullback reads is kept for it: in a local if its block runs at most once, on a
  tape (one per value) if its block is in a loop;
- a write (`a[i] = v`, `a += b`) first saves what it overwrites.

**Pullback.** One reverse block per forward block, visited in reverse: each op's adjoint rule runs
in reverse order, then the phis hand their adjoints to the incoming value of the edge actually
taken (popped from the block stack), writes are undone (so every input array ends up holding what
it held before the call) and the shadows of their targets are cleared where they were
overwritten. Scalar adjoints live in locals (Mooncake's rdata), reset to zero once their
definition is reached, so loop iterations do not leak into each other.

Adjoint rules: an elementwise primitive reuses its forward rule (the derivative with respect to
operand k is the forward rule applied to a unit tangent in k); structural and linear-algebra ops
have their own rules in `REVERSE_HANDLERS` below.
"""

from __future__ import annotations

import linecache
from typing import Optional

import numpy as np

from .. import _numba as nb
from ..errors import UnsupportedError
from ..ir import Builder, ops, reverse_post_order
from ..ir.cfg import natural_loops, predecessors
from ..ir.cleanup import remove_dead_code
from ..ir.clone import clone_op
from ..ir.core import Argument, Block, Function, Op, Value
from ..ir.types import ArrayType, BoolType, TupleType, int64, none
from ..rules import RuleNotApplicable, lookup_jvp
from ..rules.custom import lookup_custom
from ..rules import has_bounded_partials, is_one as _is_one
from ..rules.strong_zeros import strong_product
from .opinfo import (describe as _describe, hashable as _hashable,
                     keyword_values as _keyword_values, positional as _positional,
                     primitive as _primitive, writes_no_memory)
from .activity import varied_values
from .tangents import mentions_complex
from .readonly import never_written
from .refusals import refusal
from .reverse_arrays import (CALL_ADJOINTS, METHOD_ADJOINTS, ArrayAdjoints, _name,
                             unread_keywords)
from .reverse_custom import CustomRuleAdjoints
from .reverse_helpers import SUM_TO_SHAPE, masked_add, same_size_or_raise, scatter_add
from .reverse_loops import find_inductions
from .reverse_reads import active_operands, reads, rematerializable
from .reverse_split import split_rule
from .reverse_types import (Entry, grad_type as _grad_type, has_adjoint as _has_adjoint,
                            is_float as _is_float, is_float_array as _is_float_array,
                            shadow_type, unit_tangent, writable as _writable)


def reverse_transform(fn: Function, active=None) -> Function:
    """The gradient function of `fn` (see the module docstring); `fn` is left untouched.

    `active` (argument indices, default all) says which gradients are wanted: an array argument
    outside it that `fn` never writes is a constant (no shadow, gradient `None`), so data arrays
    cost nothing in the pullback."""
    return _ReversePass(fn, active).run()


def reverse_transform_split(fn: Function) -> tuple:
    """`(sweep, pullback)`: the gradient function of `fn` cut where the sweep hands over to the
    pullback, for callers that return to Python in between (`reverse_split.py`)."""
    rp = _ReversePass(fn)
    combined = rp.run()
    return split_rule(combined, rp.handoff, rp.resume, rp.out_var, list(rp.adjoints.values()),
                      len(fn.args))


class _ReversePass(ArrayAdjoints, CustomRuleAdjoints):
    def __init__(self, fn: Function, active=None):
        self.fn = fn
        out = fn.return_type
        if not (_is_float(out) or _is_float_array(out)):
            raise self.unsupported(None, f"reverse mode of a function returning {out}",
                                   "return a float or a float array")
        # arrays without shadows: inactive read-only data, and views of them
        self.constant_arrays = {a for i, a in enumerate(fn.args) if active is not None
                                and i not in active and _is_float_array(a.type)
                                and never_written(fn, a)}
        grads = TupleType(tuple(none if a in self.constant_arrays else _grad_type(a.type)
                                for a in fn.args))
        names = [a.name for a in fn.args] + ["dout"]
        # an array output is returned as a copy taken at the return (the pullback then undoes
        # writes): a C-contiguous array whatever the layout of the value returned
        self.out_type = ArrayType(out.dtype, out.ndim, "C", False) if _is_float_array(out) \
            else out
        self.b = Builder.new_function(f"{fn.name}_rev", [*fn.argtypes, out], names,
                                      TupleType((self.out_type, grads)), loc=fn.loc,
                                      boundscheck=fn.boundscheck)
        self.values: dict = dict(zip(fn.args, self.b.function.args))
        self.dout = self.b.function.args[-1]
        self.blocks: dict = {}      # forward block of fn -> its copy
        self.rblocks: dict = {}     # forward block of fn -> its reverse block
        self.exit_of: dict = {}     # forward block of fn -> copy holding its terminator
        self.shadows: dict = {}     # float array value of fn -> shadow Value (forward sweep)
        self.adjoints: dict = {}    # float value of fn -> LocalVar
        self._zeros_in_block = (None, set())  # see _zero_adjoints
        self._local_values = None  # see _used_only_in_own_block
        self._loaded_once: dict = {}  # array LocalVar -> its load in the resume block
        self.kept: dict = {}        # value (or shadow key) -> ("local", LocalVar) | ("tape", tape)
        self.phis: list = []
        self.shadow_alias: dict = {}  # in-place result -> the array it updated
        loops = natural_loops(fn) if fn.blocks else []
        self.loop_blocks = set().union(*(lp.body for lp in loops))
        self.preds = predecessors(fn)
        self.inductions = find_inductions(fn, loops, self.preds, self.loop_blocks)
        self.induction_of = {ind.phi.result: ind for ind in self.inductions.values()}
        self.recalled: dict = {}  # key -> (builder block, value): recomputed once per block
        self.remat: set = set()   # values the pullback recomputes instead of keeping
        self._written: dict = {}
        self.varied = varied_values(fn, active, self.constant_arrays)
        self.need = self._needed_values()

    # --- driver --------------------------------------------------------------------------------

    def run(self) -> Function:
        order = reverse_post_order(self.fn)
        self.setup = self.b.new_block("setup")
        for block in order:
            self.blocks[block] = self.b.new_block(block.hint)
        # every return of the sweep jumps to `handoff`, which jumps to `resume`, where the
        # pullback starts at the reverse of the return taken: `split()` cuts the function there
        self.handoff, self.resume = self.b.new_block("handoff"), self.b.new_block("resume")
        for block in order:
            self.rblocks[block] = self.b.new_block(f"rev_{block.hint or ''}")
        self.finish = self.b.new_block("finish")
        self.b.position_at_end(self.setup)
        self.block_stack = None  # made on first use: numba cannot type a list never pushed to
        self.out_var = ops.LocalVar(self.out_type, "out")
        self.return_var, self.returns = ops.LocalVar(int64, "return_taken"), []
        self._shadow_arguments()
        for block in order:
            self._forward_block(block)
        self._fill_forward_phis()
        self._save_counters_on_entry()
        self._hand_over()
        for block in order:
            self._reverse_block(block)
        self._finish()
        self._initialise_locals()
        return remove_dead_code(self.b.function)  # stand-ins and constants rules did not read

    def _initialise_locals(self) -> None:
        """Zero every adjoint local at the top of the function, before anything reads it."""
        self.b.position_at_end(self.setup)
        for var in self.adjoints.values():
            self.b.store(var, self.b.const(0.0, var.type))
        for how, var in self.kept.values():
            if how == "counter":  # read before the first entry into a nested loop
                self.b.store(var, self.b.const(0, var.type))
        self.b.jump(self.blocks[self.fn.entry])

    # --- which values the pullback reads --------------------------------------------------------

    def _needed_values(self) -> set:
        """Values the pullback reads that it cannot recompute: kept in locals or on tapes."""
        reads_of = set()
        for op in self.fn.ops():
            if isinstance(op, (ops.Phi, ops.Jump, ops.Branch, ops.Raise, ops.Constant)):
                continue
            if op.result is not None and not _has_adjoint(op.result.type) \
                    and not isinstance(op, (ops.SetItem, ops.InplaceBinary)):
                continue
            reads_of |= reads(op)
        for ind in self.inductions.values():  # the pullback compares them to find its way
            reads_of |= {ind.phi.result, ind.init}
        need, work = set(), list(reads_of)
        kept_anyway = frozenset(reads_of)
        while work:  # a recomputed value needs what it is computed from
            value = work.pop()
            if value in need or value in self.remat:
                continue
            if rematerializable(self.fn, value, self._written, kept_anyway):
                self.remat.add(value)
                work.extend(value.op.operands)
            else:
                need.add(value)
        return need

    def keep(self, old: Value, new: Value, key=None) -> None:
        """Make `new` (the copy of `old`, or its shadow) readable in the pullback."""
        key = key if key is not None else old
        block = old.block if isinstance(old, Op) else getattr(getattr(old, "op", None), "block",
                                                               None)
        if block is None:  # an argument: available everywhere
            self.kept[key] = ("direct", new)
        elif key in self.induction_of:  # a loop counter: stepped back by the pullback
            var = ops.LocalVar(new.type, f"counter{len(self.kept)}")
            self.b.store(var, new)
            self.kept[key] = ("counter", var)
        elif block in self.loop_blocks:
            tape = self._tape_for(new.type)
            self.b.tape_push(tape, new)
            self.kept[key] = ("tape", tape)
        else:
            var = ops.LocalVar(new.type, f"kept{len(self.kept)}")
            self.b.store(var, new)
            self.kept[key] = ("local", var)

    def _tape_for(self, t) -> Value:
        op = ops.TapeNew(t, self.b.loc)
        self.setup.insert(len(self.setup.ops), op)
        op.block = self.setup
        return op.result

    def recall(self, old: Value, key=None) -> Value:
        """In the pullback: the value `old` had in the forward sweep (its latest instance)."""
        key = key if key is not None else old
        if key is old and isinstance(old, Argument):
            return self.values[old]  # arguments are available everywhere
        memo = self.recalled.get(key)
        if memo is not None and memo[0] is self.b.block:
            return memo[1]  # straight-line code: the earlier read dominates this one
        value = self._recall_uncached(old, key)
        self.recalled[key] = (self.b.block, value)
        return value

    def _recall_uncached(self, old: Value, key) -> Value:
        if isinstance(getattr(old, "op", None), ops.Constant) and key is old:
            return self.b.emit(clone_op(old.op, {}, {})).result
        if key is old and old in self.remat and old not in self.kept:
            values = {v: self.recall(v) for v in old.op.operands}
            return self.b.emit(clone_op(old.op, values, {})).result
        how, where = self.kept[key]
        if how == "alias":
            return self.recall(where)
        if how == "direct":
            return where
        if how == "local" and isinstance(where.type, ArrayType):
            return self._load_once(where)
        if how in ("local", "counter"):
            return self.b.load(where)
        return self.b.tape_top(where)

    def _load_once(self, var: ops.LocalVar) -> Value:
        """An array kept in a local, loaded once where the pullback starts (the `resume` block,
        which dominates it). Loaded at each use, it was loaded in every iteration of a pullback
        loop, and numba increfs and decrefs an array at every load: 3x the time of an HVP whose
        loop read a copied state array."""
        value = self._loaded_once.get(var)
        if value is None:
            with self.b.before_terminator_of(self.resume):
                value = self._loaded_once[var] = self.b.load(var)
        return value

    def release(self, old: Value, key=None) -> None:
        """At the reverse of `old`'s definition: drop the instance the tape holds."""
        key = key if key is not None else old
        entry = self.kept.get(key)
        if entry is not None and entry[0] == "tape":
            self.recalled.clear()  # recomputed values may depend on the instance dropped here
            self.b.tape_pop(entry[1])

    # --- adjoints ------------------------------------------------------------------------------

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
        while old in self.shadow_alias:
            old = self.shadow_alias[old]
        if ("shadow", old) not in self.kept:
            return None
        return self.recall(old, key=("shadow", old))

    # --- forward sweep -------------------------------------------------------------------------

    def _shadow_arguments(self) -> None:
        for old, new in zip(self.fn.args, self.b.function.args):
            if old not in self.constant_arrays:
                self._make_shadow(old, new)
            if isinstance(old.type, TupleType) and _has_adjoint(old.type):
                self._refuse_nested(old, None)
                for k, t in enumerate(old.type.elements):
                    if _is_float_array(t):
                        entry = self.b.tuple_getitem(new, k)
                        self.shadows[Entry(old, k)] = self.b.call(np.zeros_like, [entry],
                                                                  type=shadow_type(t))
            if old in self.need:
                self.kept[old] = ("direct", new)

    def _refuse_nested(self, value: Value, op: Optional[Op]) -> None:
        if any(isinstance(t, TupleType) and _has_adjoint(t) for t in value.type.elements):
            raise self.unsupported(op, f"nested tuples ({value.type}) in reverse mode",
                                   "pass the inner tuples' entries as separate arguments")

    def _make_shadow(self, old: Value, new: Value, shadow: Optional[Value] = None) -> None:
        # a read-only array is a constant unless it is an argument or a view of one
        if not _is_float_array(old.type) or (old.type.readonly and shadow is None
                                               and not isinstance(old, Argument)):
            return
        if shadow is None:
            shadow = self.b.call(np.zeros_like, [new], type=shadow_type(old.type))
        self.shadows[old] = shadow
        self.keep(old, shadow, key=("shadow", old))

    def _forward_block(self, block: Block) -> None:
        self.b.position_at_end(self.blocks[block])
        preds = self.preds[block]
        for op in block.ops:
            self.b.loc = op.loc
            if isinstance(op, ops.Phi):
                self._forward_phi(op)
                continue
            if op is block.ops[len(block.phis)] and len(preds) > 1 \
                    and block not in self.inductions:
                self._record_predecessor(block, preds)
            if any(mentions_complex(v.type) for v in _values_of(op)):
                raise self.unsupported(op, "differentiating complex numbers in reverse mode",
                                       "split the computation into real and imaginary parts")
            why = refusal(op, self.varied.__contains__)
            if why is not None:
                raise self.unsupported(op, *why)
            FORWARD_HANDLERS[type(op)](self, op)
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
        if _is_float_array(op.result.type):
            shadow = self.b.phi(_writable(op.result.type), self.blocks[op.block])
            self.phis.append((("shadow", op, None), shadow, None))
            self.shadows[op.result] = shadow.result
        if isinstance(op.result.type, TupleType) and _has_adjoint(op.result.type):
            self._refuse_nested(op.result, op)
            for k, t in enumerate(op.result.type.elements):
                if _is_float_array(t):
                    shadow = self.b.phi(_writable(t), self.blocks[op.block])
                    self.phis.append((("shadow", op, k), shadow, None))
                    self.shadows[Entry(op.result, k)] = shadow.result

    def _fill_forward_phis(self) -> None:
        for old, new, preds in self.phis:
            if old is None:  # the came_from phi: the index of each predecessor
                for k, pred in enumerate(preds):
                    new.add_incoming(self.exit_of[pred], self._const_at_end(pred, k))
                continue
            shadow = isinstance(old, tuple)
            phi, k = (old[1], old[2]) if shadow else (old, None)
            for pred, value in phi.incoming:
                if not shadow:
                    incoming = self.values[value]
                else:
                    incoming = self.shadows.get(value if k is None else Entry(value, k))
                if incoming is None:  # a constant array flowing into an array phi
                    self.b.position_before_terminator(self.exit_of[pred])
                    array = self.values[value]
                    if k is not None:
                        array = self.b.tuple_getitem(array, k)
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
            self.keep(old.result, self.shadows[old.result], key=("shadow", old.result))
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
        self.emit_clone(op)
        self.after_definition(op)
        result = op.result
        if result is not None and _is_float_array(result.type):
            if _view_source(op) in self.constant_arrays:
                self.constant_arrays.add(result)  # a view of constant data
                return
            self._make_shadow(result, self.values[result], self._shadow_of_result(op))

    def _shadow_of_result(self, op: Op) -> Optional[Value]:
        """Views share their source's shadow; other new arrays get a fresh zero shadow."""
        if isinstance(op, ops.TupleGetItem):  # the array in the tuple: its shadow is the entry's
            return self.shadows.get(Entry(op.tuple, op.index))
        source = _view_source(op)
        if source is None or source not in self.shadows:
            return None
        src_shadow = self.shadows[source]
        if isinstance(op, ops.GetItem):
            return self.b.getitem(src_shadow, self.values[op.index])
        if isinstance(op, ops.GetAttr):
            return self.b.getattr(src_shadow, op.name)
        if isinstance(op, ops.Call):
            return self.b.call(op.callee, [src_shadow, *(self.values[a] for a in op.positional[1:])],
                               {k: self.values[v] for k, v in op.keywords.items()})
        args = [self.values[a] for a in op.positional]
        return self.b.method_call(op.method, src_shadow, args)

    def fw_setitem(self, op: ops.SetItem) -> None:
        # save what the write overwrites, so the pullback can restore it
        self._refuse_write_through_reshape(op, op.target)
        target, index = self.values[op.target], self.values[op.index]
        earlier = _earlier_read(op)
        if earlier is not None and earlier in self.kept:
            # `a[i] += ...` read a[i] already and kept it: that is the value to restore
            self.kept[("saved", op)] = ("alias", earlier)
            self.emit_clone(op)
            return
        old_value = self.b.getitem(target, index, type=_item_type(op))
        if isinstance(old_value.type, ArrayType):
            old_value = self.b.method_call("copy", old_value, [])
        self.keep(op, old_value, key=("saved", op))
        self.emit_clone(op)

    def fw_inplace(self, op: ops.InplaceBinary) -> None:
        self._refuse_write_through_reshape(op, op.target)
        target = self.values[op.target]
        self.keep(op, self.b.method_call("copy", target, []), key=("saved", op))
        self.emit_clone(op)
        if op.target in self.shadows:
            # the result is the target itself: it shares the target's shadow
            self.shadows[op.result] = self.shadows[op.target]
            self.shadow_alias[op.result] = op.target
        self.after_definition(op)

    def _refuse_write_through_reshape(self, op: Op, target: Value) -> None:
        """reshape/ravel/ascontiguousarray results get shadows of their own (they may be
        copies), so a write through one would not reach the gradient of the array it views:
        refuse it."""
        while True:
            source_op = getattr(target, "op", None)
            if source_op is None:
                return
            if _name(source_op) in ("reshape", "ravel", "ascontiguousarray", "expand_dims") \
                    and _is_float_array(target.type):
                raise self.unsupported(op, "writing into the result of reshape/ravel/"
                                       "ascontiguousarray in reverse mode", "write into the "
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
        self.b.store(self.out_var, out)
        self.b.store(self.return_var, self.b.const(len(self.returns), int64))
        self.returns.append(op.block)
        self.b.jump(self.handoff)

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
        if _has_adjoint(op.result.type):
            self._refuse_nested(op.result, op)
        self.emit_clone(op)
        self.after_definition(op)
        for k, item in enumerate(op.items):
            if item in self.shadows:
                self.shadows[Entry(op.result, k)] = self.shadows[item]

    # --- pullback ------------------------------------------------------------------------------

    def _reverse_block(self, block: Block) -> None:
        self.b.position_at_end(self.rblocks[block])
        own = self._used_only_in_own_block()
        self._zero_adjoints(start=[op.result for op in block.ops if op.result in own])
        for op in reversed(block.ops):
            if isinstance(op, _CONTROL):
                continue
            self.b.loc = op.loc
            REVERSE_HANDLERS[type(op)](self, op)
            if op.result is not None:
                self.release(op.result)
                if ("shadow", op.result) in self.kept and not isinstance(op, ops.InplaceBinary):
                    self.release(op.result, key=("shadow", op.result))
        phi_adjoints = [(phi, None, self.take_adjoint(phi.result)) for phi in block.phis
                        if _is_float(phi.result.type)]
        phi_adjoints += [(phi, k, self.take_adjoint(Entry(phi.result, k)))
                         for phi in block.phis if isinstance(phi.result.type, TupleType)
                         for k, t in enumerate(phi.result.type.elements) if _is_float(t)]
        for phi in block.phis:
            self.release(phi.result)
            if ("shadow", phi.result) in self.kept:
                self.release(phi.result, key=("shadow", phi.result))
        self._leave_reverse_block(block, phi_adjoints)

    def _leave_reverse_block(self, block: Block, phi_adjoints: list) -> None:
        preds = self.preds[block]
        if not preds:
            self.b.jump(self.finish)
            return
        if len(preds) == 1:
            self._edge_contributions(preds[0], phi_adjoints)
            self.b.jump(self.rblocks[preds[0]])
            return
        if block in self.inductions:
            self._leave_counted_header(self.inductions[block], phi_adjoints)
            return
        came_from = self.b.tape_pop(self.block_stack)
        for k, pred in enumerate(preds[:-1]):
            edge, rest = self.b.new_block("rev_edge"), self.b.new_block("rev_choose")
            self.b.branch(self.b.binary(ops.Eq, came_from, self.b.const(k, int64)), edge, rest)
            self.b.position_at_end(edge)
            self._edge_contributions(pred, phi_adjoints)
            self.b.jump(self.rblocks[pred])
            self.b.position_at_end(rest)
        self._edge_contributions(preds[-1], phi_adjoints)
        self.b.jump(self.rblocks[preds[-1]])

    def _leave_counted_header(self, ind, phi_adjoints: list) -> None:
        """The pullback came along the entry edge iff the counter holds its initial value;
        along the latch it steps the counter back to the previous iteration's."""
        counter = self.recall(ind.phi.result)
        at_entry = self.b.binary(ops.Eq, counter, self.recall(ind.init))
        entry_edge, latch_edge = self.b.new_block("rev_entry"), self.b.new_block("rev_latch")
        self.b.branch(at_entry, entry_edge, latch_edge)
        var = self.kept[ind.phi.result][1]
        self.b.position_at_end(entry_edge)
        if ind.reentered:  # the instance before this entry into the loop
            self.b.store(var, self.b.tape_pop(self.counter_tapes[ind.phi.result]))
        self._edge_contributions(ind.entry, phi_adjoints)
        self.b.jump(self.rblocks[ind.entry])
        self.b.position_at_end(latch_edge)
        self.b.store(var, self.b.binary(ops.Sub, counter, self.b.const(ind.step, counter.type)))
        self._edge_contributions(ind.latch, phi_adjoints)
        self.b.jump(self.rblocks[ind.latch])

    def _save_counters_on_entry(self) -> None:
        """Once per entry into a loop nested in another: push the counter's previous instance."""
        self.counter_tapes = {}
        for ind in self.inductions.values():
            if not ind.reentered:
                continue
            var = self.kept[ind.phi.result][1]
            tape = self.counter_tapes[ind.phi.result] = self._tape_for(var.type)
            self.b.position_before_terminator(self.exit_of[ind.entry])
            self.b.tape_push(tape, self.b.load(var))

    def _edge_contributions(self, pred: Block, phi_adjoints: list) -> None:
        for phi, k, adjoint in phi_adjoints:
            value = phi.value_from(pred)
            self.accumulate(value if k is None else Entry(value, k), adjoint)

    def _finish(self) -> None:
        self.b.position_at_end(self.finish)
        grads = [self._gradient_of(old) for old in self.fn.args]
        out = self.b.load(self.out_var)
        self.b.ret(self.b.build_tuple([out, self.b.build_tuple(grads)]))

    def _gradient_of(self, old: Value) -> Value:
        if _is_float(old.type):
            return self.b.load(self.adjoint_var(old))
        if old in self.shadows:
            return self.shadows[old]
        if isinstance(old.type, TupleType) and _has_adjoint(old.type):
            return self.b.build_tuple([self._gradient_of(Entry(old, k))
                                       for k in range(len(old.type.elements))])
        return self.b.const(None, none)

    def rv_return(self, op: ops.Return) -> None:
        value = op.value
        if _is_float(value.type):
            self.accumulate(value, self.dout)
        else:
            shadow = self.shadow(value)
            if shadow is not None:
                self.b.inplace(ops.Add, shadow, self.dout)

    def rv_elementwise(self, op: Op) -> None:
        """Adjoint of an elementwise primitive from its forward rule: the derivative with
        respect to operand k is the forward rule applied to a unit tangent in k."""
        result = op.result
        if result is None or not _has_adjoint(result.type):
            return  # an int, bool or none result: its derivative is zero (`refusals.py` vetted it)
        if not (_is_float(result.type) or _is_float_array(result.type)):
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
        adjoint = self._result_adjoint(result)
        if adjoint is None:
            return
        read = reads(op)
        # operands the rule does not read (found by a dry run) are not kept: stand-ins
        primals = tuple(self.recall(v) if v in read else self.b.undef(v.type) for v in operands)
        keywords = dict(zip(getattr(op, "kwnames", ()), (self.recall(v) for v in
                                                          _keyword_values(op))))
        partials = getattr(rule, "partials", None)  # defpartials' rules: no unit tangents
        for k in active:
            try:
                derivative = (self._partial(partials[k], primals) if partials is not None
                              else self._derivative_by_unit(rule, primals, keywords, k))
            except RuleNotApplicable as exc:
                raise self.unsupported(op, f"differentiating {_describe(op)}: {exc}",
                                       "write a custom rule for this signature") from None
            if derivative is None:
                continue
            if _is_one(derivative):
                self._send(operands[k], adjoint)  # d(x + y)/dx: the adjoint itself
                continue
            if self._plain_product(rule, primals, derivative):  # finite: a plain product is exact
                self._send(operands[k], self.b.mul(adjoint, derivative))
            else:  # a zero factor gives exactly zero, even against an infinite one
                self._send(operands[k], strong_product(self.b, adjoint, derivative))

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

    def _plain_product(self, rule, primals: tuple, derivative: Value) -> bool:
        """A derivative that is finite wherever the primals are: a finite constant (the -1 of a
        subtraction), or partials declared bounded, of scalars. Arrays multiply strongly even
        then: array code computes every entry, masked ones too, so a primal entry may itself be
        nan or inf (`np.where(d > 0, np.sqrt(d) * c, 0)`: the adjoint of `c` gets 0 * nan from
        the entries `where` drops; fuzz, wide profile, seeds 78, 168, 180, 234)."""
        op = getattr(derivative, "op", None)
        if isinstance(op, ops.Neg):
            op = getattr(op.value, "op", None)
        if isinstance(op, ops.Constant) and isinstance(op.value, (int, float)) \
                and np.isfinite(op.value):
            return True
        arrays = isinstance(derivative.type, ArrayType) or any(
            isinstance(v.type, ArrayType) for v in primals)
        return not arrays and has_bounded_partials(rule, primals)

    def _result_adjoint(self, result: Value) -> Optional[Value]:
        if _is_float(result.type):
            return self.take_adjoint(result)
        return self.shadow(result)

    def _send(self, operand: Value, contribution: Value) -> None:
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

    def rv_getattr(self, op: ops.GetAttr) -> None:
        """`.T` is a view (its shadow is the source's); `.shape`, `.size`, `.ndim` carry no
        derivative. Any other attribute holding a float of a varied value has no rule."""
        if _has_adjoint(op.result.type) and op.name != "T" and op.value in self.varied:
            raise self.unsupported(op, f"differentiating {_describe(op)} in reverse mode",
                                   "compute the value from arrays and floats directly")

    def rv_getitem(self, op: ops.GetItem) -> None:
        if isinstance(op.value.type, TupleType):
            return self._rv_tuple_entry_at(op)
        if isinstance(op.result.type, ArrayType) and _advanced_index(op):
            return self._rv_gather(op)
        if not _is_float(op.result.type):
            return  # an array result is a view: its shadow is a view of the source's shadow
        shadow = self.shadow(op.value)
        if shadow is None:
            return
        adjoint = self.take_adjoint(op.result)
        index = self.recall(op.index)
        self.b.setitem(shadow, index, self.b.add(self.b.getitem(shadow, index), adjoint))

    def _rv_gather(self, op: ops.GetItem) -> None:
        """y = x[idx] or x[mask] (a copy): x's shadow at idx += y's shadow (repeats add up)."""
        shadow, result_shadow = self.shadow(op.value), self.shadow(op.result)
        index_type = op.index.type
        if shadow is None or result_shadow is None:
            return
        if not (isinstance(index_type, ArrayType) and index_type.ndim == 1):
            raise self.unsupported(op, f"indexing with {index_type} (an index array of several "
                                   "dimensions, or several index arrays) in reverse mode",
                                   "index with one 1-D array of ints or bools")
        helper = masked_add if isinstance(index_type.dtype, BoolType) else scatter_add
        self.b.call(helper, [shadow, self.recall(op.index), result_shadow], type=none)

    def rv_setitem(self, op: ops.SetItem) -> None:
        target, index = self.recall(op.target), self.recall(op.index)
        shadow = self.shadow(op.target)
        if shadow is not None:
            written = self.b.getitem(shadow, index, type=_shadow_item_type(op))
            if _has_adjoint(op.value.type):
                self._send(op.value, written)
            if isinstance(written.type, ArrayType):
                self.b.setitem(shadow, index, self.b.const(0.0, op.target.type.dtype))
            else:
                self.b.setitem(shadow, index, self.b.const(0.0, written.type))
        saved = self.recall(op, key=("saved", op))
        self.b.setitem(target, index, saved)
        self.release(op, key=("saved", op))

    def rv_inplace(self, op: ops.InplaceBinary) -> None:
        target = self.recall(op.target)
        saved = self.recall(op, key=("saved", op))
        shadow = self.shadow(op.target)
        kind = op.binop
        if shadow is not None and _has_adjoint(op.value.type):
            if kind is ops.Add:
                self._send(op.value, shadow)
            elif kind is ops.Sub:
                self._send(op.value, self.b.neg(shadow))
            elif kind is ops.Mul:
                self._send(op.value, self.b.mul(shadow, saved))
            elif kind is ops.TrueDiv:
                value = self.recall(op.value)
                self._send(op.value, self.b.neg(self.b.div(self.b.mul(shadow, saved),
                                                           self.b.mul(value, value))))
            else:
                raise self.unsupported(op, f"the in-place operator {kind.SYMBOL}= in reverse "
                                       "mode", f"write it as a = a {kind.SYMBOL} b")
        if shadow is not None and kind in (ops.Mul, ops.TrueDiv):
            self.b.inplace(kind, shadow, self.recall(op.value))
        elif shadow is not None and kind not in (ops.Add, ops.Sub):
            raise self.unsupported(op, f"the in-place operator {kind.SYMBOL}= in reverse mode",
                                   f"write it as a = a {kind.SYMBOL} b")
        self.b.setitem(target, self.b.build_slice(*(self.b.const(None, none),) * 3), saved)
        self.release(op, key=("saved", op))

    def rv_call(self, op: ops.Call) -> None:
        custom = lookup_custom(op.callee)
        if custom is not None and self.rv_custom(op, custom):
            return None
        handler = CALL_ADJOINTS.get(op.callee) if _hashable(op.callee) else None
        if handler is not None:
            self._check_keywords_read(op, handler)
            return handler(self, op)
        if op.callee in ALLOCATIONS or (op.result is not None and _is_float_array(
                op.result.type) and not any(_has_adjoint(v.type) for v in op.operands)):
            return  # an allocation (np.zeros, np.empty_like, ...): nothing flows back
        return self.rv_elementwise(op)

    def rv_method(self, op: ops.MethodCall) -> None:
        handler = METHOD_ADJOINTS.get(op.method)
        if handler is not None:
            self._check_keywords_read(op, handler)
            return handler(self, op)
        if op.result is not None and _is_float_array(op.result.type) \
                and _view_source(op) is not None:
            self._check_keywords_read(op, None)
            return  # a view: its shadow is a view of the source's shadow
        return self.rv_elementwise(op)

    def _check_keywords_read(self, op: Op, handler) -> None:
        unread = unread_keywords(handler, op)
        if unread:
            raise self.unsupported(op, f"{_describe(op)} with the keyword argument(s) "
                                   f"{', '.join(unread)} in reverse mode",
                                   "pass the argument by position (np.tril(A, -1)) or leave "
                                   "the keyword out")

    def _rv_tuple_entry_at(self, op: ops.GetItem) -> None:
        """t[i] with i known at run time (a homogeneous tuple): the entry i was gets the
        adjoint, through a select per entry (tuples are short)."""
        if not _is_float(op.result.type):
            if _has_adjoint(op.result.type):
                raise self.unsupported(op, f"indexing a tuple of {op.result.type} with an index "
                                       "known only at run time, in reverse mode",
                                       "index it with a constant, or make it an array")
            return
        adjoint = self.take_adjoint(op.result)
        n = len(op.value.type.elements)
        index = self.recall(op.index)
        index = self.b.select(self.b.binary(ops.Lt, index, self.b.const(0, index.type)),
                              self.b.add(index, self.b.const(n, index.type)), index)
        zero = self.b.const(0.0, op.result.type)
        for k in range(n):
            taken = self.b.binary(ops.Eq, index, self.b.const(k, index.type))
            self.accumulate(Entry(op.value, k), self.b.select(taken, adjoint, zero))

    def rv_tuple_getitem(self, op: ops.TupleGetItem) -> None:
        if _is_float(op.result.type):
            self.accumulate(Entry(op.tuple, op.index), self.take_adjoint(op.result))

    def rv_build_tuple(self, op: ops.BuildTuple) -> None:
        for k, item in enumerate(op.items):
            if _is_float(item.type):  # (the entry's adjoint may be made later in this pass)
                self.accumulate(item, self.take_adjoint(Entry(op.result, k)))

    # --- errors --------------------------------------------------------------------------------

    def unsupported(self, op: Optional[Op], construct: str, hint: str) -> UnsupportedError:
        loc = op.loc if op is not None else self.fn.loc
        source = linecache.getline(loc.filename, loc.line) if loc.line else ""
        return UnsupportedError(construct, function=self.fn.name, argtypes=self.fn.argtypes,
                                loc=loc, hint=hint, source_line=source)


# --- helpers ---------------------------------------------------------------------------------

def _item_type(op: ops.SetItem):
    from ..ir import typing
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
    if isinstance(op, ops.MethodCall) and op.method == "transpose":
        return op.receiver
    if isinstance(op, ops.Call) and any(op.callee is f for f in _VIEW_FUNCTIONS):
        return op.positional[0]
    # reshape/ravel may copy (a non-contiguous input): their results get their own shadows,
    # sent back to the input by rv_reshape
    return None


# numpy functions whose result is always a view of their first argument (a permutation of its
# axes): the result's shadow is the same view of the argument's shadow, so a write through the
# view reaches the argument's gradient and nothing needs sending back
_VIEW_FUNCTIONS = (np.transpose, np.swapaxes, np.moveaxis)


def _advanced_index(op: ops.GetItem) -> bool:
    t = op.index.type
    items = t.elements if isinstance(t, TupleType) else (t,)
    return any(isinstance(item, ArrayType) for item in items)


def _elementwise(op: Op) -> bool:
    """Ops whose result entry k depends only on the operands' entries k (after broadcasting):
    for them the forward rule's tangent of a unit input is the diagonal of the Jacobian."""
    if isinstance(op, (ops.BinaryOp,)):
        return not isinstance(op, ops.MatMul)
    if isinstance(op, (ops.UnaryOp, ops.Cast, ops.Select)):
        return True
    return isinstance(op, ops.Call) and (isinstance(op.callee, (np.ufunc, nb.DUFunc))
                                         or op.callee in _ELEMENTWISE_FUNCTIONS)


_ELEMENTWISE_FUNCTIONS = (np.where, np.clip, np.sinc)  # numpy functions, not ufuncs


def _without_unit_factor(derivative: Value, unit: Value) -> Value:
    """`d` for a derivative the rule built as `unit * d` or `d * unit` (most rules multiply the
    tangent by the partial derivative): 1 * d is d, and an array product costs a pass."""
    op = getattr(derivative, "op", None)
    if isinstance(op, ops.Mul) and unit in op.operands:
        other = op.rhs if op.lhs is unit else op.lhs
        if other.type == derivative.type:
            return other
    return derivative


def _values_of(op: Op) -> tuple:
    return (*op.operands, *([op.result] if op.result is not None else []))


def _varied_tuples(op: Op, varied: set) -> list:
    """Positions of tuple operands holding a derivative (no elementwise rule takes tuples)."""
    return [k for k, v in enumerate(_positional(op)) if isinstance(v.type, TupleType)
            and _has_adjoint(v.type) and v in varied]


def _mentions_array(op: Op) -> bool:
    values = list(op.operands) + ([op.result] if op.result is not None else [])
    return any(isinstance(v.type, ArrayType) for v in values)


def _refuse_reverse_over_reverse(self, op: Op) -> None:
    raise self.unsupported(op, "reverse mode over a derived reverse rule (reverse over reverse: "
                           "a gradient of a function that calls moonlite.grad, vjp, ...)",
                           "differentiate the gradient in forward mode instead: moonlite.jvp "
                           "of it, moonlite.hvp, moonlite.hessian")


# One handler per op class in each half of the pass, with no default: an op class without an
# entry is an error here (tests/ad/test_handlers.py walks every op class), never a silent pass.
_LOCALS_AND_TAPES = (ops.LoadLocal, ops.StoreLocal, ops.TapeNew, ops.TapePush, ops.TapePop,
                     ops.TapePeek)
_CONTROL = (ops.Phi, ops.Jump, ops.Branch, ops.Raise)  # handled by the block driver

FORWARD_HANDLERS = {
    **{cls: _refuse_reverse_over_reverse for cls in _LOCALS_AND_TAPES},
    **{cls: _ReversePass.fw_default for cls in (
        ops.Constant, ops.GlobalRef, ops.Undef, ops.Cast, ops.Select, ops.MethodCall,
        ops.GetAttr, ops.GetItem, ops.TupleGetItem, ops.BuildSlice, ops.Jump, ops.Branch,
        ops.Raise, *ops.BINARY_OPS, *ops.UNARY_OPS)},
    ops.SetItem: _ReversePass.fw_setitem,
    ops.InplaceBinary: _ReversePass.fw_inplace,
    ops.Return: _ReversePass.fw_return,
    ops.Call: _ReversePass.fw_call,
    ops.BuildTuple: _ReversePass.fw_build_tuple,
}

REVERSE_HANDLERS = {
    **{cls: _refuse_reverse_over_reverse for cls in _LOCALS_AND_TAPES},
    **{cls: _ReversePass.rv_elementwise for cls in (ops.Cast, ops.Select, *ops.BINARY_OPS,
                                                    *ops.UNARY_OPS)},
    ops.Return: _ReversePass.rv_return,
    ops.Constant: _ReversePass.rv_nothing,
    ops.GlobalRef: _ReversePass.rv_nothing,
    ops.Undef: _ReversePass.rv_nothing,
    ops.GetAttr: _ReversePass.rv_getattr,
    ops.BuildSlice: _ReversePass.rv_nothing,
    ops.BuildTuple: _ReversePass.rv_build_tuple,
    ops.TupleGetItem: _ReversePass.rv_tuple_getitem,
    ops.GetItem: _ReversePass.rv_getitem,
    ops.SetItem: _ReversePass.rv_setitem,
    ops.InplaceBinary: _ReversePass.rv_inplace,
    ops.Call: _ReversePass.rv_call,
    ops.MethodCall: _ReversePass.rv_method,
    ops.MatMul: _ReversePass.rv_matmul,
}

ALLOCATIONS = (np.empty, np.zeros, np.ones, np.empty_like, np.zeros_like, np.ones_like)


