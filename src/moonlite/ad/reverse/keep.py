"""What the pullback reads of the forward sweep: kept in locals or on tapes, or
recomputed, and recalled in the pullback.

Keys: a value of the primal (its own value), `Saved(op)` (what a write overwrote, restored by
the pullback) or `ShadowOf(value)` (a shadow array made in a loop). Each kept key maps to a
`Kept(how, where)`; `How` says how the pullback gets it back.

A mixin of the reverse pass (`core._ReversePass`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ...ir import ops
from ...ir.clone import clone_op
from ...ir.core import Argument, Op, Value
from ...ir.types import ArrayType
from ...ir.readonly import never_written
from .reads import reads, rematerializable
from .types import has_adjoint as _has_adjoint

_SHAPES = ("shape", "size", "ndim")


class How(enum.Enum):
    DIRECT = "direct"    # usable everywhere as it is: an argument, or made where the rule starts
    LOCAL = "local"      # stored in a local once (its block runs at most once)
    TAPE = "tape"        # pushed on a tape each time its block runs; peeked, then popped
    COUNTER = "counter"  # a loop counter in a local, stepped back by the pullback (loops.py)
    ALIAS = "alias"      # the same as another key's (`where` is that key)


@dataclass(frozen=True)
class Kept:
    how: How
    where: object  # a Value (DIRECT), a LocalVar (LOCAL, COUNTER), a tape (TAPE), a key (ALIAS)


@dataclass(frozen=True)
class Saved:
    """Key: what the write `op` overwrote (the pullback puts it back)."""
    op: Op


@dataclass(frozen=True)
class ShadowOf:
    """Key: the shadow array of `value` (a Value or a tuple Entry)."""
    value: object


class KeptValues:
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
            if ind.bound is not None:  # and sets the counter to where a run ends
                reads_of.add(ind.bound)
        # the way back (branches.py): a condition read from memory the function writes is
        # kept, never recomputed. The pullback decides at the reverse of the merge block,
        # before it restores what the branch wrote (`if n[0] > 0: n[0] -= 1` went the other
        # way: adversarial tests)
        read_from_written = set()
        for choice in self.choices.values():
            reads_of.update(choice.conditions())
            read_from_written.update(c for c in choice.conditions()
                                     if self._reads_written_memory(c))
        need, work = set(read_from_written), list(reads_of - read_from_written)
        kept_anyway = frozenset(reads_of)
        while work:  # a recomputed value needs what it is computed from
            value = work.pop()
            if value in need or value in self.remat:
                continue
            if rematerializable(self.fn, value, self._written, kept_anyway, self.loop_blocks):
                self.remat.add(value)
                work.extend(value.op.operands)
            else:
                need.add(value)
        return need

    def _reads_written_memory(self, value: Value) -> bool:
        """True if `value` is computed (through scalar ops) from an entry or a field read out
        of memory other than an argument the function never writes."""
        seen, work = set(), [value]
        while work:
            v = work.pop()
            op = getattr(v, "op", None)
            if op is None or v in seen or isinstance(op, ops.Phi):
                continue
            seen.add(v)
            if isinstance(op, (ops.GetItem, ops.GetAttr)) \
                    and not isinstance(v.type, ArrayType) \
                    and getattr(op, "name", None) not in _SHAPES:
                base = op.value
                while getattr(base, "op", None) is not None and isinstance(
                        base.op, (ops.GetItem, ops.GetAttr, ops.Call)) and base.op.operands:
                    base = base.op.operands[0]  # an entry of a view: its array
                if base not in self._written:  # (the cache reads.rematerializable keeps)
                    self._written[base] = isinstance(base, Argument) \
                        and never_written(self.fn, base)
                if not self._written[base]:
                    return True
                continue
            work.extend(op.operands)
        return False

    def keep(self, old: Value, new: Value, key=None) -> None:
        """Make `new` (the copy of `old`, or its shadow) readable in the pullback."""
        key = key if key is not None else old
        block = old.block if isinstance(old, Op) else getattr(getattr(old, "op", None), "block",
                                                               None)
        if block is None:  # an argument: available everywhere
            self.kept[key] = Kept(How.DIRECT, new)
        elif key in self.induction_of:  # a loop counter: stepped back by the pullback
            var = ops.LocalVar(new.type, f"counter{len(self.kept)}")
            self.b.store(var, new)
            self.kept[key] = Kept(How.COUNTER, var)
        elif block in self.loop_blocks:
            tape = self._tape_for(new.type)
            self.b.tape_push(tape, new)
            self.kept[key] = Kept(How.TAPE, tape)
        else:
            var = ops.LocalVar(new.type, f"kept{len(self.kept)}")
            self.b.store(var, new)
            self.kept[key] = Kept(How.LOCAL, var)

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
            clone = clone_op(old.op, values, {})
            if getattr(clone, "checked", False):
                # the sweep's division already passed its check: a recomputed one needs no
                # zero test and raise path (per iteration in a pullback loop)
                clone.checked = False
            return self.b.emit(clone).result
        how, where = self.kept[key].how, self.kept[key].where
        if how is How.ALIAS:
            return self.recall(where)
        if how is How.DIRECT:
            return where
        if how is How.LOCAL and isinstance(where.type, ArrayType):
            return self._load_once(where)
        if how in (How.LOCAL, How.COUNTER):
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
        if entry is not None and entry.how is How.TAPE:
            self.recalled.clear()  # recomputed values may depend on the instance dropped here
            self.b.tape_pop(entry.where)
