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
from .types import Type, from_numba

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
    key = _operator_key_of(pyfunc, argtypes, kwtypes)
    if key is not None:
        found = _operator_results.get(key)
        if found is None:
            found = _operator_results[key] = _typed_call(pyfunc, argtypes, kwtypes)
        return found
    return _typed_call(pyfunc, argtypes, kwtypes)


def _operator_key_of(pyfunc, argtypes, kwtypes):
    """`operator_key` of a call the builder makes (moonlite types converted only for an
    operator it may answer for)."""
    try:
        if pyfunc not in TYPED_BY_TYPES:
            return None
    except TypeError:  # an unhashable callee (a bound method of an array, ...)
        return None
    return operator_key(pyfunc, _numba_args(argtypes), kwtypes)


# (operator, argument types) -> result type, for `operator_key`'s calls: asking numba anew
# cost 0.2-0.4 ms per operation, about half of the AD passes of a forward-over-reverse rule
_operator_results: dict = {}

# operators whose typing on plain scalars (or a read of an array at int indices) depends on
# nothing but the argument types (`operator_key`)
TYPED_BY_TYPES = frozenset([
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.neg, operator.pos, operator.lt, operator.le,
    operator.gt, operator.ge, operator.eq, operator.ne, operator.and_, operator.or_,
    operator.xor, operator.not_, operator.iadd, operator.isub, operator.imul,
    operator.itruediv, operator.getitem])
_SCALARS = (_numba.types.Float, _numba.types.Integer, _numba.types.Boolean)


def operator_key(func, args, kws):
    """A key that determines numba's typing of the call `func(*args)` (numba types; `func` an
    operator or numba's function type of one), or None when that typing may depend on more:
    an operator of `TYPED_BY_TYPES` on non-literal scalars, or reading an array at
    non-literal ints. moonlite's IR builder and its derived-code typing cache
    (`lower/typing_cache.py`) remember numba's answers by it."""
    if kws:
        return None
    op = func.typing_key if isinstance(func, _numba.types.Function) else func
    try:
        if op not in TYPED_BY_TYPES:
            return None
    except TypeError:  # an unhashable callee
        return None
    if all(_plain_scalar(a) for a in args):
        return (op, tuple(args))
    if op is operator.getitem and len(args) == 2 and type(args[0]) is _numba.types.Array \
            and _plain_index(args[1]):
        return (op, tuple(args))
    return None


def _plain_scalar(t) -> bool:
    return isinstance(t, _SCALARS) and not isinstance(t, _numba.types.Literal)


def _plain_index(t) -> bool:
    if isinstance(t, _numba.types.UniTuple):
        return _plain_scalar(t.dtype) and isinstance(t.dtype, _numba.types.Integer)
    return _plain_scalar(t) and isinstance(t, _numba.types.Integer)


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
