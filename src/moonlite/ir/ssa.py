"""Local variables back into SSA values: each `load` becomes the value last stored, through
phis where paths with different stores meet.

The construction of Braun et al. ("Simple and Efficient Construction of Static Single
Assignment Form", CC 2013) on a finished CFG: the value of a variable at the end of a block is
its last store there, else its value at the block's start; at the start of a block with one
predecessor that predecessor's end value, with several a phi of theirs (made before its
incoming values are asked for, so that loops terminate), removed again when every incoming
value is the same. Every load must be reached by a store on every path (the callers store a
variable's first value where the value it stands for is defined).
"""

from __future__ import annotations

from . import ops
from .cfg import predecessors
from .core import Function, Value


def promote_locals(fn: Function, variables) -> Function:
    """In place: the loads and stores of the `LocalVar`s `variables` replaced by SSA values."""
    variables = set(variables)
    if not variables:
        return fn
    _Promotion(fn, variables).run()
    return fn


class _Promotion:
    def __init__(self, fn: Function, variables: set):
        self.fn, self.variables = fn, variables
        self.preds = predecessors(fn)
        self.last_store: dict = {}  # (block, var) -> the value its last store stores
        self.at_start: dict = {}  # (block, var) -> the variable's value where the block starts
        self.loaded: dict = {}  # result of a load -> the value it reads
        self.phis: list = []

    def run(self) -> None:
        promoted = [op for op in self.fn.ops() if self._promoted(op)]
        for op in promoted:
            if isinstance(op, ops.StoreLocal):
                self.last_store[(op.block, op.var)] = op.value
        for op in promoted:
            if isinstance(op, ops.LoadLocal):
                self._value_of_load(op)
        for op in promoted:
            op.block.ops.remove(op)
        self._replace_uses()
        self._drop_trivial_phis()

    def _promoted(self, op) -> bool:
        return isinstance(op, (ops.LoadLocal, ops.StoreLocal)) and op.var in self.variables

    def _value_of_load(self, load) -> Value:
        found = self.loaded.get(load.result)
        if found is not None:
            return found
        block = load.block
        before = block.ops[:block.ops.index(load)]
        stores = [op for op in before if isinstance(op, ops.StoreLocal) and op.var is load.var]
        found = self._resolve(stores[-1].value) if stores else self._start_value(block, load.var)
        self.loaded[load.result] = found
        return found

    def _resolve(self, value: Value) -> Value:
        """A stored value that is itself a promoted load: the value that load reads."""
        op = getattr(value, "op", None)
        if isinstance(op, ops.LoadLocal) and op.var in self.variables:
            return self._value_of_load(op)
        return value

    def _end_value(self, block, var) -> Value:
        stored = self.last_store.get((block, var))
        return self._resolve(stored) if stored is not None else self._start_value(block, var)

    def _start_value(self, block, var) -> Value:
        key = (block, var)
        if key in self.at_start:
            return self.at_start[key]
        preds = self.preds[block]
        if not preds:
            raise AssertionError(f"local ${var.name} is loaded before any store")
        if len(preds) == 1:
            found = self.at_start[key] = self._end_value(preds[0], var)
            return found
        phi = ops.Phi(var.type, hint=var.name)
        block.insert(0, phi)
        self.phis.append(phi)
        self.at_start[key] = phi.result
        for pred in preds:
            phi.add_incoming(pred, self._end_value(pred, var))
        return phi.result

    def _replace_uses(self) -> None:
        for op in self.fn.ops():
            op.operands = tuple(self.loaded.get(v, v) for v in op.operands)

    def _drop_trivial_phis(self) -> None:
        """A phi whose incoming values are all one value (or itself) is that value; repeated
        until none is left, since dropping one can make another trivial."""
        replaced: dict = {}
        changed = True
        while changed:
            changed = False
            for phi in list(self.phis):
                values = {replaced.get(v, v) for v in phi.operands} - {phi.result}
                if len(values) == 1:
                    replaced[phi.result] = values.pop()
                    phi.block.ops.remove(phi)
                    self.phis.remove(phi)
                    changed = True
            if changed:
                for key, value in list(replaced.items()):
                    while value in replaced:
                        value = replaced[value]
                    replaced[key] = value
                for op in self.fn.ops():
                    op.operands = tuple(replaced.get(v, v) for v in op.operands)
