"""Derived rules: capture, transform, verify, lower, and cache per signature.

A derived rule is built once per (function, numba argument types, mode parameters) and reused:
by the public API, and by passes that meet a call of an njit function inside a kernel. Building
is guarded by numba's own re-entrant compiler lock (one lock: a `grad(f)` dispatcher compiling in
one thread holds numba's lock when it asks for a rule, so a separate lock taken in the other
order by `jvp` in another thread deadlocked), so several threads asking for the same rule get
one rule, and a
derivation that meets a call of a function already being derived (recursion) is refused with a
clear error rather than looping.

The driver sits above the passes (`ad/`), `capture/` and `lower/`: it is the one module that
uses all three. A pass that meets a call of an njit function gets what it needs about the callee
(its IR, its derived forward rule) from `PASS_CONTEXT`, which the driver hands it; and the
driver forgets its rules when a user registers a rule or switches debug mode through the hooks
of `rules/custom.py` and `debug.py`, which import nothing above them.
"""

from __future__ import annotations

import functools
import linecache
import weakref

from . import _numba as nb
from .ad.context import PassContext
from .ad.forward import forward_transform
from .ad.guards import written_arguments
from .ad.hoist import hoist_loop_invariants
from .ad.inline import inline_njit_calls
from .ad.reverse import reverse_transform, reverse_transform_split
from .cache import attach_disk_cache
from .capture import capture_types, list_helpers
from .rules.jitclasses import takes_or_returns_instance
from .ir.loop_exits import add_loop_exit_phis
from .debug import on_mode_change, verified, verified_in_debug
from .errors import UNKNOWN_LOC, CaptureError, SourceLoc, UnsupportedError
from .ir import Builder, ops
from .ir.types import OpaqueType, from_numba
from .ir.typing import TypingFailure, call_result_type
from .lower import lower
from .lower.dispatcher import compile_now, live_derived_dispatchers, quiet_performance_warnings
from .rules.custom import lookup_custom, on_rules_changed
from .timing import phase

_lock = nb.global_compiler_lock
_in_progress: set = set()


# --- caches ------------------------------------------------------------------------------------
# Derived rules and API entries live in dictionaries held by the function they derive from
# (`f._moonlite_rules`, `f._moonlite_api`), so they go when the function goes: a kernel made in
# a loop or a closure leaves no compiled rules behind. `_functions` knows them all, weakly, for
# `invalidate()`.
_functions: "weakref.WeakSet" = weakref.WeakSet()


def _caches_of(f) -> tuple:
    """(rules, api entries) of `f`: numba argument types -> rules, Python values -> entries."""
    pair = f.__dict__.get("_moonlite_caches")
    if pair is None:
        pair = f.__dict__["_moonlite_caches"] = ({}, {})
        _functions.add(f)
    return pair


def _rules_of(f) -> dict:
    return _caches_of(f)[0]


def api_entry(f, key):
    """The API entry cached for `f` under `key`, or None (also for an `f` or a key that could
    never have one: the caller's checks then say what is wrong)."""
    pair = getattr(f, "__dict__", {}).get("_moonlite_caches")
    try:
        return None if pair is None else pair[1].get(key)
    except TypeError:  # an unhashable key (argnums given as a list)
        return None


def derived_forward_rule(f, argtypes: tuple, width: int = 1, active=None, eager: bool = True):
    """The compiled forward rule of njit function `f` for numba `argtypes` and `width`, with
    tangent arguments for the argument indices in `active` (None: every differentiable one).
    `eager=False`: compiled at its first call, not now (for a rule its caller inlines)."""
    active = None if active is None else frozenset(active)
    key = ("forward", f, tuple(argtypes), width, active)
    with _lock:
        rule = _rules_of(f).get(key)
        if rule is not None:
            return rule
        if key in _in_progress:
            raise UnsupportedError(
                "recursive functions in forward mode", function=_name(f), argtypes=argtypes,
                loc=_def_line(f), source_line=_source_of_def(f),
                hint="rewrite the recursion as a loop, or write a custom rule for the function")
        _in_progress.add(key)
        try:
            primal = verified_in_debug(primal_ir(f, argtypes, forward=True), "capture")
            with phase("AD passes"):
                flat = _instances_read_through(primal)
                forward = forward_transform(flat, width, active, context=PASS_CONTEXT)
            rule = _lowered(verified(forward, "forward mode"), f,
                            ("forward rule", _types_key(argtypes), width, _active_key(active)),
                            eager)
            rule.written = _precise_written(primal)
        finally:
            _in_progress.discard(key)
        _rules_of(f)[key] = rule
        return rule


def derived_reverse_rule(f, argtypes: tuple, active=None, strong_zeros: bool = False):
    """The compiled reverse rule of njit function `f` for numba `argtypes`:
    `rule(*args, dout) -> (out, grads)` with one gradient per argument (`None` for an array
    argument outside `active` that `f` never writes: see `reverse_transform`). `strong_zeros`:
    the variant with every adjoint product zero-guarded (`ad/nan_retry.py`)."""
    active = None if active is None else frozenset(active)
    key = ("reverse", f, tuple(argtypes), active, strong_zeros)
    with _lock:
        rule = _rules_of(f).get(key)
        if rule is None:
            flat = _inlined_primal(f, argtypes)
            # compiled at its first call: grad and hessian inline its IR into their own
            with phase("AD passes"):
                reverse = reverse_transform(flat, active, context=PASS_CONTEXT,
                                            strong_zeros=strong_zeros)
            rule = _rules_of(f)[key] = _lowered(
                verified(reverse, "reverse mode"), f,
                ("reverse rule", _types_key(argtypes), _active_key(active), strong_zeros), False)
            rule.written = written_arguments(flat)  # what guards.py copies and checks
        return rule


def derived_hvp_rule(f, argtypes: tuple, width: int, active, strong_zeros: bool = False):
    """Forward mode over the reverse rule of `f` (Hessian-vector products): the compiled
    `rule(*args, dout, *tangents_0, ..., *tangents_{width-1})` returning
    `((out, grads), (dout_0, dgrads_0), ...)`; `dgrads_j` is the Hessian times direction j
    (tangents for the argument indices in `active`; `dout` carries none)."""
    active = frozenset(active)
    key = ("forward over reverse", f, tuple(argtypes), width, active, strong_zeros)
    with _lock:
        rule = _rules_of(f).get(key)
        if rule is None:
            reverse = derived_reverse_rule(f, argtypes, strong_zeros=strong_zeros)
            with phase("AD passes"):
                forward = forward_transform(reverse.ir, width, active, context=PASS_CONTEXT)
            with quiet_performance_warnings():
                rule = lower(verified(forward, "forward mode over reverse mode"), eager=False)
            rule.written = reverse.written
            _rules_of(f)[key] = rule
        return rule


def derived_reverse_split(f, argtypes: tuple) -> tuple:
    """The reverse rule of `f` for numba `argtypes` cut in two compiled callables (for vjp):
    `sweep(*args) -> (out, state)` and `pullback(*args, dout, *state) -> (out, grads)`."""
    key = ("reverse split", f, tuple(argtypes))
    with _lock:
        pair = _rules_of(f).get(key)
        if pair is None:
            flat = _inlined_primal(f, argtypes)
            with phase("AD passes"):
                sweep, pullback = reverse_transform_split(flat, context=PASS_CONTEXT)
            types = _types_key(argtypes)
            pair = _rules_of(f)[key] = (
                _lowered(verified(sweep, "the vjp cut (sweep)"), f, ("vjp sweep", types)),
                _lowered(verified(pullback, "the vjp cut (pullback)"), f,
                         ("vjp pullback", types)))
            pair[0].written = written_arguments(flat)
            # the rule returns a namedtuple output (or one in a tuple) as a plain tuple: vjp
            # makes it one again
            pair[0].output_type = flat.return_type.to_numba()
            pair[0].state_has_lists = any(_is_typed_list(t) for t in
                                          sweep.return_type.elements[1].elements)
        return pair


def _lowered(fn, f, recipe: tuple, eager: bool = True):
    """`lower(fn)`, with the disk cache of derivatives of `f` (if on) under `recipe`: rules
    built on their own (`build_frule`, `build_rrule`, `vjp`) load in a later process without
    compiling. (Rules that grad and hessian inline are never compiled on their own.)"""
    disp = lower(fn, eager=False)
    attach_disk_cache(disp, f, recipe)
    if eager:
        compile_now(disp)
    return disp


def _types_key(argtypes: tuple) -> tuple:
    return tuple(str(t) for t in argtypes)


def _active_key(active):
    return None if active is None else tuple(sorted(active))


def _inlined_primal(f, argtypes: tuple):
    """`f`'s primal IR with every njit call inlined: what reverse mode starts from."""
    primal = verified_in_debug(primal_ir(f, argtypes), "capture")
    with phase("AD passes"):
        flat = inline_njit_calls(primal, context=PASS_CONTEXT)
    flat = verified(flat, "inlining")
    # both in place: `flat` is a fresh copy
    with phase("AD passes"):
        hoisted = hoist_loop_invariants(flat)
    hoisted = verified(hoisted, "loop-invariant code motion")
    with phase("AD passes"):
        exits = add_loop_exit_phis(hoisted)
    return verified(exits, "loop-exit phis")


def _instances_read_through(primal):
    """`primal` with the calls that take or return a jitclass instance inlined, so that fields
    of instances built in it are read out of what they were built from (the reverse pass
    inlines every call): forward mode then gives them no tangent (`capture/jitclasses.py`)."""
    if not any(isinstance(op, ops.Call) and takes_or_returns_instance(op)
               for op in primal.ops()):
        return primal
    return verified(inline_njit_calls(primal, context=PASS_CONTEXT,
                                      only=takes_or_returns_instance, mode="forward mode"),
                    "inlining the calls given jitclass instances")


def _precise_written(primal):
    """The arguments `primal` may write, looking into the njit functions it calls (passing an
    array to one counts as a write otherwise): computed when first asked, for the aliasing
    check of jvp (`guards.py`), which asks only when two arguments share memory."""
    def written():
        try:
            return written_arguments(inline_njit_calls(primal, context=PASS_CONTEXT))
        except UnsupportedError:  # recursion: the conservative answer
            return written_arguments(primal)
    return functools.cache(written)


def written_record_arguments(f, argtypes: tuple) -> frozenset:
    """Indices of the record arguments `f` may write a field of, and of the tuple arguments
    holding arrays it may write into (njit calls looked into): what no driver can copy."""
    uncopied = frozenset(i for i, t in enumerate(argtypes)
                         if isinstance(t, (nb.types.Record, nb.types.BaseTuple)))
    if not uncopied:
        return frozenset()
    return written_arguments(_inlined_primal(f, argtypes)) & uncopied


def _is_typed_list(t) -> bool:
    return isinstance(t, OpaqueType) and isinstance(t.numba_type, nb.types.ListType)


def cached_rule_count() -> int:
    return sum(len(_caches_of(f)[0]) for f in list(_functions))


def clear_cache() -> None:
    """Forget every derived rule and API entry."""
    with _lock:
        for f in list(_functions):
            for cache in _caches_of(f):
                cache.clear()


def invalidate() -> None:
    """Every derivative taken so far may be stale (a user registered a rule, debug mode
    changed, an njit function was recompiled): forget the rules, and make every derived
    dispatcher, including those the user holds, derive and compile again at its next call."""
    with _lock:
        clear_cache()
        for disp in live_derived_dispatchers():
            disp.forget_compiled()


# Derived rules depend on the user's rules, on debug mode (which adds checks), and on the code
# numba compiled for the functions they derive from: a change of any makes them stale.
# rules/ and debug.py sit below the driver, so they call it back; numba's `recompile` (after a
# global a kernel reads changed: numba freezes globals at compile time, and so does capture)
# is wrapped once, here.
on_rules_changed(invalidate)
on_mode_change(invalidate)


def _wrap_recompile(original):
    @functools.wraps(original)
    def recompile(self):
        original(self)
        invalidate()
    recompile.__moonlite_wrapped__ = True
    return recompile


if not getattr(nb.Dispatcher.recompile, "__moonlite_wrapped__", False):
    nb.Dispatcher.recompile = _wrap_recompile(nb.Dispatcher.recompile)


def api_cached(f, key, build):
    """What `build()` returns, built once per `key` for function `f`: the public API's per-call
    fast path. A lookup takes no lock (dict reads are atomic); building takes the compiler
    lock."""
    entry = api_entry(f, key)
    if entry is None:
        with _lock:
            entries = _caches_of(f)[1]
            entry = entries.get(key)
            if entry is None:
                entry = entries[key] = build()
    return entry


def primal_ir(f, argtypes: tuple, forward: bool = False):
    """The IR AD passes start from: `f`'s captured body, or, if the user gave `f` a rule for
    this mode, a function whose body is one call of `f` (so the rule applies, and `f`'s body,
    which may use constructs moonlite cannot differentiate, is never captured). Forward mode
    has no use for a VJP rule: it derives the body of a function that has only one."""
    custom = lookup_custom(f)
    if custom is None or (forward and custom.jvp is None and not custom.nondifferentiable):
        return capture_types(f, tuple(argtypes))
    return _call_through(f, tuple(argtypes))


def _call_through(f, argtypes: tuple):
    types = [from_numba(t) for t in argtypes]
    try:
        result = call_result_type(f, types)
    except TypingFailure as exc:
        raise CaptureError(f"numba could not compile {_name(f)}"
                           f"({', '.join(map(str, argtypes))}): {exc}") from None
    py = getattr(f, "py_func", f)
    b = Builder.new_function(_name(f), types, list(py.__code__.co_varnames[:len(types)])
                             if hasattr(py, "__code__") else [f"a{i}" for i in range(len(types))],
                             result, py_func=py)
    b.position_at_end(b.new_block("entry"))
    b.ret(b.call(f, list(b.function.args), type=result))
    return b.function


def _def_line(f):
    code = getattr(getattr(f, "py_func", f), "__code__", None)
    return SourceLoc(code.co_filename, code.co_firstlineno) if code is not None else UNKNOWN_LOC


def _source_of_def(f) -> str:
    loc = _def_line(f)
    return linecache.getline(loc.filename, loc.line) if loc.line else ""


def _name(f) -> str:
    return getattr(getattr(f, "py_func", f), "__qualname__", repr(f))


# What the passes learn about a called njit function: its IR (captured, or the one a
# moonlite-compiled callable keeps) and its derived forward rule.
PASS_CONTEXT = PassContext(callee_ir=capture_types, forward_rule=derived_forward_rule)
# the column forms of helpers given lists of tuples or arrays: compiled at their first call,
# usually never (the AD passes read their IR)
list_helpers.compile_ir = functools.partial(lower, eager=False)
