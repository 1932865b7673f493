"""`jvp` and `hvp` as compiled calls: `DerivedDispatcher`s taking `(primals, tangents)`.

`jvp(f, primals, tangents)` and `hvp(f, primals, tangents)` are Python functions (they take the
kernel as an argument), but after their first call they are a look-up and one call of a numba
dispatcher built once per kernel: `jvp_f(primals, tangents)`. For each pair of tuple types it
compiles a function that takes the tuples apart, checks the tangents (their types when it is
derived, their shapes and the aliasing of written arrays when it runs: `ArgumentError`s raised
from compiled code), and calls the derived rule. The Python-side checks
(`api.checked_primals_and_tangents`) run only on a first call and when a call fails, to say
precisely what was wrong.
"""

from __future__ import annotations

import inspect
from typing import Sequence

import numpy as np

from . import _numba as nb
from .ad.guards import emit_guards
from .ad.inline import inline_njit_calls
from .ad.tangents import mentions_complex
from .api import (_check_arguments, _is_none_tangent, checked_primals_and_tangents,
                  compile_lock)
from .api_drivers import api_dispatcher
from .api_instance_outputs import instance_output_jvp, returned_instance_type
from .api_instances import flat_calls_ir, flat_kernel, has_instance_tangent
from .driver import PASS_CONTEXT, api_cached, api_entry, derived_forward_rule
from .errors import ArgumentError, MoonliteError, UnsupportedError
from .ir import Builder
from .ir.types import (ArrayType, BoolType, FloatType, IntType, NoneType, TupleType,
                       from_numba, is_float_record, none)
from .rules.tangents import tangent_type


@nb.njit(cache=True)
def same_shape(a, b):
    return a.shape == b.shape


def split_arguments(f, argtypes: tuple, api: str):
    """(numba types of the primals, of the tangents) from the dispatcher's two tuple types,
    or ArgumentError / UnsupportedError for what no call could take."""
    name = f"{api}({f.py_func.__qualname__})"
    if len(argtypes) != 2 or not all(isinstance(t, nb.types.BaseTuple) for t in argtypes):
        raise ArgumentError(f"{name}: primals and tangents must be tuples")
    primals, tangents = tuple(argtypes[0].types), tuple(argtypes[1].types)
    if len(primals) != len(tangents):
        raise ArgumentError(f"{name} needs one tangent per primal: got {len(primals)} primals "
                            f"and {len(tangents)} tangents")
    for i, p in enumerate(primals):
        if mentions_complex(from_numba(p)):
            raise UnsupportedError(f"complex arguments (argument {i})",
                                   function=f.py_func.__qualname__,
                                   hint=f"split it into real and imaginary parts (two float "
                                        f"arguments or a float array) before moonlite.{api}")
    return primals, tangents


def unpacked(b: Builder, n: int) -> tuple:
    """The primals and the tangents of the function being built, taken out of its tuples."""
    ptuple, ttuple = b.function.args
    return ([b.tuple_getitem(ptuple, i) for i in range(n)],
            [b.tuple_getitem(ttuple, i) for i in range(n)])


@nb.njit(cache=True)
def copy_into(target, value):
    """`target[...] = value` for `value` of `target`'s shape, entry by entry: numba's
    broadcasting store compiles its shape-mismatch message (numba's int-to-str formatting),
    1.5 s the first time in a process, for an error that cannot happen here."""
    for index in np.ndindex(target.shape):
        target[index] = value[index]


def checked_tangent(b: Builder, primal, tangent, where: str, copies: list = None):
    """The value to pass the rule for `tangent` (converted to the primal's float type), None
    for a primal without one; ArgumentError now for a wrong type, at run time for a wrong
    shape. A tangent array of another memory order than its primal's is passed as a copy in
    that order: (the caller's array, the copy) is appended to `copies`."""
    want, got = tangent_type(primal.type), tangent.type
    if want is None:
        if not isinstance(got, NoneType):
            raise ArgumentError(f"{where}: a {primal.type} argument carries no tangent; pass "
                                f"None for it")
        return None
    if isinstance(got, NoneType):
        raise ArgumentError(f"{where}: the tangent is missing (pass zeros for a direction you "
                            f"do not need)")
    if isinstance(want, FloatType):
        if isinstance(got, (FloatType, IntType)) and not isinstance(got, BoolType):
            return b.cast(tangent, want)
        raise ArgumentError(f"{where}: the tangent of a float must be a real number, got {got}")
    if isinstance(want, ArrayType):
        if not isinstance(got, ArrayType) or got.dtype != want.dtype or got.ndim != want.ndim:
            raise ArgumentError(f"{where}: the tangent of an array must be an array of dtype "
                                f"{want.dtype} with {want.ndim} dimension(s), got {got}")
        same = b.call(same_shape, [primal, tangent])
        bad, ok = b.new_block("tangent_shape_differs"), b.new_block("tangent_shape_ok")
        b.branch(same, ok, bad)
        b.position_at_end(bad)
        b.raise_(ArgumentError, [b.const(f"{where}: the tangent's shape differs from the "
                                         f"argument's")])
        b.position_at_end(ok)
        if got.layout != want.layout:  # the rule is compiled for the primal's memory order
            if want.layout == "A":  # a view typed "A": every axis sliced, the last with a step
                none_ = b.const(None, none)
                whole = [b.build_slice(none_, none_, none_) for _ in range(want.ndim - 1)]
                stepped = b.build_slice(none_, none_, b.const(1))
                index = b.build_tuple(whole + [stepped]) if whole else stepped
                return b.getitem(tangent, index, want)
            order = np.ascontiguousarray if want.layout == "C" else np.asfortranarray
            converted = b.call(order, [tangent], type=want)
            if copies is not None:
                copies.append((tangent, converted))
            return converted
        return tangent
    if is_float_record(want) and got == want:
        return tangent  # a record of the same type (records of other types: below)
    if isinstance(want, TupleType) and isinstance(got, TupleType) and \
            len(got.elements) == len(want.elements):  # entry by entry, converted like the rest
        entries = []
        for k in range(len(want.elements)):
            entry = checked_tangent(b, b.tuple_getitem(primal, k), b.tuple_getitem(tangent, k),
                                    f"{where}[{k}]", copies)
            entries.append(b.const(None, none) if entry is None else entry)
        return b.build_tuple(entries)
    raise ArgumentError(f"{where}: the tangent has type {got}; expected {want}")


def alias_checks(b: Builder, primals: list, tangents: list, written, function_name: str,
                 copy: bool, names=None) -> tuple:
    """`emit_guards` over primals and tangents together (an array the kernel writes, or its
    tangent, may share memory with no other argument); with `copy`, the written ones and their
    tangents are copied. Returns (primals, tangents) to pass on. `names`: the kernel's
    parameters, for the message."""
    n = len(primals)
    written = frozenset(written) | frozenset(i + n for i in written)
    labels = None if names is None else [*names, *(f"the tangent of {p}" for p in names)]
    values = emit_guards(b, primals + tangents, written, function_name, copy=copy,
                         names=labels)
    return values[:n], values[n:]


def parameter_names_of(f, n: int) -> list:
    """The names of `f`'s first `n` parameters (`argument k` past them: *args)."""
    names = list(inspect.signature(f.py_func).parameters)[:n]
    return names + [f"argument {k}" for k in range(len(names), n)]


def compiled_call(f, api: str, key: tuple, dispatcher, primals, tangents):
    """`dispatcher(f)(primals, tangents)`: on the fast path (the dispatcher built, tuples given)
    a look-up and the call; otherwise, and after a failed call, the Python-side checks first
    (their ArgumentError names shapes and dtypes; if they pass, the kernel itself failed)."""
    disp = api_entry(f, key)
    if disp is None or type(primals) is not tuple or type(tangents) is not tuple:
        primals, _ = checked_primals_and_tangents(f, primals, tangents, api)
        return dispatcher(f)(primals, tuple(tangents))
    try:
        return disp(primals, tangents)
    except Exception:
        try:
            checked_primals_and_tangents(f, primals, tangents, api)
        except MoonliteError as exc:
            raise exc from None
        raise


def calls_dispatcher(f, api: str, make_ir, options: tuple, recipe: tuple, retry=None):
    """The DerivedDispatcher `{api}_f(primals, tangents)` with IR
    `make_ir(f, argtypes, *options)`; it pickles as `recipe`."""
    def derive(argtypes: tuple):
        with compile_lock():
            return make_ir(f, tuple(argtypes), *options)

    return api_dispatcher(f, api, ["primals", "tangents"], derive, options, recipe, retry)


# --- jvp ---------------------------------------------------------------------------------------

_JVP = ("jvp",)


def jvp(f, primals: Sequence, tangents: Sequence):
    """`(f(*primals), J f(primals) @ tangents)`, in one compiled forward-mode evaluation.

    `tangents` has one entry per primal: None for int and bool arguments, a float for a float,
    an array of the same shape and dtype for a float array, a tuple for a tuple. Like the primal,
    the forward rule writes into arrays: after the call every input array holds what `f` leaves
    in it, and the tangent array given for it describes that new value.

    After the first call for `f`, a look-up and one call of the compiled `jvp_f(primals,
    tangents)` (`api_calls.py`), which checks the tangents itself.
    """
    try:
        out, dout = compiled_call(f, "jvp", _JVP, _jvp_dispatcher, primals, tangents)
    except UnsupportedError:  # a kernel returning an instance: through its fields
        returned = returned_instance_type(f, primals)
        if returned is None:
            raise
        return instance_output_jvp(jvp, f, returned, tuple(primals), tuple(tangents))
    return out, (None if _is_none_tangent(dout) else dout)


def _jvp_dispatcher(f):
    return api_cached(f, _JVP, lambda: calls_dispatcher(f, "jvp", _jvp_ir, (),
                                                          (_jvp_dispatcher, (f,))))


def _jvp_ir(f, argtypes: tuple):
    primals, _ = split_arguments(f, argtypes, "jvp")
    _check_arguments(f, primals, "jvp")
    if has_instance_tangent(argtypes):  # through the flat kernel (api_instances.py)
        flat = flat_kernel(f, primals)
        return flat_calls_ir(f, "jvp", argtypes, flat, _jvp_dispatcher(flat.fn), repack=False)
    rule = derived_forward_rule(f, primals, eager=False)  # compiled inlined, not on its own
    qualname = f.py_func.__qualname__
    b = Builder.new_function(f"jvp_{f.py_func.__name__}", [from_numba(t) for t in argtypes],
                             ["primals", "tangents"], rule.ir.return_type)
    b.position_at_end(b.new_block("entry"))
    P, T = unpacked(b, len(primals))
    written = rule.written()
    copies = [[] for _ in P]
    passed = [checked_tangent(b, p, t, f"jvp({qualname}): tangent {i}", copies[i])
              for i, (p, t) in enumerate(zip(P, T))]
    # forward mode writes in place; a forward rule computes what it writes when asked
    alias_checks(b, P, T, written, qualname, copy=False, names=parameter_names_of(f, len(P)))
    out = b.call(rule, P + [t for t in passed if t is not None], type=rule.ir.return_type)
    for i in written:  # the new tangent of a written argument, into the caller's array
        for caller_array, copy in copies[i]:
            b.call(copy_into, [caller_array, copy], type=none)
    b.ret(out)
    # one function: numba leaks a reference to an array argument when a callee raises
    return inline_njit_calls(b.function, keep=lambda callee: callee is not rule,
                             context=PASS_CONTEXT)
