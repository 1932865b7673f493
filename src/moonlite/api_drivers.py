"""Derived functions whose body is a generated njit *driver* around derived rules.

`hessian`, `jacfwd`, `jacrev`, `jvp` and `hvp` are `DerivedDispatcher`s (callable from Python
and from njit code, compiled once per signature). For each signature they build a moonlite
function that checks and copies its arguments (`ad/guards.py`), calls the driver (an njit
function generated for that signature: a loop over directions or output entries calling the
derived rules), notes nans for the retry (`ad/nan_retry.py`) and returns; the driver and its
rules are inlined into it, so the whole derivative compiles as one function.

The driver is generated because numba needs each arity and each Jacobian shape spelled out.
Two things kept first calls slow, and are avoided here:
- numba types a call of an njit function by compiling it, so capturing a driver compiled its
  rules, which were then inlined and compiled again: drivers are captured with
  `calls_typed_from_ir` (a rule typed from its IR's signature), and the driver itself is
  never compiled on its own (its result type comes from its capture);
- a slice assignment (`H[:, k] = column`) makes numba compile its broadcasting check, whose
  error message is formatted at run time (`str` of ints, string concatenation): 1.6-2 s of
  every process's first Hessian. Drivers fill columns element by element instead.
"""

from __future__ import annotations

import inspect

import numpy as np

from . import _numba as nb
from .ad.context import PassContext
from .ad.guards import emit_guards
from .ad.inline import inline_njit_calls
from .ad.nan_retry import NAN_NOTES, emit_nan_notes
from .cache import attach_disk_cache
from .capture import capture_types
from .driver import PASS_CONTEXT
from .ir import Builder
from .ir.cached_calls import DRIVER_NAMES
from .ir.types import from_numba
from .lower import DerivedDispatcher
from .lower.dispatcher import calls_typed_from_ir


def api_dispatcher(f, api: str, argnames: list, derive, options: tuple, recipe: tuple,
                   retry=None):
    """The DerivedDispatcher `{api}_f` of the public API, deriving its IR per signature with
    `derive(argtypes)`: bounds-checked like `f`, rerun through `retry()` when a call notes a
    nan (`ad/nan_retry.py`), pickled as `recipe` (a call rebuilding it), cached on disk under
    `(api, *options)`."""
    disp = DerivedDispatcher(f"{api}_{f.py_func.__name__}", argnames, derive,
                             bool(f.targetoptions.get("boundscheck")), retry, NAN_NOTES)
    disp.recipe = recipe
    if list(inspect.signature(f.py_func).parameters) == list(argnames):
        disp.takes_parameters_of = f.py_func  # its defaults may be left out
    attach_disk_cache(disp, f, (api, *options))
    if retry is not None:
        disp.njit_variant = _variant_maker(f, api, argnames, disp, retry, options)
    return disp


def _variant_maker(f, api: str, argnames: list, plain, retry, options: tuple):
    """`njit_variant()` of dispatcher `plain`: the dispatcher numba calls in its place inside
    njit code, made on first use. Nobody there reruns a derivative holding a nan, so this one
    does it itself: it runs `plain`'s code and, on a nan, `retry()`'s (strong zeros), both
    inlined into it. Compiling it costs both variants, paid only by njit callers."""
    made = []

    def variant():
        if not made:
            strong = retry()
            name = f"{api}_{f.py_func.__name__}_in_njit"
            disp = DerivedDispatcher(name, argnames, lambda argtypes: retrying_ir(
                name, argnames, plain, strong, argtypes),
                bool(f.targetoptions.get("boundscheck")))
            disp.origin = plain  # what `moonlite.jvp(g, ...)` inside njit code means by `g`
            disp.takes_parameters_of = plain.takes_parameters_of
            attach_disk_cache(disp, f, (api, *options, "in njit"))
            made.append(disp)
        return made[0]
    return variant


def retrying_ir(name: str, argnames: list, plain, strong, argtypes: tuple):
    """`plain(*args)`, or `strong(*args)` when that holds a nan, with both inlined. The guards
    in `plain` copy what it writes, so `strong` sees the caller's arguments unchanged."""
    first_ir = plain.ir_for(argtypes)
    b = Builder.new_function(name, [from_numba(t) for t in argtypes], argnames,
                             first_ir.return_type)
    entry = b.new_block("entry")
    b.position_at_end(entry)
    args = list(b.function.args)
    first = b.call(plain, args, type=first_ir.return_type)
    bad = emit_nan_notes(b, first)
    if bad is None:
        b.ret(first)
    else:
        again, done = b.new_block("retry"), b.new_block("done")
        b.branch(bad, again, done)
        b.position_at_end(again)
        second = b.call(strong, args, type=first_ir.return_type)
        b.jump(done)
        b.position_at_end(done)
        result = b.phi(first_ir.return_type)
        result.add_incoming(entry, first)
        result.add_incoming(again, second)
        b.ret(result.result)
    return inline_njit_calls(b.function, keep=lambda c: c is not plain and c is not strong,
                             context=PASS_CONTEXT)


def njit_driver(name: str, source: str, namespace: dict):
    """The njit function `name` defined by `source`, which sees `np`, `namespace` and the
    cached `zeros` and `ascontiguousarray` (numba compiles `np.zeros` in every process that
    types a call of it: 0.3 s of a Hessian's first call; ir/cached_calls.py)."""
    scope = {"np": np, **DRIVER_NAMES, **namespace}
    exec(compile(source, f"<moonlite {name}>", "exec"), scope)
    return nb.njit(scope[name])


def driver_function(name: str, argtypes: tuple, names: list, driver, rules: tuple,
                    function_name: str, *, written=frozenset(), nan_notes: bool = False):
    """The moonlite function `name(*args)`: guards (aliasing refused, `written` arrays
    copied), `driver(*args)`, nan notes if `nan_notes`, with `driver` and `rules` inlined."""
    with calls_typed_from_ir():
        body = capture_types(driver, tuple(argtypes))
    b = Builder.new_function(name, [from_numba(t) for t in argtypes], names, body.return_type)
    b.position_at_end(b.new_block("entry"))
    args = emit_guards(b, list(b.function.args), written, function_name)  # ad/guards.py
    result = b.call(driver, args, type=body.return_type)
    if nan_notes:
        emit_nan_notes(b, result)  # the Python call then reruns the strong-zeros variant
    b.ret(result)

    def callee_ir(f, types):
        return body if f is driver else PASS_CONTEXT.callee_ir(f, types)

    context = PassContext(callee_ir=callee_ir, forward_rule=PASS_CONTEXT.forward_rule)
    with calls_typed_from_ir():
        return inline_njit_calls(b.function, keep=lambda c: c is not driver and c not in rules,
                                 context=context)


def contiguous(argtypes: tuple) -> tuple:
    """`argtypes` with every array in C layout. A driver passes its rules C-contiguous arrays
    (seeds, fresh copies, `np.ascontiguousarray` of other layouts), so the rules it inlines are
    derived for C arrays: typed from their IR, they must get exactly the types they were derived
    for."""
    return tuple(t.copy(layout="C") if isinstance(t, nb.types.Array) and t.layout != "C" else t
                 for t in argtypes)


def rule_arguments(argtypes: tuple, copied=frozenset()) -> tuple:
    """(source binding `q{i}` to C-contiguous versions of the arrays of other layouts,
    [the name to pass the rule for each argument]): `c{i}` (a fresh copy the driver makes
    before each evaluation) for the indices in `copied`, `q{i}` for other arrays not in C
    layout, `a{i}` for the rest."""
    prelude, names = "", []
    for i, t in enumerate(argtypes):
        if i in copied:
            names.append(f"c{i}")
        elif isinstance(t, nb.types.Array) and t.layout != "C":
            prelude += f"    q{i} = ascontiguousarray(a{i})\n"
            names.append(f"q{i}")
        else:
            names.append(f"a{i}")
    return prelude, names


def c_order_index(flat: str, array: str, ndim: int) -> str:
    """Source of the index of entry `flat` (in C order) of an `ndim`-dimensional `array`."""
    if ndim == 0:
        return "()"
    flat = f"({flat})"
    parts, stride = [], ""
    for k in reversed(range(ndim)):
        term = f"({flat}{stride})" if stride else flat
        parts.append(f"{term} % {array}.shape[{k}]" if k > 0 else term)
        stride += f" // {array}.shape[{k}]"
    return "(" + ", ".join(reversed(parts)) + ",)"


def spelled_shape(*shapes_and_ndims) -> str:
    """Source of the concatenation of (shape tuple source, ndim) pairs: numba's IR as moonlite
    captures it adds no tuples, so `a.shape + b.shape` is spelled out."""
    dims = [f"{shape}[{k}]" for shape, ndim in shapes_and_ndims for k in range(ndim)]
    return "(" + "".join(d + ", " for d in dims) + ")"
