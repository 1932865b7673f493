"""`jvp`, `hvp` and `vjp` called inside njit code.

`grad`, `hessian`, `jacfwd` and `jacrev` return dispatchers, which numba calls like any njit
function. `jvp(f, primals, tangents)`, `hvp(...)` and `vjp(f, *primals)` are Python functions
taking `f`; inside njit code numba types a call of them through the overloads below, where `f`
is an njit function known at compile time (`types.Dispatcher`):

- `jvp` and `hvp` call the same compiled `jvp_f(primals, tangents)` / `hvp_f` the Python
  functions call (`api_calls.py`, `api_higher.py`): their argument checks are compiled in.
- `vjp` runs the sweep of `f`'s split reverse rule (`driver.derived_reverse_split`) on private
  copies of the arrays `f` writes, copies what `f` leaves in them back into the caller's arrays,
  and returns `(out, pullback)`. The pullback is a value of `PullbackType`: a struct holding the
  output, the sweep's arguments and its state (tapes), and a used flag. Calling it
  (`pullback(dout)`) runs the compiled pullback once; a second call raises.

A nan in a derivative computed inside njit code is returned as it is: the retry with
zero-guarded products (`ad/nan_retry.py`) needs the Python call (docs/limitations.md).
"""

from __future__ import annotations

import numpy as np

from . import _numba as nb
from .api_calls import _jvp_dispatcher, jvp
from .api_higher import _plain_hvp_dispatcher, hvp
from .api_reverse import parameter_names, refuse_complex, vjp
from .ad.guards import aliasing_message
from .rules.overlap import may_share_memory
from .api import compile_lock
from .driver import derived_reverse_split
from .errors import ArgumentError

types, cgutils = nb.types, nb.cgutils


def _njit_function(f, api: str):
    """The Python dispatcher of `f` when numba types it as an njit function, else a clear
    typing error (numba reports it with the call's source line)."""
    if isinstance(f, types.Dispatcher):
        return f.dispatcher
    raise nb.numba_errors.TypingError(
        f"moonlite.{api} inside njit code takes an @njit function as its first argument, "
        f"got {f}")


def _overload_calling(api, dispatcher_of) -> None:
    """`api(f, primals, tangents)` inside njit code: a call of `dispatcher_of(f)`."""
    @nb.overload(api)
    def in_njit(f, primals, tangents):
        disp = dispatcher_of(_njit_function(f, api.__name__))

        def impl(f, primals, tangents):
            return disp(primals, tangents)
        return impl


_overload_calling(jvp, _jvp_dispatcher)
_overload_calling(hvp, _plain_hvp_dispatcher)


# --- vjp ---------------------------------------------------------------------------------------

class PullbackType(types.Type):
    """The pullback `vjp` returns inside njit code: it calls `pull` with the sweep's arguments,
    the cotangent and the sweep's state."""

    def __init__(self, pull, out, work: types.BaseTuple, state: types.BaseTuple):
        self.pull, self.out, self.work, self.state = pull, out, work, state
        self.grads = pull.overloads[pull.signatures[0]].signature.return_type.types[1]
        super().__init__(name=f"Pullback({pull.py_func.__name__}, {out}, {work}, {state})")

    @property
    def key(self):
        return self.pull, self.out, self.work, self.state


class _PullbackModel(nb.models.StructModel):
    def __init__(self, dmm, fe_type):
        members = [("out", fe_type.out), ("work", fe_type.work), ("state", fe_type.state),
                   ("used", types.Array(types.bool_, 1, "C"))]
        super().__init__(dmm, fe_type, members)


nb.register_model(PullbackType)(_PullbackModel)
for _field in ("out", "work", "state", "used"):
    nb.make_attribute_wrapper(PullbackType, _field, _field)


def _pullback_maker(pull):
    """An intrinsic `make(out, work, state, used)` returning a PullbackType value of `pull`
    holding new references to them (`pull` is known here, not passed: a dispatcher passed as a
    value is lowered as its address, which keeps numba from caching the caller)."""
    @nb.intrinsic
    def make(typingctx, out, work, state, used):
        pb_type = PullbackType(pull, out, work, state)

        def codegen(context, builder, sig, args):
            pb = cgutils.create_struct_proxy(pb_type)(context, builder)
            for name, typ, value in zip(("out", "work", "state", "used"), sig.args, args):
                context.nrt.incref(builder, typ, value)
                setattr(pb, name, value)
            return pb._getvalue()
        return pb_type(out, work, state, used), codegen
    return make


@nb.overload(vjp, jit_options={"forceinline": True})  # see _vjp_impl
def _vjp_in_njit(f, *primals):
    fn = _njit_function(f, "vjp")
    argtypes = tuple(primals)
    with compile_lock():
        sweep, pull = derived_reverse_split(fn, argtypes)
    refuse_complex(fn, argtypes, sweep.ir)
    names = parameter_names(fn)
    if len(names) != len(argtypes):  # a kernel taking *args
        names = [f"argument {i}" for i in range(len(argtypes))]
    return _vjp_impl(fn.py_func.__qualname__, names, sweep, pull,
                     sorted(sweep.written),
                     [j for j, t in enumerate(argtypes) if isinstance(t, types.Array)])


def _vjp_impl(name: str, names: list, sweep, pull, written: list, arrays: list):
    """The generated `impl(f, *primals)` of vjp for primals called `names`: a call of an njit function of
    the primals alone. (`f` is a dispatcher passed as a value: numba lowers it as its address,
    which would keep numba from caching the caller unless LLVM drops it, as it does once this
    small impl is inlined.)"""
    n = len(names)
    params = [f"p{i}" for i in range(n)]
    lines = [f"def vjp_of_primals({', '.join(params)}):"]
    for i in written:  # the Python vjp's aliasing check, compiled
        for j in arrays:
            if j != i:
                message = aliasing_message(name, names[i], names[j])
                lines.append(f"    if may_share_memory(p{i}, p{j}):")
                lines.append(f"        raise ArgumentError({message!r})")
    work = [f"w{i}" if i in written else f"p{i}" for i in range(n)]
    lines += [f"    w{i} = p{i}.copy()" for i in written]
    lines.append(f"    out, state = sweep({', '.join(work)})")
    lines += [f"    p{i}[...] = w{i}" for i in written]  # what f leaves in them
    lines.append(f"    work = ({''.join(w + ', ' for w in work)})")
    lines.append("    return out, make_pullback(out, work, state, np.zeros(1, np.bool_))")
    scope = {"np": np, "sweep": sweep, "make_pullback": _pullback_maker(pull),
             "may_share_memory": may_share_memory, "ArgumentError": ArgumentError}
    exec(compile("\n".join(lines), f"<moonlite vjp of {name}>", "exec"), scope)
    inner = nb.njit(scope["vjp_of_primals"])
    unpacked = ", ".join(f"primals[{i}]" for i in range(n))
    scope = {"inner": inner}
    exec(f"def impl(f, *primals):\n    return inner({unpacked})", scope)
    return scope["impl"]


@nb.infer_getattr
class _PullbackAttributes(nb.AttributeTemplate):
    key = PullbackType

    @nb.bound_function("__call__")
    def resolve___call__(self, pb, args, kws):
        if kws or len(args) != 1:
            raise nb.numba_errors.TypingError("a vjp pullback takes one cotangent")
        _check_cotangent_type(pb, args[0])
        return pb.grads(*args)


def _check_cotangent_type(pb: PullbackType, dout) -> None:
    out = pb.out
    if isinstance(out, types.Array):
        fits = isinstance(dout, types.Array) and dout.dtype == out.dtype \
            and dout.ndim == out.ndim
        like = f"an array of {out.dtype} with {out.ndim} dimensions"
    else:
        fits = isinstance(dout, (types.Float, types.Integer)) and not isinstance(
            dout, types.Boolean)
        like = "a real number"
    if not fits:
        raise nb.numba_errors.TypingError(
            f"moonlite: the cotangent of a vjp pullback must be {like} like the output, "
            f"got {dout}")


def _pullback_call_source(pb: PullbackType, dout) -> str:
    work = "".join(f"pb.work[{i}], " for i in range(len(pb.work)))
    state = "".join(f", pb.state[{i}]" for i in range(len(pb.state)))
    lines = ["def call(pb, dout):",
             "    if pb.used[0]:",
             "        raise ArgumentError('moonlite: this vjp pullback was already used: "
             "call vjp again')",
             "    pb.used[0] = True"]
    if isinstance(pb.out, types.Array):
        lines += ["    if dout.shape != pb.out.shape:",
                  "        raise ArgumentError('moonlite: the cotangent of a vjp pullback must "
                  "have the shape of the output')"]
        cotangent = "dout" if dout == pb.out else "np.ascontiguousarray(dout)"
    else:
        cotangent = f"np.{pb.out}(dout)"
    lines.append(f"    return pull({work}{cotangent}{state})[1]")
    return "\n".join(lines)


@nb.lower_builtin(PullbackType, PullbackType, types.Any)
def _lower_pullback_call(context, builder, sig, args):
    pb, dout = sig.args
    scope = {"np": np, "pull": pb.pull, "ArgumentError": ArgumentError}
    exec(compile(_pullback_call_source(pb, dout), "<moonlite vjp pullback>", "exec"), scope)
    return context.compile_internal(builder, scope["call"], sig, args)
