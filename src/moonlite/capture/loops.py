"""How the importer reads for loops: `range`, `zip`, `enumerate` and numba's iterator protocol
(`getiter`, `iternext`, `pair_first`, `pair_second`) become counted loops (`iterators.py`)."""

from __future__ import annotations

from .. import _numba as nb
from ..ir.types import from_numba, int64
from . import statics as st
from .iterators import CountedLoop, NotIterable, counted_loop, range_length

nbt = nb.types


class LoopReads:
    """Mixin of `Importer` (it provides `b`, `lookup`, `value`, `typemap`, `unsupported`,
    `_iterable`, `loop_phis`, `loop_conds`)."""

    def call_range(self, expr, target):
        args = [self.value(a) for a in expr.args]
        if len(args) == 1:
            args = [self.b.const(0, args[0].type), args[0]]
        if len(args) == 2:
            args.append(self.b.const(1, args[0].type))
        return st.RangeArgs(*args)

    def call_zip(self, expr, target):
        return st.ZipArgs([self._iterable(self.lookup(a)) for a in expr.args])

    def call_enumerate(self, expr, target):
        if len(expr.args) != 1 or expr.kws:
            self.unsupported("enumerate() with a start value", "add the offset to the index")
        return st.EnumerateArgs(self._iterable(self.lookup(expr.args[0])))

    def ex_getiter(self, expr, target):
        if self.list_analysis.root(expr.value.name) in self.list_analysis.resized_while_walked:
            self.unsupported("a for loop over a list that changes the same list's length "
                             "(append, extend, +=, insert, pop, remove, clear)",
                             "loop over a copy (`for v in ys.copy():`), or fill a numpy array")
        if isinstance(self.typemap[expr.value.name], nbt.Generator):
            self.unsupported("generators (a function that uses `yield`, iterated here)",
                             "return an array of the values instead of yielding them")
        iterable = self._iterable(self.lookup(expr.value))
        index_type = from_numba(getattr(self.typemap[target.name], "yield_type", nbt.intp))
        try:
            loop = counted_loop(self.b, iterable, index_type)
        except NotIterable as exc:
            self.unsupported(f"for-loops with {exc}",
                             "loop over range(len(...)) and index explicitly")
        self.loop_started(target.name, loop)
        return loop

    def ex_iternext(self, expr, target):
        loop = self.lookup(expr.value)
        if not isinstance(loop, CountedLoop):
            self.unsupported("iterators used outside a for statement", "use a for loop")
        header = self.b.block
        phi = self.b.phi(loop.index_type, hint="i")
        cond, nxt = loop.emit_header(self.b, phi.result)
        self.loop_phis.append((phi, loop.start, nxt, header))
        if loop.element is None:
            element = phi.result
        else:
            element = st.LazyElement(lambda b, idx=phi.result, f=loop.element: f(b, idx))
        step = st.LoopStep(element, cond)
        self.loop_conds[id(cond)] = step
        return step

    def ex_pair_first(self, expr, target):
        return self._loop_step(expr).element

    def ex_pair_second(self, expr, target):
        return self._loop_step(expr).cond

    def _loop_step(self, expr) -> st.LoopStep:
        step = self.lookup(expr.value)
        if not isinstance(step, st.LoopStep):
            self.unsupported("iterator protocol outside a for statement", "use a for loop")
        return step

    def call_length_of_iterator(self, expr, target):
        """How many entries a for loop's iterator yields: numba rewrites `np.array([g(v) for v
        in it])` (no filter) to fill an array of that length (see `call_empty_inferred`)."""
        loop = self.lookup(expr.args[0])
        if not isinstance(loop, CountedLoop):
            self.unsupported("length_of_iterator of something other than a for loop's "
                             "iterator", "report this kernel")
        return self.b.call(range_length, [loop.start, loop.stop, loop.step], None, int64)
