"""For-loops become counted loops.

numba expresses `for x in it` with an iterator object (`getiter`, `iternext`, `pair_first`,
`pair_second`). moonlite IR has no iterators: every supported loop is an integer index running
from `start` towards `stop` by `step`, with a phi in the loop header, and the element (for arrays,
tuples, `zip`, `enumerate`) is read from the index. AD passes then see ordinary arithmetic and
getitems instead of opaque iterator state.

Supported iterables: `range(...)` (any start/stop/step, step sign known or not), arrays (rows of
a 2-D array), homogeneous tuples, `zip(...)` and `enumerate(...)` over those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import _numba as nb
from ..ir import ops
from ..ir.builder import Builder
from ..ir.core import Value
from ..ir.ops import constant_value
from ..ir.types import ArrayType, IntType, TupleType, Type, int64
from .statics import EnumerateArgs, RangeArgs, ZipArgs


class NotIterable(Exception):
    """Raised with a description of what could not be iterated; the importer reports it."""


@dataclass
class IndexSource:
    """Something indexable by 0..length-1 with a known element builder."""

    length: object  # callable(builder) -> Value
    element: object  # callable(builder, k) -> Value


def index_source(obj, element_type: Type) -> IndexSource:
    """The IndexSource for an iterable met inside zip/enumerate (or a top-level array/tuple)."""
    if isinstance(obj, IndexSource):  # already one (a list of tuples: lists.py)
        return obj
    if isinstance(obj, Value) and isinstance(obj.type, ArrayType):
        return IndexSource(lambda b: b.call(len, [obj], type=int64),
                           lambda b, k: b.getitem(obj, k, type=_row_type(obj.type)))
    if isinstance(obj, Value) and isinstance(obj.type, TupleType):
        n = len(obj.type.elements)
        if n and len(set(obj.type.elements)) != 1:
            raise NotIterable("iteration over a heterogeneous tuple")
        return IndexSource(lambda b: b.const(n, int64),
                           lambda b, k: b.getitem(obj, k, type=obj.type.elements[0]))
    if isinstance(obj, RangeArgs):
        if constant_value(obj.start) != 0 or constant_value(obj.step) != 1:
            raise NotIterable("range(start, stop, step) inside zip/enumerate")
        return IndexSource(lambda b: obj.stop, lambda b, k: k)
    if isinstance(obj, ZipArgs):
        return _zip_source([index_source(s, None) for s in obj.sources])
    if isinstance(obj, EnumerateArgs):
        inner = index_source(obj.source, None)
        return IndexSource(inner.length,
                           lambda b, k: b.build_tuple([k, inner.element(b, k)]))
    raise NotIterable(f"iteration over {_describe(obj)}")


def _zip_source(sources: list) -> IndexSource:
    def length(b: Builder) -> Value:
        n = sources[0].length(b)
        for s in sources[1:]:
            n = b.call(min, [n, s.length(b)], type=int64)
        return n

    return IndexSource(length, lambda b, k: b.build_tuple([s.element(b, k) for s in sources]))


def _row_type(t: ArrayType) -> Type:
    if t.ndim == 1:
        return t.dtype
    layout = "C" if t.layout == "C" else "A"
    return ArrayType(t.dtype, t.ndim - 1, layout, t.readonly)


def _describe(obj) -> str:
    if isinstance(obj, Value):
        return f"a value of type {obj.type}"
    return type(obj).__name__


@dataclass
class CountedLoop:
    """A loop index from start towards stop by step (of known sign, or decided at run time)."""

    start: Value
    stop: Value
    step: Value
    index_type: Type
    element: object = None  # callable(builder, index) -> Value, or None: the index itself

    def step_sign(self):
        step = constant_value(self.step)
        return None if step is None else int(math.copysign(1, step))

    def emit_header(self, b: Builder, index: Value) -> tuple:
        """Emit the exit test and the next index in the header; return (cond, next_index)."""
        sign = self.step_sign()
        if sign == 1:
            cond = b.binary(ops.Lt, index, self.stop)
        elif sign == -1:
            cond = b.binary(ops.Gt, index, self.stop)
        else:
            upward = b.binary(ops.Gt, self.step, b.const(0, self.index_type))
            cond = b.select(upward, b.binary(ops.Lt, index, self.stop),
                            b.binary(ops.Gt, index, self.stop))
        return cond, b.binary(ops.Add, index, self.step, hint=None)


def counted_loop(b: Builder, iterable, index_type: Type) -> CountedLoop:
    """Turn what `getiter` was applied to into a CountedLoop, emitting setup code at `b`."""
    if isinstance(iterable, RangeArgs):
        start, stop, step = (b.cast(v, index_type) for v in
                             (iterable.start, iterable.stop, iterable.step))
        if constant_value(step) == 0:
            raise NotIterable("range() with a zero step")
        if constant_value(step) is None:
            b.call(check_range_step, [step])
        return CountedLoop(start, stop, step, index_type)
    source = index_source(iterable, None)
    if not isinstance(index_type, IntType):
        index_type = int64
    return CountedLoop(b.const(0, int64), source.length(b), b.const(1, int64), int64,
                       source.element)


def _check_range_step_py(step):
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    return None


check_range_step = nb.njit(_check_range_step_py)


def _check_unpack_length_py(length, count):
    if length > count:
        raise ValueError("too many values to unpack")
    if length < count:
        raise ValueError("not enough values to unpack")
    return None


check_unpack_length = nb.njit(cache=True)(_check_unpack_length_py)


def _range_length_py(start, stop, step):
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // -step)


# how many times a counted loop runs
range_length = nb.njit(cache=True)(_range_length_py)
