"""Compile moonlite IR through numba into a dispatcher that keeps its IR.

`MoonliteDispatcher` is a `CPUDispatcher` whose Python function is a stub with the IR's argument
names. Its pipeline is numba's nopython pipeline with the bytecode translation pass replaced by a
pass that emits numba IR from the kept moonlite IR, fresh for every compilation (numba's passes
mutate the IR they are given). Everything after that is numba's: typing, NRT, LLVM codegen, and
the dispatcher machinery that makes the result callable from Python and from other njit code.
"""

from __future__ import annotations

import contextlib
import inspect
import keyword
import warnings
import weakref

from .. import _numba as nb
from ..errors import ArgumentError, LoweringError
from ..ir.core import Function
from ..ir.printer import format_op
from ..ir.types import ArrayType
from ..timing import phase
from .array_access import DerivedLower
from .array_exprs import derived_lowering, install as install_array_exprs
from .emit import NumbaEmitter
from .thread_flag import ThreadFlag
from .typing_cache import derived_typing, install as install_typing_cache

install_array_exprs()
install_typing_cache()


# Every moonlite-compiled function uses numba's default "python" error model, as the user's
# kernels do: numba compiles its numpy implementations once per set of flags, and derived code
# with the primal's flags reuses the primal's. The primal's own scalar divisions (`checked`)
# raise ZeroDivisionError as in the kernel; the emitter makes every other scalar division give
# inf or nan (d sqrt(x) at 0), see lower/helpers.py.
DERIVED_OPTIONS = {"nopython": True, "error_model": "python"}


@nb.register_pass(mutates_CFG=True, analysis_only=False)
class EmitMoonliteIR(nb.FunctionPass):
    """Stands in for numba's TranslateByteCode: the function's IR comes from moonlite."""

    _name = "moonlite_emit_ir"

    def __init__(self):
        nb.FunctionPass.__init__(self)

    def run_pass(self, state):
        stub = state.func_id.func
        derive = getattr(stub, "__moonlite_derive__", None)
        with phase("AD passes"):  # a derived dispatcher's IR is built here (capture included)
            fn = derive(tuple(state.args)) if derive is not None else stub.__moonlite_ir__
        with phase("emit numba IR"):
            emitter = NumbaEmitter(fn, state.func_id)
            state.func_ir = emitter.emit()
        # for the check after typing (`_check_array_types`)
        state.moonlite_arrays = {var.name: value for value, var in emitter.vars.items()
                                 if isinstance(value.type, ArrayType)}
        state.moonlite_arg_types = tuple(a.type for a in fn.args)
        return True


@nb.register_pass(mutates_CFG=True, analysis_only=False)
class DerivedLowering(nb.typed_passes.NativeLowering):
    """numba's lowering, with the array expressions of derived code lowered through kernels
    compiled once (lower/array_exprs.py)."""

    _name = "moonlite_native_lowering"

    @property
    def lowering_class(self):
        return DerivedLower

    def run_pass(self, state):
        with derived_lowering(), derived_typing():  # lowering types operators again
            return super().run_pass(state)


@nb.register_pass(mutates_CFG=True, analysis_only=False)
class DerivedTyping(nb.typed_passes.NopythonTypeInference):
    """numba's type inference, with operators on scalars typed through a cache
    (lower/typing_cache.py)."""

    _name = "moonlite_type_inference"

    def run_pass(self, state):
        with derived_typing():
            changed = super().run_pass(state)
        if getattr(state, "moonlite_arrays", None) is not None:
            _check_array_types(state)
        return changed


def _check_array_types(state) -> None:
    """numba's types of the arrays in emitted code against moonlite's, for every compile. Code
    moonlite built for a C-ordered array (a tape of them, a reshape, a flat loop) reads a
    Fortran-ordered one given that type as the wrong numbers: a.copy() lowered once as numba's
    np.copy, which keeps the order, gave wrong gradients. A mismatch is moonlite's bug: an
    internal error, never a guess."""
    ir_args = state.moonlite_arg_types
    if len(ir_args) != len(state.args) \
            or any(t.to_numba() != nb.types.unliteral(a) for t, a in zip(ir_args, state.args)):
        return  # (IR retyped for other arguments, as any njit function: its values differ too)
    for name, value in state.moonlite_arrays.items():
        expected = value.type
        got = state.typemap.get(name)
        if got is None:
            continue  # (a value numba dropped: never read)
        if not isinstance(got, nb.types.Array) or got.ndim != expected.ndim \
                or got.dtype != expected.dtype.to_numba() \
                or (expected.layout != "A" and got.layout != expected.layout):
            op = getattr(value, "op", None)
            made = f" by `{format_op(op)}`" if op is not None else " (an argument)"
            raise LoweringError(f"moonlite internal error in {state.func_id.func_qualname}: "
                                f"numba types {name} as {got}, moonlite as {expected}{made}")


class LoweringPipeline(nb.CompilerBase):
    def define_pipelines(self):
        full = nb.DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm = nb.PassManager("moonlite_lowering")
        for pass_cls, description in full.passes:
            if pass_cls is nb.untyped_passes.TranslateByteCode:
                pm.add_pass(EmitMoonliteIR, "emit numba IR from moonlite IR")
            elif pass_cls is nb.untyped_passes.ReconstructSSA:
                # moonlite's IR is in SSA form except for its locals (adjoints, kept values)
                # and the copies that feed phis; numba rebuilding SSA for each of those
                # variables in turn took 23% of compiling a Hessian-vector product rule
                # (3.5 of 15 s), and typing and lowering need no SSA form
                continue
            elif pass_cls is nb.untyped_passes.InlineClosureLikes:
                # it inlines closures and rewrites comprehensions, which moonlite's IR never
                # holds (capture ran it on the kernel): 5% of compiling a Hessian
                continue
            elif pass_cls is nb.typed_passes.NativeLowering:
                pm.add_pass(DerivedLowering, description)
            elif pass_cls is nb.typed_passes.NopythonTypeInference:
                pm.add_pass(DerivedTyping, description)
            else:
                pm.add_pass(pass_cls, description)
        pm.finalize()
        return [pm]


@contextlib.contextmanager
def quiet_performance_warnings():
    """numba's performance warnings about derived code (say, '@' on a tangent view that is not
    contiguous) are nothing the user could act on: silenced while moonlite types and compiles."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nb.numba_errors.NumbaPerformanceWarning)
        # an njit function passed to the kernel is passed on as numba's first-class function
        # value inside derived code, which numba calls experimental (the kernel's is not)
        warnings.filterwarnings("ignore", ".*First-class function type feature is experimental")
        yield


class _QuietCompile:
    def compile(self, sig):
        with quiet_performance_warnings():
            return super().compile(sig)

    def typeof_pyval(self, val):
        # (a tuple of arguments holding an njit function: numba warns as it types it)
        with quiet_performance_warnings():
            return super().typeof_pyval(val)


_typed_from_ir = ThreadFlag()


def calls_typed_from_ir():
    """While open (in this thread), numba types a call of a `MoonliteDispatcher` from the
    signature of its IR instead of compiling it first, as it does for any njit callee. For
    capturing code whose calls of derived rules are inlined afterwards (the drivers of hessian,
    jacfwd, ...): compiling the rule there compiled it twice, once for nothing (0.4 s of a
    scalar loop's Hessian, half of an RK4 integrator's)."""
    return _typed_from_ir.raised()


class MoonliteDispatcher(_QuietCompile, nb.CPUDispatcher):
    """A numba dispatcher compiled from moonlite IR; `.ir` is that IR."""

    def get_call_template(self, args, kws):
        if not _typed_from_ir or kws:
            return super().get_call_template(args, kws)
        pysig, args = self._compiler.fold_argument_types(args, kws)
        sig = nb.Signature(self.ir.return_type.to_numba(),
                           tuple(t.to_numba() for t in self.ir.argtypes), None)
        name = self.py_func.__name__
        template = nb.make_concrete_template(f"CallTemplate({name})", key=name,
                                             signatures=[sig])
        return template, pysig, args, {}

    def __init__(self, fn: Function):
        self.ir = fn  # before numba's __init__, which may already print the dispatcher
        options = dict(DERIVED_OPTIONS, boundscheck=fn.boundscheck)
        super().__init__(_make_stub(fn), targetoptions=options, pipeline_class=LoweringPipeline)

    @property
    def moonlite_ir(self) -> Function:
        return self.ir

    def __repr__(self) -> str:
        return f"<moonlite compiled {self.ir.name}({', '.join(map(str, self.ir.argtypes))})>"


_live_derived: "weakref.WeakSet" = weakref.WeakSet()


def live_derived_dispatchers() -> list:
    """Every DerivedDispatcher still referenced (the driver resets them when derivatives go
    stale)."""
    return list(_live_derived)


_dispatcher_call = nb.CPUDispatcher.__call__  # the C dispatcher's call (type dispatch, no Python)


class DerivedDispatcher(_QuietCompile, nb.CPUDispatcher):
    """A numba dispatcher whose IR is derived for each signature it is compiled for: `derive`
    maps numba argument types to a moonlite Function (for example: capture `f` for those types
    and build its gradient). Like any njit function it compiles on the first call with new
    argument types, from Python or while numba types a call inside another njit function."""

    def __init__(self, name: str, argnames: list, derive, boundscheck: bool = False,
                 retry=None, notes=None):
        self.irs: dict = {}
        self._derive = derive
        # `retry()`: the dispatcher to call instead when this call noted a nan in `notes`
        # (a per-thread count, see ad/nan_retry.py); None: results are returned as they are
        self._retry, self._notes = retry, (notes if retry is not None else None)
        stub = _stub(name, argnames)
        # weakly: numba keeps the stub where the garbage collector cannot see it through
        # (compiled code's function identity), so a strong reference back to the dispatcher
        # kept the dispatcher, the function it derives from and their rules alive for good
        stub.__moonlite_derive__ = _weak_call(weakref.WeakMethod(self._derive_and_keep))
        options = dict(DERIVED_OPTIONS, boundscheck=boundscheck)  # the primal's (see lower())
        super().__init__(stub, targetoptions=options, pipeline_class=LoweringPipeline)
        _live_derived.add(self)

    def __call__(self, *args, **kws):
        notes = self._notes  # written out twice: a helper call costs 100 ns of 1 us
        if notes is None:
            try:
                return _dispatcher_call(self, *args, **kws)
            except TypeError:
                filled = self._with_defaults(args, kws)
                if filled is not None:
                    return self(*filled)
                self._check_call(args, kws)
                raise
        before = notes.count
        try:
            out = _dispatcher_call(self, *args, **kws)
        except TypeError:
            filled = self._with_defaults(args, kws)
            if filled is not None:
                return self(*filled)
            self._check_call(args, kws)
            raise
        if notes.count != before:
            return self._retry()(*args, **kws)
        return out

    # How to build this dispatcher again, `(function, args)`: set by the API that made it
    # (`grad(f, argnums)` -> `(_gradient_dispatcher, (f, argnums, ...))`). A dispatcher pickles
    # by that recipe, not by its compiled code or IR: the receiving process derives and
    # compiles again (or finds it in its own cache).
    recipe = None

    def __reduce__(self):
        if self.recipe is None:
            raise TypeError(f"{self!r} cannot be pickled: it was not made by moonlite's API "
                            "(grad, value_and_grad, hessian)")
        return self.recipe

    # `njit_variant()`: the dispatcher numba calls in this one's place inside njit code (set by
    # the API when this one has a retry, which needs a Python caller: api_drivers.py); None:
    # this one. numba types a global or an argument through `_numba_type_`.
    njit_variant = None

    @property
    def _numba_type_(self):
        variant = self.njit_variant
        return nb.types.Dispatcher(self if variant is None else variant())

    def forget_compiled(self) -> None:
        """Drop every compiled signature and derived IR: the next call derives and compiles
        again (what numba's `recompile` does, without compiling now). Code already compiled
        into a caller keeps the old version, as with numba's own functions."""
        self._reset_overloads()
        self.irs.clear()

    def call_without_retry(self, *args, **kws):
        """The compiled call alone (what a call from njit code gets): for tests."""
        return _dispatcher_call(self, *args, **kws)

    # The Python function whose parameters (with their defaults) this one takes, set by the
    # API (`grad(f)` takes f's): a call leaving defaulted ones out is made again with them
    # (the stub numba compiles has no defaults); inside njit code the call passes them as
    # constants (`get_call_template`).
    takes_parameters_of = None

    def get_call_template(self, args, kws):
        """numba's typing of a call inside njit code. One leaving out parameters with defaults
        is typed as a call passing them: numba folds the call's arguments with the signature
        returned, whose defaults it then passes as constants of their types. (numba's own
        folding would type them `Omitted`, for which the derivative is not derived.)"""
        filled = self._filled_types(args, kws)
        if filled is None:
            return super().get_call_template(args, kws)
        pysig, argtypes = filled
        self.compile(argtypes)
        name = self.py_func.__name__
        template = nb.make_concrete_template(f"CallTemplate({name})", key=name,
                                             signatures=self.nopython_signatures)
        return template, pysig, argtypes, {}

    def _filled_types(self, args: tuple, kws: dict):
        """(the signature with defaults, every argument's type) of a call from njit code
        leaving defaulted parameters out; None for any other call."""
        if self.takes_parameters_of is None:
            return None
        pysig = inspect.signature(self.takes_parameters_of)
        try:
            bound = pysig.bind(*args, **kws)
        except TypeError:
            return None
        given = dict(bound.arguments)
        if len(given) == len(pysig.parameters) \
                or any(p.kind != p.POSITIONAL_OR_KEYWORD for p in pysig.parameters.values()):
            return None
        try:
            return pysig, tuple(given[name] if name in given else nb.typeof(p.default)
                                for name, p in pysig.parameters.items())
        except ValueError:  # a default numba has no type for: numba's own error follows
            return None

    def _with_defaults(self, args: tuple, kws: dict):
        """`args` and `kws` as one positional tuple with the omitted defaults filled in, or
        None when nothing was omitted or they do not bind."""
        if self.takes_parameters_of is None:
            return None
        try:
            bound = inspect.signature(self.takes_parameters_of).bind(*args, **kws)
        except TypeError:
            return None
        bound.apply_defaults()
        return bound.args if len(bound.args) > len(args) + len(kws) else None

    def _check_call(self, args: tuple, kws: dict) -> None:
        """numba's dispatcher says 'not enough arguments: expected 2, got 1' without naming the
        function: raise an ArgumentError that does."""
        try:
            inspect.signature(self.py_func).bind(*args, **kws)
        except TypeError as exc:
            params = ", ".join(inspect.signature(self.py_func).parameters)
            raise ArgumentError(f"{self.py_func.__name__}: {exc} (it takes ({params}), got "
                                f"{len(args) + len(kws)} argument(s))") from None

    def _derive_and_keep(self, argtypes: tuple) -> Function:
        fn = self._derive(argtypes)
        self.irs[argtypes] = fn
        return fn

    def ir_for(self, argtypes: tuple) -> Function:
        """The IR for numba `argtypes` (derived now if never compiled for them): what AD
        passes differentiate when they meet a call of this function."""
        argtypes = tuple(argtypes)
        if argtypes not in self.irs:
            self._derive_and_keep(argtypes)
        return self.irs[argtypes]

    @property
    def ir(self) -> Function:
        """The IR of the most recently compiled signature."""
        if not self.irs:
            raise AttributeError("nothing compiled yet: call the function first")
        return list(self.irs.values())[-1]

    def __repr__(self) -> str:
        return f"<moonlite derived {self.py_func.__name__}>"


def _weak_call(method: "weakref.WeakMethod"):
    def call(*args):
        return method()(*args)
    return call


def _make_stub(fn: Function):
    """A Python function with the IR's name and argument names, for numba's bookkeeping."""
    names = _identifiers([a.name for a in fn.args])
    for arg, name in zip(fn.args, names):
        arg.hint = name
    stub = _stub(fn.name, names)
    stub.__moonlite_ir__ = fn
    return stub


def _identifiers(names: list) -> list:
    """Distinct Python identifiers for argument names: a vjp pullback's state arguments are
    named after values (`state0` for the first kept `state`), which may repeat an argument's
    name, and a repeated name made the stub a SyntaxError."""
    out, seen = [], set()
    for i, n in enumerate(names):
        n = n if n.isidentifier() and not keyword.iskeyword(n) else f"arg{i}"
        while n in seen:
            n = f"{n}_{i}"
        seen.add(n)
        out.append(n)
    return out


def _stub(name: str, argnames: list):
    fname = name if name.isidentifier() else "moonlite_function"
    source = (f"def {fname}({', '.join(_identifiers(argnames))}):\n"
              f"    raise RuntimeError('moonlite stub: only the compiled version runs')\n")
    # a module name: numba's cached code rebuilds its environment from the module's globals
    namespace: dict = {"__name__": __name__}
    exec(compile(source, f"<moonlite {fname}>", "exec"), namespace)
    # out of its own globals: numba keeps a compiled function's globals for good (its
    # Environment), and through the stub they would keep the dispatcher, the function it
    # derives from and every rule built for it alive after the user dropped them
    stub = namespace.pop(fname)
    stub.__qualname__ = f"moonlite.{fname}"
    return stub


def lower(fn: Function, *, argtypes=None, eager: bool = True) -> MoonliteDispatcher:
    """Compile moonlite IR into a numba dispatcher (callable from Python and from njit code).

    Compilation for the IR's own argument types happens now, so errors surface here rather than
    at the first call; other argument types compile on demand, like any njit function. With
    `eager=False` nothing compiles until the first call: for a rule that is usually inlined
    into its caller's IR (a gradient's wrapper), which then costs no compilation of its own.
    """
    disp = MoonliteDispatcher(fn)
    if eager:
        compile_now(disp, argtypes)
    return disp


def compile_now(disp: MoonliteDispatcher, argtypes=None) -> None:
    """Compile `disp` for `argtypes` (default: its IR's own), as `lower(eager=True)` does (after
    the driver gave it a disk cache, say)."""
    fn = disp.ir
    sig = tuple(argtypes or (t.to_numba() for t in fn.argtypes))
    try:
        disp.compile(sig)
    except nb.numba_errors.NumbaError as exc:
        raise LoweringError(f"numba could not compile the moonlite IR of {fn.name}:\n{exc}\n"
                            f"IR:\n{fn}") from None
