"""numba's typing of derived code, with the signatures of arithmetic on scalars remembered.

Derived code is mostly arithmetic on floats and ints and reads of array entries: numba types
each such operation anew, trying its operator's templates in turn (0.13-0.16 ms each: 17,000
operations cost 2.4 s of the 38 s of a sample of corpus kernels' derivatives). While moonlite
types derived code (`derived_typing()`), the signature numba found for an operator on
non-literal scalars (or an array read at non-literal ints: `ir.typing.operator_key`) is kept and
reused: it depends on nothing but those types. Every other call is typed by numba as before, and other
compiles in the process never see the cache.
"""

from __future__ import annotations

from .. import _numba as nb
from ..ir.typing import TYPED_BY_TYPES, operator_key as _key
from .thread_flag import ThreadFlag

_derived = ThreadFlag()
_signatures: dict = {}  # (operator, argument types) -> numba's signature
_call_types: dict = {}  # (function type, operator, argument types) -> numba's signature


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
    _install_call_types()
    _install_operator_values(context)


def _install_operator_values(context) -> None:
    """numba types a reference to an operator (typing and lowering each binop) by first trying
    `typeof`, which fails for operators with an error message it formats through colorama
    (18,000 of them, about 0.15 s, in compiling one forward-over-reverse rule), then looking it
    up among the context's globals. While moonlite compiles, operators `typeof` cannot type go
    straight to that look-up; what it returns is unchanged."""
    numbas = type(context).resolve_value_type
    untypeable = frozenset(op for op in TYPED_BY_TYPES if not _typeof_types(op))

    def resolve_value_type(val):
        if _derived:
            try:
                known = val in untypeable
            except TypeError:  # an unhashable value
                known = False
            if known:
                found = context._get_global_type(val)
                if found is not None:
                    return found
        return numbas(context, val)

    context.resolve_value_type = resolve_value_type


def _typeof_types(value) -> bool:
    try:
        nb.typeof(value, nb.Purpose.constant)
    except ValueError:
        return False
    return True


def _install_call_types() -> None:
    """Route `Function.get_call_type` through the cache too: numba's lowering types every
    operator again that way (`lower_binop`, `lower_getitem`), outside the typing context,
    which cost about a tenth of lowering a forward-over-reverse rule. The key includes the
    function type itself, whose templates (and the implementation keys it records on
    success, read back by lowering) belong to that instance."""
    numbas = nb.types.Function.get_call_type

    def get_call_type(self, context, args, kws):
        key = _key(self, args, kws) if _derived else None
        if key is None:
            return numbas(self, context, args, kws)
        key = (self,) + key
        found = _call_types.get(key)
        if found is None:
            found = _call_types[key] = numbas(self, context, args, kws)
        return found

    nb.types.Function.get_call_type = get_call_type
