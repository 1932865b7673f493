"""Result types of operations, as numba infers them.

moonlite follows numba's typing rules rather than restating them: when a pass builds an op without
naming its result type, the builder asks numba's typing context what the matching Python
operation returns for these operand types. The IR therefore always agrees with what numba will
infer when the IR is lowered.
"""

from __future__ import annotations

import operator

from .. import _numba
from ..errors import MoonliteError
from .cached_calls import wrapper_for
from .types import ArrayType, BoolType, FloatType, IntType, Type, from_numba

_refreshed = False


def _context():
    global _refreshed
    ctx = _numba.typing_context()
    if not _refreshed:
        # numba registers numpy's typings when the target context loads its implementations,
        # which normally happens at the first compilation: do it here so typing works first.
        _numba.target_context().refresh()
        ctx.refresh()
        _refreshed = True
    return ctx


class TypingFailure(MoonliteError):
    """numba has no typing for this operation on these types."""


def _numba_args(argtypes) -> tuple:
    return tuple(t.to_numba() if isinstance(t, Type) else t for t in argtypes)


def _resolve(fnty, argtypes, kwtypes, what: str) -> Type:
    ctx = _context()
    kws = {k: (v.to_numba() if isinstance(v, Type) else v) for k, v in (kwtypes or {}).items()}
    try:
        sig = ctx.resolve_function_type(fnty, _numba_args(argtypes), kws)
    except Exception as exc:  # numba raises many kinds of typing errors
        raise TypingFailure(f"numba cannot type {what} on {list(map(str, argtypes))}: {exc}") \
            from None
    if sig is None:
        raise TypingFailure(f"numba has no typing for {what} on {list(map(str, argtypes))}")
    return from_numba(sig.return_type)


def call_result_type(pyfunc, argtypes, kwtypes=None) -> Type:
    """The type numba gives `pyfunc(*args, **kws)` (pyfunc: operator, math/numpy function, ...)."""
    key = _scalar_operator_key(pyfunc, argtypes, kwtypes)
    if key is not None:
        found = _scalar_results.get(key)
        if found is None:
            found = _scalar_results[key] = _typed_call(pyfunc, argtypes, kwtypes)
        return found
    return _typed_call(pyfunc, argtypes, kwtypes)


# (operator, argument types) -> result type, for operators on plain scalars (and reads of an
# array at int indices): numba's answer depends on nothing else, and asking it anew cost 0.2-0.4
# ms per operation, about half of the AD passes of a forward-over-reverse rule
_scalar_results: dict = {}
_SCALAR_TYPES = (FloatType, IntType, BoolType)


def _scalar_operator_key(pyfunc, argtypes, kwtypes):
    try:
        if kwtypes or pyfunc not in _OPERATORS:
            return None
    except TypeError:  # an unhashable callee (a bound method of an array, ...)
        return None
    argtypes = tuple(argtypes)
    if all(type(t) in _SCALAR_TYPES for t in argtypes):
        return (pyfunc, argtypes)
    if pyfunc is operator.getitem and len(argtypes) == 2 and type(argtypes[0]) is ArrayType \
            and type(argtypes[1]) is IntType:
        return (pyfunc, argtypes)
    return None


def _typed_call(pyfunc, argtypes, kwtypes) -> Type:
    ctx = _context()
    name = getattr(pyfunc, "__name__", repr(pyfunc))
    pyfunc = wrapper_for(pyfunc, len(argtypes), bool(kwtypes))  # typed as it will be lowered
    try:
        fnty = pyfunc if pyfunc in _OPERATORS else ctx.resolve_value_type(pyfunc)
    except Exception as exc:  # numba raises ValueError for objects it cannot type
        raise TypingFailure(f"numba cannot type calls of {name}: {exc}") from None
    return _resolve(fnty, argtypes, kwtypes, name)


def method_result_type(receiver: Type, method: str, argtypes, kwtypes=None) -> Type:
    ctx = _context()
    bound = ctx.resolve_getattr(receiver.to_numba(), method)
    if bound is None:
        raise TypingFailure(f"{receiver} has no method {method!r} in numba")
    return _resolve(bound, argtypes, kwtypes, f"{receiver}.{method}")


def attribute_type(value: Type, name: str) -> Type:
    t = _context().resolve_getattr(value.to_numba(), name)
    if t is None:
        raise TypingFailure(f"{value} has no attribute {name!r} in numba")
    return from_numba(t)


_OPERATORS = {getattr(operator, n) for n in dir(operator) if not n.startswith("_")}
