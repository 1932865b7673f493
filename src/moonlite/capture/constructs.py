"""How the importer reads the containers and call forms of real kernels (issue #20): list
literals (read as the tuples of their items), arrays unpacked, `*args` parameters and `f(*t)`
calls, `a.flat` in loops, methods of jitclass instances. `Importer` inherits these; each either
gives ordinary IR that every AD mode already differentiates, or refuses the use it cannot
follow (a list appended to, a list passed on) with a message naming it.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir.core import Value
from ..ir.types import OpaqueType, TupleType, from_numba, int64
from . import rewrites
from . import statics as st
from .iterators import check_unpack_length

nbt = nb.types


class ConstructReads:
    """Mixin of `Importer` (it provides `b`, `lookup`, `value`, `type_of`, `unsupported`,
    `_coerce`, `_const_value`)."""

    def ex_build_list(self, expr, target):
        element = self.typemap[target.name].dtype
        items = []
        for var in expr.items:
            bound = self.lookup(var)
            items.append(bound if isinstance(bound, st.ListLiteral)
                         else self._coerce(self.value(var), from_numba(element)))
        return st.ListLiteral(items)

    def _list_as_tuple(self, literal: st.ListLiteral) -> Value:
        return self.b.build_tuple([self._list_as_tuple(item) if isinstance(item, st.ListLiteral)
                                   else item for item in literal.items])

    def _list_entry(self, literal: st.ListLiteral, index):
        if not isinstance(index, int) or not -len(literal.items) <= index < len(literal.items):
            self.unsupported(f"indexing a list literal of {len(literal.items)} entries with "
                             f"{index!r}", "index it with an integer in range")
        return literal.items[index]

    def _unpack_array(self, value: Value, count: int, target) -> Value:
        """`a, b = x` for an array x: its length checked (numba raises ValueError too), then a
        tuple of x[0], x[1], ... (entries, or rows of a 2-D array), read as any getitem."""
        self.b.call(check_unpack_length, [self.b.call(len, [value], type=int64),
                                          self.b.const(count, int64)])
        rows = self.type_of(target).elements
        return self.b.build_tuple([self.b.getitem(value, self.b.const(k, int64), rows[k])
                                   for k in range(count)])

    def _jitclass_method_call(self, fn, receiver: Value, expr, target):
        """`obj.method(...)` of a jitclass instance is a call of the method's njit function with
        `obj` first (numba compiles it so): AD passes then see an njit callee like any other."""
        args = [receiver] + self._positional(expr)
        kws = {name: self.value(v) for name, v in expr.kws}
        if kws:
            folded = rewrites.fold_keywords(fn, args, kws, self._const_value)
            if folded is None:
                self.unsupported(f"the method .{fn.py_func.__name__}() called with keywords it cannot "
                                 "take by position", "pass the arguments by position")
            args = folded
        return self.b.call(fn, args, None, self.type_of(target))

    def _positional(self, expr) -> list:
        """A call's positional arguments, with a `*t` spread (`f(a, *t)`: t a tuple)."""
        if self._spreads_a_list(expr):  # min([a, b]) is min(a, b)
            return list(self.lookup(expr.args[0]).items)
        args = [self._argument(expr, a) for a in expr.args]
        if expr.vararg is None:
            return args
        spread = self.value(expr.vararg)
        if not isinstance(spread.type, TupleType):
            self.unsupported(f"a call spreading a {spread.type} with *", "spread a tuple, or "
                             "pass the entries explicitly")
        return args + [self.b.tuple_getitem(spread, k) for k in range(len(spread.type))]

    def _spreads_a_list(self, expr) -> bool:
        if len(expr.args) != 1 or expr.kws or expr.vararg is not None:
            return False
        callee, bound = self.lookup(expr.func), self.lookup(expr.args[0])
        return (isinstance(callee, st.StaticObject) and (callee.obj is min or callee.obj is max)
                and isinstance(bound, st.ListLiteral) and len(bound.items) >= 2
                and all(isinstance(i, Value) and i.type.is_scalar for i in bound.items))

    def _argument(self, expr, var) -> Value:
        """A call's argument; a list literal as the tuple of its items where the callee treats
        the two alike."""
        bound = self.lookup(var)
        if not isinstance(bound, st.ListLiteral):
            return self.value(var)
        callee = self.lookup(expr.func)
        if not (isinstance(callee, st.StaticObject)
                and any(callee.obj is f for f in READS_A_LIST_AS_A_TUPLE)):
            self.value(var)  # refused, naming the construct
        return self._list_as_tuple(bound)

    def _iterable(self, bound):
        """What a for loop walks: a list literal as the tuple of its items, `a.flat` as
        `np.ravel(a)` (C order, as `.flat`)."""
        if isinstance(bound, st.ListLiteral):
            return self._list_as_tuple(bound)
        if isinstance(bound, st.FlatIterator):
            return self.b.call(np.ravel, [bound.array])
        return bound

    def call_tuple(self, expr, target):
        """`tuple(t)` of a tuple is t (Python wraps the tuple of `f(*t)` so); of a list literal,
        its items."""
        bound = self.lookup(expr.args[0]) if len(expr.args) == 1 and not expr.kws else None
        if isinstance(bound, st.ListLiteral):
            return self._list_as_tuple(bound)
        if isinstance(bound, Value) and isinstance(bound.type, TupleType):
            return bound
        self.unsupported("tuple() of anything but a tuple or a list literal",
                         "build the tuple from its entries")


class StarArgs:
    """The parameters a `*args` tuple was spread into (see `Importer._new_function`)."""

    def __init__(self, values: list):
        self.values = values


def is_star_args(t) -> bool:
    return isinstance(t, (nbt.StarArgTuple, nbt.StarArgUniTuple))


def jitclass_method(method: st.BoundMethod):
    """The njit function of a jitclass instance's method, or None."""
    t = method.receiver.type
    if isinstance(t, OpaqueType) and isinstance(t.numba_type, nbt.ClassInstanceType):
        return t.numba_type.jit_methods.get(method.name)
    return None


# callees numba gives the same result for a list as for a tuple of the same items
READS_A_LIST_AS_A_TUPLE = (np.array, np.asarray, sum, len, min, max)
