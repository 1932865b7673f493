"""`vjp`: the forward sweep now, a pullback to call later, compiled from Python and in njit code.

`vjp(f, *primals)` runs the sweep of `f`'s split reverse rule (`driver.derived_reverse_split`)
on private copies of the arrays `f` writes, copies what `f` leaves in them back into the
caller's arrays, and returns `(out, pullback)`. The pullback is a reference-counted struct
(`PullbackType`, a numba structref) holding the output, the sweep's arguments, its state (the
tapes, never converted to Python objects) and a used flag; calling it (`pullback(dout)`) runs
the compiled pullback once, and a second call raises.

- Inside njit code `vjp` is typed through the overload below (`f` an njit function known at
  compile time) and the pullback is a native value.
- From Python `vjp` is one call of a dispatcher compiled per kernel (`_python_vjp`): the same
  generated code, with the pullback boxed as a `Pullback` object that holds the struct's
  reference. Calling it is one compiled call (`_python_call`) that also says whether the
  gradients hold a nan; only then does Python run the zero-guarded rule (`ad/nan_retry.py`),
  which needs the Python call. Argument checks cost nothing on this path: compiled code checks
  what it must (aliasing, the cotangent's shape), and when a call fails the Python checks run
  to say precisely what was wrong.
"""

from __future__ import annotations

import contextlib
import inspect

import numpy as np

from . import _numba as nb
from .ad.guards import (any_shared_memory, check_aliasing, copied_back_arrays, copy_back,
                        deferred_interrupts, emit_guards, private_copies)
from .ad.nan_retry import has_nan, note_nan_array, note_nan_float
from .api import _check_arguments, _check_njit, compile_lock, instance_type_of
from .api_calls import copy_into
from .api_instance_outputs import (instance_output_vjp, returned_instance_type,
                                   returned_instance_type_at)
from .api_instances import (flat_kernel, flattenable, njit_wrapper, python_flat_values,
                            python_instances)
from .api_reverse import (_as_cotangent, _check_cotangent, _split_rule, _strong_zeros_gradients,
                          inline_rule, parameter_names, refuse_complex)
from .driver import api_cached, api_entry, derived_reverse_split
from .errors import ArgumentError, UnsupportedError
from .ir import Builder
from .ir.types import ArrayType, OpaqueType, TupleType, from_numba, none
from .lower import DerivedDispatcher
from .rules.jitclasses import is_numba_instance_type

types, cgutils, structref = nb.types, nb.cgutils, nb.structref


def vjp(f, *primals, **keywords):
    """`(f(*primals), pullback)`; `pullback(dout)` returns one cotangent per primal (None for
    int and bool arguments, arrays shaped like their primals). Keyword arguments take their
    places in `f`'s parameters (`vjp(f, x, scale=2.0)`), and then the pullback returns one
    cotangent per parameter up to the last one given (a default skipped gets one too).

    `vjp` runs the forward sweep of `f`'s reverse rule on private copies of the arrays `f` may
    write, and keeps what the pullback needs. Once the sweep has finished, your arrays get what
    `f` leaves in them, as after `f(*primals)` (if the sweep raises, they keep what they held).
    `pullback` (once) runs the compiled pullback on the private state and never writes into
    your arrays, so you may reuse them in between. Inside njit code `vjp` works the same way.

    The first call on a kernel runs the sweep and the pullback as two compiled calls from
    Python; from the second on, `vjp` is one call of a compiled dispatcher (`_vjp_dispatcher`),
    which costs a compile once and microseconds per call (docs/user-guide.md).
    """
    if keywords:
        primals = _placed_keywords(f, primals, keywords)
    f = given_parameters_kernel(f, len(primals))
    caller = api_entry(f, _VJP_DISPATCHER)
    if caller is None:
        _check_njit(f, "vjp")
        calls = api_cached(f, ("vjp", "calls"), lambda: [0])
        calls[0] += 1
        if _takes_instances(primals):  # (its dispatcher is then never built)
            return _instance_vjp(f, primals)
        if calls[0] == 1:
            return _first_vjp_or_instance(f, primals)
        caller = _vjp_dispatcher(f)
    try:
        return caller(*primals)
    except Exception:
        if any(map(_is_record_value, primals)) or _returns_tuple(f, primals):
            return _first_vjp(f, primals)  # what the dispatcher refuses (_vjp_ir)
        returned = returned_instance_type(f, primals)
        if returned is not None:
            return instance_output_vjp(vjp, f, returned, primals)
        if _takes_instances(primals):
            return _instance_vjp(f, primals)
        _checked_split(f, primals)  # raises the precise error when it finds one
        raise


def _placed_keywords(f, primals: tuple, keywords: dict) -> tuple:
    """The primals with the keyword arguments put in their parameters' places, the defaults
    of the parameters skipped before the last one given filled in."""
    _check_njit(f, "vjp")
    name = f.py_func.__qualname__
    signature = inspect.signature(f.py_func)
    kinds = [p.kind for p in signature.parameters.values()]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        raise ArgumentError(f"vjp({name}): keyword arguments with a kernel taking *args: pass "
                            f"every argument positionally")
    try:
        bound = signature.bind(*primals, **keywords)
    except TypeError as exc:
        raise ArgumentError(f"vjp({name}): {exc}") from None
    names = list(signature.parameters)
    last = max(names.index(k) for k in bound.arguments)
    bound.apply_defaults()
    return tuple(bound.arguments[n] for n in names[:last + 1])


def given_parameters_kernel(f, n: int):
    """`f`, or for a call passing only its first `n` parameters and leaving the rest to their
    defaults, an njit function of those `n` calling `f` with them: its vjp's pullback returns
    cotangents of the given primals only (the dispatcher's stub has no defaults, and its
    pullback would also return cotangents of the defaults)."""
    code = getattr(getattr(f, "py_func", None), "__code__", None)
    if code is None or code.co_flags & inspect.CO_VARARGS or code.co_kwonlyargcount:
        return f
    if not code.co_argcount - len(f.py_func.__defaults__ or ()) <= n < code.co_argcount:
        return f
    return api_cached(f, ("given parameters", n), lambda: _call_with_first(f, n))


def _call_with_first(f, n: int):
    names = ", ".join(f.py_func.__code__.co_varnames[:n])
    source = f"def {f.py_func.__name__}({names}):\n    return _moonlite_kernel({names})\n"
    return njit_wrapper(f, source, f"with its first {n} parameters", f.py_func.__qualname__,
                        {"_moonlite_kernel": f})


def _first_vjp_or_instance(f, primals: tuple):
    """`_first_vjp`, or for a kernel returning a jitclass or structref instance (which the
    reverse pass refuses) `vjp` through the fields of its output (api_instance_outputs.py)."""
    try:
        return _first_vjp(f, primals)
    except UnsupportedError:
        returned = returned_instance_type(f, primals)
        if returned is None:
            raise
        return instance_output_vjp(vjp, f, returned, primals)


def _tuple_output(sweep) -> bool:
    return isinstance(sweep.ir.return_type.elements[0], TupleType)


def _returns_tuple(f, primals: tuple) -> bool:
    """True if `f`'s reverse rule for `primals` returns a tuple (False if it has none)."""
    try:
        sweep, _ = derived_reverse_split(f, tuple(f.typeof_pyval(p) for p in primals))
    except Exception:  # the reason is found again by _checked_split
        return False
    return _tuple_output(sweep)


def _is_record_value(value) -> bool:
    if isinstance(value, tuple):
        return any(map(_is_record_value, value))
    return isinstance(value, np.void)


def _holds_record(t) -> bool:
    if isinstance(t, types.BaseTuple):
        return any(map(_holds_record, t))
    return isinstance(t, types.Record)


def _checked_split(f, primals: tuple) -> tuple:
    """The sweep and pullback of `f` for `primals`, after the Python-side checks: the argument
    count, what capture or the AD passes refuse, arguments sharing memory with a written one.
    The first call runs them; the dispatcher's calls only when they fail, to say why."""
    _check_arguments(f, primals, "vjp")
    sweep, pull = _split_rule(f, primals)
    if sweep.written and any_shared_memory(primals):
        check_aliasing(f.py_func.__qualname__, primals, sweep.written, parameter_names(f))
    return sweep, pull


def _first_vjp(f, primals: tuple):
    """`vjp` without compiling anything but the rules: the sweep and the pullback called from
    Python, the sweep's state (tapes; lists of arrays as Python lists) held between them."""
    sweep, pull = _checked_split(f, primals)
    name = f.py_func.__qualname__
    written = sweep.written  # (arrays, records and tuples: ad/guards.py)
    work = private_copies(primals, written)
    guard = deferred_interrupts if sweep.state_has_lists else contextlib.nullcontext
    with guard():
        out, state = sweep(*work)
    out = as_returned_value(sweep.output_type, out)  # (a namedtuple: the rule's is a tuple)
    for i in written:  # what f leaves in its arguments (a tuple's arrays too)
        if isinstance(primals[i], (np.ndarray, np.void, tuple)):
            copy_back(primals[i], work[i])
    used = []

    def pullback(dout):
        _check_cotangent(dout, out, f"vjp({name}) pullback")
        if used:
            raise ArgumentError(f"vjp({name}): this pullback was already used: call vjp again")
        used.append(True)
        cotangent = _as_cotangent(dout, out)
        with guard():
            _, grads = pull(*work, cotangent, *state)
        if has_nan(tuple(grads)):  # again with zero-guarded products (ad/nan_retry.py)
            argtypes = tuple(f.typeof_pyval(p) for p in primals)
            grads = _strong_zeros_gradients(f, argtypes, work, cotangent)
        return tuple(grads)

    pullback.arguments = work  # the private arrays, restored by the pullback (moonlite.testing)
    return out, pullback


def _takes_instances(primals: tuple) -> bool:
    """Jitclass instances among the arguments, each of a class whose fields all carry
    derivatives or hold no floats. (An instance of another class is read as a constant, its
    gradient None, as in the kernel's own vjp; `grad` with respect to it is refused.)"""
    found = [t for t in map(instance_type_of, primals) if t is not None]
    return bool(found) and all(map(flattenable, found))


def _instance_vjp(f, primals: tuple):
    """`vjp` of a kernel taking jitclass instances: `vjp` of its flat form
    (`api_instances.py`), whose pullback's gradients of an instance's fields are made an
    instance of its class."""
    _check_arguments(f, primals, "vjp")
    flat = flat_kernel(f, tuple(f.typeof_pyval(p) for p in primals))
    flat_primals = python_flat_values(flat, primals)
    if any_shared_memory(primals):  # said in the kernel's names (m.w), not the flat form's
        sweep, _ = _split_rule(flat.fn, flat_primals)
        written = {i for i, group in enumerate(flat.groups)
                   if set(group if isinstance(group, tuple) else (group,)) & sweep.written}
        check_aliasing(f.py_func.__qualname__, primals, written, parameter_names(f))
    out, pull = vjp(flat.fn, *flat_primals)

    def pullback(dout):
        return python_instances(flat, pull(dout), primals)

    # the private copies the pullback restored, fields of instances in new instances
    pullback.arguments = python_instances(flat, pull.arguments, primals)
    return out, pullback


# --- the pullback: a structref ------------------------------------------------------------------

class PullbackType(types.StructRef):
    """The pullback of `f`'s split rule for one signature: fields `out`, `work` (the sweep's
    arguments), `state` (its tapes) and `used`; calling it calls `pull`. `origin` is
    `(f, argtypes)`, for the Python call's nan retry."""

    def __init__(self, pull, fields, origin):
        self.pull, self.origin = pull, origin
        super().__init__(fields)
        self.name = f"Pullback({pull.py_func.__name__}, {self._fields})"

    @property
    def key(self):
        return self.pull, self._fields

    @property
    def out(self):
        return self.field_dict["out"]

    @property
    def grads(self):
        return self.pull.overloads[self.pull.signatures[0]].signature.return_type.types[1]


structref.register(PullbackType)


def _pullback_type(pull, origin, out, work, state) -> PullbackType:
    """The pullback type of `pull` for numba types `out`, `work` and `state`."""
    return PullbackType(pull, [("out", out), ("work", work), ("state", state),
                               ("used", types.boolean)], origin)


def _pullback_maker(pull, origin):
    """An intrinsic `make(out, work, state)` returning a new PullbackType value of `pull`
    holding references to them (`pull` is known here, not passed: a dispatcher passed as a
    value is lowered as its address, which keeps numba from caching the caller)."""
    @nb.intrinsic
    def make(typingctx, out, work, state):
        pb_type = _pullback_type(pull, origin, out, work, state)

        def codegen(context, builder, sig, args):
            data_type = pb_type.get_data_type()
            alloc_type = context.data_model_manager[data_type].get_value_type()
            meminfo = context.nrt.meminfo_alloc_dtor(
                builder, context.get_constant(types.uintp, context.get_abi_sizeof(alloc_type)),
                nb.jitclass_dtor(context, builder.module, pb_type))
            pointer = builder.bitcast(context.nrt.meminfo_data(builder, meminfo),
                                      alloc_type.as_pointer())
            builder.store(cgutils.get_null_value(alloc_type), pointer)
            data = cgutils.create_struct_proxy(data_type)(context, builder, ref=pointer)
            for name, typ, value in zip(("out", "work", "state"), sig.args, args):
                context.nrt.incref(builder, typ, value)
                setattr(data, name, value)
            pb = cgutils.create_struct_proxy(pb_type)(context, builder)
            pb.meminfo = meminfo
            return pb._getvalue()
        return pb_type(out, work, state), codegen
    nb.typing_context().refresh()  # typed in a compile already running, which refreshed before
    return make


@nb.infer_getattr
class _PullbackCall(nb.AttributeTemplate):
    key = PullbackType

    @nb.bound_function("__call__")
    def resolve___call__(self, pb, args, kws):
        if kws or len(args) != 1:
            raise nb.numba_errors.TypingError("a vjp pullback takes one cotangent")
        _check_cotangent_type(pb, args[0])
        return pb.grads(*args)


def _check_cotangent_type(pb: PullbackType, dout) -> None:
    wrong = _cotangent_mismatch(pb.out, dout, "")
    if wrong is not None:
        raise nb.numba_errors.TypingError(f"moonlite: the cotangent of a vjp pullback{wrong}")


def _cotangent_mismatch(out, dout, where: str):
    """What is wrong with a cotangent of numba type `dout` for an output of type `out` (a
    tuple output: a tuple of cotangents, entry by entry; an int, bool or string entry's is
    unused: None or a number), or None."""
    dout = types.unliteral(dout)
    if isinstance(out, types.BaseTuple):
        if not isinstance(dout, types.BaseTuple) or len(dout) != len(out):
            return (f"{where} must be a tuple of {len(out)} entries like the output, "
                    f"got {dout}")
        for k, (o, d) in enumerate(zip(out, dout)):
            wrong = _cotangent_mismatch(o, d, f"{where}, entry {k},")
            if wrong is not None:
                return wrong
        return None
    if isinstance(out, types.Array):
        fits = isinstance(dout, types.Array) and dout.dtype == out.dtype \
            and dout.ndim == out.ndim
        like = f"an array of {out.dtype} with {out.ndim} dimensions"
    elif isinstance(out, types.Float):
        fits, like = _is_real_type(dout), "a real number"
    else:  # (the Python pullback passes an int entry's 0, a bool's False, a string's own)
        fits = isinstance(dout, (types.NoneType, types.UnicodeType, types.Boolean)) \
            or _is_real_type(dout)
        like = "None or a number (the output entry is an int, a bool or a string: unused)"
    return None if fits else f"{where} must be {like} like the output, got {dout}"


def _is_real_type(t) -> bool:
    return isinstance(t, (types.Float, types.Integer)) and not isinstance(t, types.Boolean)


def _pullback_call_source(pb: PullbackType, dout) -> str:
    work = "".join(f"work[{i}], " for i in range(len(pb.field_dict["work"])))
    state = "".join(f", state[{i}]" for i in range(len(pb.field_dict["state"])))
    lines = ["def call(pb, dout):"]
    cotangent = _cotangent_source("dout", dout, "pb.out", pb.out, lines)
    lines += ["    if pb.used:",
              "        raise ArgumentError('moonlite: this vjp pullback was already used: "
              "call vjp again')",
              "    pb.used = True",
              "    work, state = pb.work, pb.state",
              f"    return pull({work}{cotangent}{state})[1]"]
    return "\n".join(lines)


def _cotangent_source(d: str, dout, out: str, out_type, checks: list) -> str:
    """The expression of the cotangent the pullback takes, from the one given (`d`, of numba
    type `dout`) for the output `out` (of `out_type`), as the Python pullback converts it
    (`api_reverse._as_cotangent`); the shape checks it needs are appended to `checks`."""
    if isinstance(out_type, types.BaseTuple):
        entries = (_cotangent_source(f"{d}[{k}]", dout[k], f"{out}[{k}]", t, checks)
                   for k, t in enumerate(out_type))
        return f"({''.join(f'{e}, ' for e in entries)})"
    if isinstance(out_type, types.Array):
        checks += [f"    if {d}.shape != {out}.shape:",
                   "        raise ArgumentError('moonlite: the cotangent of a vjp pullback must "
                   "have the shape of the output')"]
        return d if dout == out_type else f"np.ascontiguousarray({d})"
    if isinstance(out_type, types.Float):
        return f"np.{out_type}({d})"
    if isinstance(out_type, types.Boolean):
        return "False"
    if isinstance(out_type, types.Integer):
        return f"np.{out_type}(0)"
    return out  # (a string entry: the output's own)


@nb.lower_builtin(PullbackType, PullbackType, types.Any)
def _lower_pullback_call(context, builder, sig, args):
    pb, dout = sig.args
    scope = {"np": np, "pull": pb.pull, "ArgumentError": ArgumentError}
    exec(compile(_pullback_call_source(pb, dout), "<moonlite vjp pullback>", "exec"), scope)
    return context.compile_internal(builder, scope["call"], sig, args)


# --- the pullback in Python ---------------------------------------------------------------------

class Pullback:
    """What `vjp` called from Python returns as its pullback: `pullback(dout)` (once) gives one
    cotangent per primal. It holds a reference to the compiled struct, which numba frees with
    it; passed to njit code it is that struct again."""

    __slots__ = ("_type", "_meminfo", "_used")

    @property
    def _numba_type_(self):
        return self._type

    def __call__(self, dout):
        if self._used:
            raise ArgumentError(f"vjp({self._name()}): this pullback was already used: call "
                                f"vjp again")
        if type(dout) is not float and not isinstance(dout, np.ndarray) \
                or isinstance(dout, np.ndarray) and dout.ndim == 0:
            dout = self._checked(dout)  # ints, numpy scalars, 0-d arrays: converted
        pb_type = self._type
        # a float cotangent: the compiled call found once, not through numba's typeof
        call = pb_type.__dict__.get("float_entry") if type(dout) is float else None
        if call is None:
            call = _python_call(pb_type)
        try:
            grads, nan = call(self, dout)
        except Exception:
            self._checked(dout)  # raises the precise error for a wrong cotangent
            self._used = True  # the kernel's own error: the pullback ran
            raise
        self._used = True
        if type(dout) is float and "float_entry" not in pb_type.__dict__:
            pb_type.float_entry = call.overloads[(pb_type, types.float64)].entry_point
        if nan:  # again with zero-guarded products (ad/nan_retry.py)
            f, argtypes = pb_type.origin
            grads = _strong_zeros_gradients(f, argtypes, self.arguments, self._checked(dout))
        return tuple(grads)

    def _name(self) -> str:
        return self._type.origin[0].py_func.__qualname__

    def _checked(self, dout):
        """`dout` as the pullback takes it, or ArgumentError saying what is wrong with it."""
        out = _out_of(self)
        _check_cotangent(dout, out, f"vjp({self._name()}) pullback")
        return _as_cotangent(dout, out)

    @property
    def arguments(self) -> tuple:
        """The sweep's arguments, private copies where `f` writes (restored by the pullback):
        `moonlite.testing` checks them."""
        return _work_of(self)


@nb.box(PullbackType)
def _box_pullback(typ, val, c):
    """A `Pullback` holding the struct's reference, made without running Python code: a
    pending Ctrl-C would be raised inside boxing, which numba does not expect (the class and
    the type are constants of the compiled function's environment, not unpickled)."""
    meminfo = cgutils.create_struct_proxy(typ)(c.context, c.builder, value=val).meminfo
    boxed_meminfo = c.box(types.MemInfoPointer(types.voidptr), meminfo)
    cls = c.env_manager.read_const(c.env_manager.add_const(Pullback))
    pb = c.pyapi.call_function_objargs(cls, [])
    not_used = c.pyapi.bool_from_bool(cgutils.false_bit)
    for name, value in (("_type", c.env_manager.read_const(c.env_manager.add_const(typ))),
                        ("_meminfo", boxed_meminfo), ("_used", not_used)):
        c.pyapi.object_setattr_string(pb, name, value)
    c.pyapi.decref(boxed_meminfo)
    c.pyapi.decref(not_used)
    return pb


@nb.unbox(PullbackType)
def _unbox_pullback(typ, obj, c):
    meminfo_obj = c.pyapi.object_getattr_string(obj, "_meminfo")
    meminfo = c.unbox(types.MemInfoPointer(types.voidptr), meminfo_obj).value
    pb = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    pb.meminfo = meminfo
    c.pyapi.decref(meminfo_obj)
    return nb.NativeValue(pb._getvalue())


def _python_call(pb_type: PullbackType):
    """The njit function `call(pb, dout) -> (grads, a nan in them?)` the Python pullback calls
    (one per pullback type, generated: the nan test spelled out for the gradients' types)."""
    call = pb_type.__dict__.get("python_call")
    if call is None:
        tests = _nan_tests("grads", pb_type.grads) or ["False"]
        source = ("def call(pb, dout):\n    grads = pb(dout)\n"
                  f"    return grads, {' or '.join(tests)}")
        scope = {"note_nan_float": note_nan_float, "note_nan_array": note_nan_array}
        exec(compile(source, "<moonlite vjp pullback from Python>", "exec"), scope)
        call = pb_type.python_call = nb.njit(scope["call"])
    return call


def _nan_tests(expr: str, typ) -> list:
    """Source of the tests for a nan in `expr` of numba type `typ` (floats, float arrays and
    tuples of them; the Python retry never covered records)."""
    if isinstance(typ, types.Float):
        return [f"note_nan_float({expr})"]
    if isinstance(typ, types.Array) and isinstance(typ.dtype, types.Float):
        return [f"note_nan_array({expr})"]  # (cached: compiled once per machine)
    if isinstance(typ, types.BaseTuple):
        return [test for i, t in enumerate(typ) for test in _nan_tests(f"{expr}[{i}]", t)]
    return []


@nb.njit
def _work_of(pb):
    return pb.work


@nb.njit
def _out_of(pb):
    return pb.out


# --- the compiled vjp ---------------------------------------------------------------------------

def _vjp_dispatcher(f):
    """The DerivedDispatcher `vjp_f(*primals) -> (out, pullback)`, derived per signature
    (`_vjp_ir`): what the Python `vjp` calls from its second call on, and what `vjp` inside
    njit code calls."""
    return api_cached(f, _VJP_DISPATCHER, lambda: DerivedDispatcher(
        f"vjp_{f.py_func.__name__}", parameter_names(f), lambda argtypes: _vjp_ir(f, argtypes),
        bool(f.targetoptions.get("boundscheck"))))


_VJP_DISPATCHER = ("vjp", "dispatcher")


def _vjp_ir(f, argtypes: tuple):
    """vjp of `f` at numba `argtypes` as one function: grad's guards (aliasing refused, private
    copies of the arrays `f` writes; ad/guards.py), the sweep inlined, what `f` leaves in the
    copies written back into the caller's arrays, the pullback struct made. The sweep is
    inlined, not called: numba leaks the references a caller holds when its callee raises
    (numba issues #1549, #10783), which would be the copies, on every call whose kernel
    raises."""
    if any(is_numba_instance_type(t) and flattenable(t) for t in argtypes):
        raise UnsupportedError("vjp inside njit code with a jitclass or structref instance "
                               "argument",
                               function=f.py_func.__qualname__, argtypes=argtypes,
                               hint="call vjp from Python, or use moonlite.grad(f, argnums=...) "
                                    "inside njit code (it returns an instance of gradients)")
    if returned_instance_type_at(f, argtypes) is not None:
        raise UnsupportedError("vjp inside njit code of a function returning a jitclass or "
                               "structref instance",
                               function=f.py_func.__qualname__, argtypes=argtypes,
                               hint="call vjp from Python (its pullback takes an instance of "
                                    "the class), or jvp inside njit code (it gives instances)")
    if any(map(_holds_record, argtypes)):
        raise UnsupportedError("vjp inside njit code of a record argument: the pullback would "
                               "keep a pointer to the caller's record, and numba cannot store "
                               "a record in the pullback's struct",
                               function=f.py_func.__qualname__, argtypes=argtypes,
                               hint="pass the structured array and the index, or call vjp "
                                    "from Python (which keeps a copy of the record)")
    with compile_lock():
        sweep, pull = derived_reverse_split(f, argtypes)
    refuse_complex(f, argtypes, sweep.ir)
    names = parameter_names(f)
    if len(names) != len(argtypes):  # a kernel taking *args
        names = [f"argument{i}" for i in range(len(argtypes))]
    b = Builder.new_function(f"vjp_{f.py_func.__name__}", [from_numba(t) for t in argtypes],
                             names, none)
    b.position_at_end(b.new_block("entry"))
    params = list(b.function.args)
    work = emit_guards(b, params, sweep.written, f.py_func.__qualname__)
    result = b.call(sweep, work, type=sweep.ir.return_type)
    out = b.tuple_getitem(result, 0)
    for i in sorted(sweep.written):  # (an array, or the arrays a tuple holds)
        for caller, copy in copied_back_arrays(b, params[i], work[i]):
            b.call(copy_into, [caller, copy], type=none)
    fields = [out, b.build_tuple(work), b.tuple_getitem(result, 1)]
    pb_type = _pullback_type(pull, (f, argtypes), *(v.type.to_numba() for v in fields))
    pb = b.call(_pullback_maker(pull, (f, argtypes)), fields, type=OpaqueType(pb_type))
    value = b.build_tuple([_as_returned(b, out, sweep.output_type), pb])
    b.function.return_type = value.type
    b.ret(value)
    return inline_rule(b.function, sweep)


def _as_returned(b: Builder, out, returned):
    """The output as the kernel returns it (numba type `returned`): the rule returns a
    namedtuple, also one inside a tuple, as a plain tuple (the pullback keeps that one)."""
    if not (isinstance(returned, types.BaseTuple) and _holds_namedtuple(returned)):
        return out
    items = [_as_returned(b, b.tuple_getitem(out, k), t) for k, t in enumerate(returned)]
    named = returned if isinstance(returned, types.BaseNamedTuple) else None
    return b.build_tuple(items, named=named)


def _holds_namedtuple(t) -> bool:
    return isinstance(t, types.BaseNamedTuple) or (
        isinstance(t, types.BaseTuple) and any(map(_holds_namedtuple, t)))


def as_returned_value(returned, value):
    """`_as_returned` from Python: the rule's plain tuples made the namedtuples the kernel
    returns, at any depth."""
    if not isinstance(returned, types.BaseTuple):
        return value
    items = tuple(as_returned_value(t, v) for t, v in zip(returned, value))
    if isinstance(returned, types.BaseNamedTuple):
        return returned.instance_class(*items)
    return items
