"""Every numba-internal import moonlite uses, in one place.

numba's public API does not cover typed IR capture or IR injection, so moonlite leans on
`numba.core` internals. Keeping them here means a numba upgrade breaks one file, at import time,
with a message that says which version moonlite was built for.
"""

from __future__ import annotations

import contextlib

import numba

SUPPORTED_NUMBA = "0.68"

if not numba.__version__.startswith(SUPPORTED_NUMBA + "."):
    raise ImportError(
        f"moonlite needs numba {SUPPORTED_NUMBA}.* (found {numba.__version__}): "
        f"it uses numba's internal IR, which changes between minor versions. "
        f"Install it with: pip install 'numba=={SUPPORTED_NUMBA}.*'")

try:
    from numba.core import ir, types, errors as numba_errors  # noqa: F401
    from numba.core import caching, compiler, event, typed_passes, untyped_passes  # noqa: F401
    from numba.core import lowering  # noqa: F401  (lower/array_access.py lowers through it)
    from numba.core.analysis import compute_cfg_from_blocks  # noqa: F401
    from numba.core.bytecode import FunctionIdentity  # noqa: F401
    from numba.core.compiler import CompilerBase, DefaultPassBuilder, Flags  # noqa: F401
    from numba.core.compiler_machinery import FunctionPass, PassManager, register_pass  # noqa: F401
    from numba.core.ir_utils import build_definitions  # noqa: F401
    from numba.core.registry import cpu_target  # noqa: F401
    # what numba's rewrite of `np.array([... for v in it])` calls (a preallocated array)
    from numba.core.inline_closurecall import length_of_iterator  # noqa: F401
    from numba.np.unsafe.ndarray import empty_inferred  # noqa: F401
    from numba.np.numpy_support import as_dtype  # noqa: F401  (a record type's NumPy dtype)
    from numba.core.dispatcher import Dispatcher  # noqa: F401
    from numba.core.registry import CPUDispatcher  # noqa: F401
    from numba.core.typing.templates import Signature  # noqa: F401
    from numba.core.typing.typeof import Purpose  # noqa: F401
    from numba.core.typing.templates import make_concrete_template  # noqa: F401
    from numba.core.unsafe import eh as _eh
    from numba.core import cgutils  # noqa: F401
    from numba.core.imputils import impl_ret_borrowed, lower_builtin  # noqa: F401
    from numba.core.typing.templates import AttributeTemplate, bound_function  # noqa: F401
    from numba.cpython import listobj  # noqa: F401
    # the quicksort numba sorts lists with (its argsort form: capture/list_orders.py)
    from numba.misc import quicksort  # noqa: F401
    from llvmlite import ir as llvm_ir  # noqa: F401  (the intrinsics of lower/tapes.py)
    from llvmlite import binding as llvm_binding  # noqa: F401  (symbols compiled code calls)
    from numba.core.compiler_lock import global_compiler_lock  # noqa: F401
    # a jitclass instance allocated without running __init__ (capture/jitclasses.py)
    from numba.experimental.jitclass.base import imp_dtor as jitclass_dtor  # noqa: F401
    from numba.experimental.jitclass.base import JitClassType  # noqa: F401
    # the pullback `vjp` returns: a reference-counted struct, boxed for Python (api_vjp.py)
    from numba.experimental import structref  # noqa: F401
    from numba.core.targetconfig import ConfigStack as _ConfigStack
    from numba.misc.special import prange  # noqa: F401
    from numba.np.ufunc.dufunc import DUFunc  # noqa: F401
    # numba's lowering of array expressions, which lower/array_exprs.py wraps with a cache
    from numba.np.ufunc import array_exprs  # noqa: F401
    from numba.np import npyimpl  # noqa: F401
    from numba.np.arrayobj import populate_array  # noqa: F401  (rules/records.py: record_view)
    import llvmlite as _llvmlite
except ImportError as exc:  # pragma: no cover - only on an unsupported numba
    raise ImportError(f"moonlite could not import a numba internal it relies on: {exc}") from exc

typeof = numba.typeof
# numba's public API moonlite uses, here too: no other module of moonlite imports numba
njit = numba.njit
intrinsic = numba.extending.intrinsic
overload = numba.extending.overload
box, unbox, NativeValue = numba.extending.box, numba.extending.unbox, numba.extending.NativeValue
infer_getattr = numba.extending.infer_getattr
vectorize = numba.vectorize
literal_unroll = numba.literal_unroll
typed = numba.typed  # typed.List: tapes of the vjp cut
# what compiles derived code: part of the disk cache's key (fingerprint.versions_key)
COMPILER_VERSIONS = (numba.__version__, _llvmlite.__version__)

# Calls numba's front end inserts for try/except; moonlite refuses them by identity.
EXCEPTION_INTRINSICS = (_eh.mark_try_block, _eh.exception_check, _eh.end_try_block)


@contextlib.contextmanager
def outside_enclosing_compile():
    """While open, numba's flag stack in this thread is empty, as at top level.

    numba's flags for a compile inherit `error_model`, `fastmath`, `nrt` and `forceinline` from
    the compile that encloses it (`inherit_if_not_set`). moonlite captures a kernel while
    compiling the derived function (numpy error model): the kernel's flags inherited that, and
    numba keys its compiled `@overload` implementations by those flags, so capture compiled
    `np.max`, `np.sum`, ... again, which the user's primal had already compiled (0.35 s of
    logsumexp's 0.9 s first `grad`)."""
    stack = _ConfigStack()._stk  # thread-local (numba's Borg pattern)
    saved = [stack.pop() for _ in range(len(stack))]
    try:
        yield
    finally:
        for flags in reversed(saved):
            stack.push(flags)


def optimisation_level() -> int:
    """LLVM's optimisation level for the next compile (`NUMBA_OPT`, which numba reads again
    before every compile): part of the disk cache's key, so that code compiled at -O0 (the test
    suite's setting) is never loaded where -O3 is asked for."""
    return int(numba.core.config.OPT)


def typing_context():
    return cpu_target.typing_context


def target_context():
    return cpu_target.target_context


def is_njit_dispatcher(obj) -> bool:
    """True for functions decorated with `numba.njit` (and moonlite's own compiled callables)."""
    return isinstance(obj, Dispatcher) and getattr(obj, "targetoptions", {}).get("nopython", True)


def overload_method_impl(bound_type, argtypes: tuple, kwtypes: dict):
    """The njit dispatcher numba compiles for a method given by `@overload_method` (a structref's
    methods are written so), for the receiver and argument types `argtypes` (receiver first),
    or None when the method is no such overload. numba wraps the function the overload returns
    in a dispatcher and calls that; moonlite calls the same, so the AD passes see an njit
    callee whose body they read (field writes included)."""
    template = getattr(bound_type, "template", None)
    overload_func = getattr(template, "_overload_func", None)
    if overload_func is None:
        return None
    context = typing_context()
    try:
        function_type = context.resolve_value_type(overload_func)
    except ValueError:
        return None
    for template_class in getattr(function_type, "templates", ()):
        get_impl = getattr(template_class(context), "_get_impl", None)
        impl = get_impl(tuple(argtypes), dict(kwtypes))[0] if get_impl is not None else None
        if is_njit_dispatcher(impl):
            return impl
    return None
