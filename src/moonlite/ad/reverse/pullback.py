"""The pullback's control flow: one reverse block per forward block, visited in reverse,
phis handing their adjoints to the edge taken, loops counted down, and the gradients returned.

A mixin of the reverse pass (`core._ReversePass`)."""

from __future__ import annotations



from ...ir import ops
from ...ir.core import Block, Value
from ...ir.types import TupleType, int64, is_record_array, none
from ...rules.records import records_adder
from .branches import Choice
from .types import (Entry, entry_at, has_adjoint as _has_adjoint, is_float as _is_float,
                    leaves, path_of, value_at)
from .keep import ShadowOf
from .reads import known_results, reads


class Pullback:
    def _reverse_block(self, block: Block) -> None:
        self.b.position_at_end(self.rblocks[block])
        own = self._used_only_in_own_block()
        self._zero_adjoints(start=[op.result for op in block.ops if op.result in own])
        late = _read_before_defined(block)
        for op in reversed(block.ops):
            if isinstance(op, self.CONTROL_OPS):
                continue
            self.b.loc = op.loc
            self.REVERSE_HANDLERS[type(op)](self, op)
            if op.result is not None:
                if op.result not in late:
                    self.release(op.result)
                if ShadowOf(op.result) in self.kept and not isinstance(op, ops.InplaceBinary):
                    self.release(op.result, key=ShadowOf(op.result))
            for value in [v for v, reader in late.items() if reader is op]:
                self.release(value)
        phi_adjoints = [(phi, None, self.take_adjoint(phi.result)) for phi in block.phis
                        if _is_float(phi.result.type)]
        phi_adjoints += [(phi, path_of(entry), self.take_adjoint(entry))
                         for phi in block.phis if isinstance(phi.result.type, TupleType)
                         for entry, t in leaves(phi.result) if _is_float(t)]
        for phi in block.phis:
            self.release(phi.result)
            if ShadowOf(phi.result) in self.kept:
                self.release(phi.result, key=ShadowOf(phi.result))
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
        if block in self.choices:
            self._leave_by_branch_condition(self.choices[block], phi_adjoints)
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

    def _leave_by_branch_condition(self, choice, phi_adjoints: list) -> None:
        """The way control came in follows from the conditions of the branches that chose it
        (branches.py)."""
        cond = self.recall(choice.cond)
        true_edge, false_edge = self.b.new_block("rev_true"), self.b.new_block("rev_false")
        self.b.branch(cond, true_edge, false_edge)
        for edge, way in ((true_edge, choice.if_true), (false_edge, choice.if_false)):
            self.b.position_at_end(edge)
            if isinstance(way, Choice):
                self._leave_by_branch_condition(way, phi_adjoints)
                continue
            self._edge_contributions(way, phi_adjoints)
            self.b.jump(self.rblocks[way])

    def _leave_counted_header(self, ind, phi_adjoints: list) -> None:
        """The pullback came along the entry edge iff the counter holds its initial value;
        along the latch it steps the counter back to the previous iteration's."""
        counter = self.recall(ind.phi.result)
        at_entry = self.b.binary(ops.Eq, counter, self.recall(ind.init))
        entry_edge, latch_edge = self.b.new_block("rev_entry"), self.b.new_block("rev_latch")
        self.b.branch(at_entry, entry_edge, latch_edge)
        var = self.kept[ind.phi.result].where
        self.b.position_at_end(entry_edge)
        if ind.reentered and ind.bound is not None:  # where every run ends (loops.py)
            init, bound = self.recall(ind.init), self.recall(ind.bound)
            ran = self.b.binary(ops.Lt, init, bound)
            self.b.store(var, self.b.select(ran, bound, init))
        elif ind.reentered:  # the instance before this entry into the loop
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
            if not ind.reentered or ind.bound is not None:
                continue
            var = self.kept[ind.phi.result].where
            tape = self.counter_tapes[ind.phi.result] = self._tape_for(var.type)
            self.b.position_before_terminator(self.exit_of[ind.entry])
            self.b.tape_push(tape, self.b.load(var))

    def _edge_contributions(self, pred: Block, phi_adjoints: list) -> None:
        for phi, path, adjoint in phi_adjoints:  # path: of a float in a tuple phi
            self.accumulate(entry_at(phi.value_from(pred), path or ()), adjoint)

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
        elif isinstance(value.type, TupleType):  # the cotangent is a tuple: leaf by leaf
            for entry, t in leaves(value):
                path = path_of(entry)
                cotangent = value_at(self.b, self.dout, path)
                if path in self.out_shadow_vars:
                    self.b.inplace(ops.Add, self.b.load(self.out_shadow_vars[path]), cotangent)
                elif _is_float(t):  # (an int or bool entry's cotangent is unused)
                    self.accumulate(entry, cotangent)
        else:
            shadow = self.shadow(value)
            if shadow is not None and is_record_array(value.type):  # field by field
                adder = records_adder(value.type.dtype.numba_type)
                self.b.call(adder, [shadow, self.dout], type=none)
            elif shadow is not None:
                self.b.inplace(ops.Add, shadow, self.dout)


def _read_before_defined(block: Block) -> dict:
    """Values of `block` whose adjoint reads come from an op before their definition, each
    mapped to the first such op: the pullback, which runs the block backwards, releases them
    after that op's adjoint rather than at their own. Only `known_results` reads do that
    (`c = cos(x); s = sin(x)`: the adjoint of cos reads s)."""
    position = {op.result: k for k, op in enumerate(block.ops) if op.result is not None}
    late: dict = {}
    for k, op in enumerate(block.ops):
        for value in known_results(op).values():
            if position.get(value, -1) > k and value in reads(op):
                late.setdefault(value, op)
    return late
