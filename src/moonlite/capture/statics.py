"""Compile-time objects the importer tracks instead of turning them into IR values.

numba's IR names modules, functions, bound methods, range objects and exception instances with
ordinary variables; in moonlite IR they are not values at all. The importer binds such a variable
to one of these records, and the op that consumes it (a call, a `getiter`, a `raise`) reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..ir.core import Value


@dataclass
class StaticObject:
    """A Python object known at compile time: a module, function, class, njit dispatcher."""

    obj: object


@dataclass
class BoundMethod:
    """`receiver.name` where numba typed the attribute as a method; consumed by a call."""

    receiver: Value
    name: str


@dataclass
class RangeArgs:
    """The result of `range(...)`, already normalised to start/stop/step values."""

    start: Value
    stop: Value
    step: Value


@dataclass
class ZipArgs:
    sources: list


@dataclass
class EnumerateArgs:
    source: object


@dataclass
class ListLiteral:
    """`[a, b, ...]`, kept as its items (nested literals stay ListLiterals). Read where numba
    treats a list and a tuple alike (`np.array(...)`, `sum`, `len`, `min`, `max`, a constant
    index, a for loop) as the tuple of its items; any other use (appending, writing an entry,
    carrying it around a loop) is refused: a list is mutable, a tuple is not."""

    items: list


@dataclass
class FlatIterator:
    """`a.flat` of an array `a`: iterated as `np.ravel(a)` (the same entries in the same
    order); any other use reads the attribute itself."""

    array: Value
    type: object  # the moonlite type of `a.flat`


@dataclass
class ExceptionInstance:
    """`SomeError(args)`, built only to be raised."""

    exc_class: type
    args: list


@dataclass
class LazyElement:
    """The element a for-loop yields, materialised at the start of the loop body.

    numba computes the element in the loop header, before the exit test; reading `a[i]` there
    would read one past the end on the last test. So the element is built in the body instead,
    where the index is known to be in range."""

    build: object  # callable(builder) -> Value
    value: Optional[Value] = None


@dataclass
class LoopStep:
    """The result of `iternext`: the loop index, the continue condition, the element."""

    element: object  # a Value (range loops) or a LazyElement
    cond: Value
    pending: list = field(default_factory=list)
