"""numba's typing of derived code, with the signatures of arithmetic on scalars remembered.

Derived code is mostly arithmetic on floats and ints and reads of array entries: numba types
each such operation anew, trying its operator's templates in turn (0.13-0.16 ms each: 17,000
operations cost 2.4 s of the 38 s of a sample of corpus kernels' derivatives). While moonlite
types derived code (`derived_typing()`), the signature numba found for an operator of
`_OPERATORS` on non-literal scalars (or an array read at non-literal ints) is kept and reused:
it depends on nothing but those types. Every other call is typed by numba as before, and other
compiles in the process never see the cache.
"""

from __future__ import annotations

import operator

from .. import _numba as nb
from .thread_flag import ThreadFlag

_OPERATORS = frozenset([
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.neg, operator.pos, operator.lt, operator.le,
    operator.gt, operator.ge, operator.eq, operator.ne, operator.and_, operator.or_,
    operator.xor, operator.not_, operator.iadd, operator.isub, operator.imul,
    operator.itruediv, operator.getitem])
_SCALARS = (nb.types.Float, nb.types.Integer, nb.types.Boolean)

_derived = ThreadFlag()
_signatures: dict = {}  # (operator, argument types) -> numba's signature


def derived_typing():
    """While open (in this thread), operators on scalars are typed through the cache."""
    return _derived.raised()


def install() -> None:
    """Route the CPU typing context's function typing through `_resolve`."""
    context = nb.typing_context()
    numbas = type(context).resolve_function_type

    def resolve(func, args, kws):
        key = _key(func, args, kws) if _derived else None
        if key is None:
            return numbas(context, func, args, kws)
        found = _signatures.get(key)
        if found is None:
            found = numbas(context, func, args, kws)
            if found is not None:
                _signatures[key] = found
        return found

    context.resolve_function_type = resolve


def _key(func, args, kws):
    """The cache key of a call of `func`, or None when its typing may depend on more."""
    if kws:
        return None
    op = func.typing_key if isinstance(func, nb.types.Function) else func
    try:
        if op not in _OPERATORS:
            return None
    except TypeError:  # an unhashable callee
        return None
    if all(_plain_scalar(a) for a in args):
        return (op, tuple(args))
    if op is operator.getitem and len(args) == 2 and type(args[0]) is nb.types.Array \
            and _plain_index(args[1]):
        return (op, tuple(args))
    return None


def _plain_scalar(t) -> bool:
    return isinstance(t, _SCALARS) and not isinstance(t, nb.types.Literal)


def _plain_index(t) -> bool:
    if isinstance(t, nb.types.UniTuple):
        return _plain_scalar(t.dtype) and isinstance(t.dtype, nb.types.Integer)
    return _plain_scalar(t) and isinstance(t, nb.types.Integer)
