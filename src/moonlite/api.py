"""Argument checking shared by the public API, and `build_frule` (`jvp`: `api_calls.py`;
`jacfwd`: `api_jacobians.py`).

Each function checks its arguments in Python before anything runs (a wrong tangent raises a
clear error, never a wrong number or a crash), finds the derived rule for the argument types in
the cache (so a second call with the same types does not recompile), and calls it.
"""

from __future__ import annotations

import contextlib
import inspect
import numbers

import numpy as np

from . import _numba as nb
from .driver import api_cached, derived_forward_rule
from .errors import ArgumentError, SourceLoc, UnsupportedError
from .rules.jitclasses import copier_for, maker_for

# --- argument kinds ----------------------------------------------------------------------------

def _kind(value) -> str:
    """'float', 'array' (float array), 'tuple', 'record' (a NumPy record with float fields),
    'records' (a structured array of those), or 'none' (carries no tangent)."""
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (int, np.integer)):
        return "none"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, np.ndarray):
        if has_float_fields(value.dtype):
            return "records"
        return "array" if np.issubdtype(value.dtype, np.floating) else "none"
    if isinstance(value, np.void):
        return "record" if has_float_fields(value.dtype) else "none"
    if isinstance(value, tuple):  # namedtuples too: their tangents are plain tuples
        return "tuple" if any(_kind(v) not in ("none", "instance") for v in value) else "none"
    if instance_type_of(value) is not None:  # (as an argument itself: api_instances.py)
        return "instance"
    if isinstance(value, complex) or (isinstance(value, np.ndarray)
                                      and np.issubdtype(value.dtype, np.complexfloating)):
        return "complex"
    return "none"


def is_jitclass_instance(value) -> bool:
    """A boxed `@jitclass` instance (its class carries its numba type)."""
    return isinstance(getattr(type(value), "_numba_type_", None), nb.types.ClassInstanceType)


def instance_type_of(value):
    """The numba type of a boxed `@jitclass` instance or structref proxy, else None."""
    if is_jitclass_instance(value):
        return type(value)._numba_type_
    return value._type if isinstance(value, nb.structref.StructRefProxy) else None


def has_float_fields(dtype) -> bool:
    """A structured dtype of fields holding scalars, arrays of scalars or such records, real
    floats in one of them at least (what moonlite differentiates: `ir.types.is_float_record`)."""
    if dtype.names is None:
        return False
    fields = [dtype.fields[name][0].base for name in dtype.names]
    # a field holding a record (a nested dtype) counts as its own fields do
    return all(has_float_fields(f) if f.names is not None else f.kind in "fiub"
               for f in fields) and any(f.kind == "f" or f.names is not None for f in fields)


def value_key(f, value):
    """A cheap key determining the numba type of argument `value` of `f` (numba's own `typeof`
    costs microseconds per array in Python): dtype, rank and flags for arrays."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        return (value.dtype, value.ndim, flags.c_contiguous, flags.f_contiguous,
                flags.writeable, flags.aligned)
    if isinstance(value, (float, np.floating, np.integer, np.bool_, bool)) or value is None:
        return type(value)
    if isinstance(value, tuple):  # (a namedtuple's class is part of its numba type)
        return (type(value), tuple(value_key(f, v) for v in value))
    return f.typeof_pyval(value)  # e.g. a Python int: int64 or uint64 by its size


def _check_njit(f, api: str) -> None:
    if isinstance(f, nb.Dispatcher):
        return
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    hint = f"decorate the function with @numba.njit before moonlite.{api}"
    if isinstance(f, np.ufunc) or type(f).__name__ in ("DUFunc", "GUFunc"):
        numpy = isinstance(f, np.ufunc)
        what = "a numpy ufunc" if numpy else "a @numba.vectorize ufunc"
        call = f"np.{name}(x)" if numpy else f"{name}(x)"
        hint = (f"{name} is {what}: call it inside an @numba.njit function and differentiate "
                f"that (@njit def f(x): return {call})")
    elif name == "<lambda>":
        hint = f"write the lambda as a function decorated with @numba.njit before moonlite.{api}"
    raise UnsupportedError("a function that is not compiled with @numba.njit", function=name,
                           loc=_def_loc(f), hint=hint)


def _def_loc(fn) -> SourceLoc:
    code = getattr(getattr(fn, "py_func", fn), "__code__", None)
    return SourceLoc(code.co_filename, code.co_firstlineno) if code is not None else SourceLoc()


def _check_arguments(f, args: tuple, api: str) -> None:
    """Raise ArgumentError unless `args` fit the parameters of njit function `f` (numba's own
    message for a wrong count is a typing traceback)."""
    py = f.py_func
    code = py.__code__
    if code.co_flags & inspect.CO_VARARGS or \
            code.co_argcount - len(py.__defaults__ or ()) <= len(args) <= code.co_argcount:
        return
    try:
        inspect.signature(py).bind(*args)
    except TypeError as exc:
        params = ", ".join(inspect.signature(f.py_func).parameters)
        raise ArgumentError(f"{api}({f.py_func.__qualname__}): {exc} (the function takes "
                            f"({params}), got {len(args)} argument(s))") from None


def _refuse_complex_arguments(f, primals: tuple, api: str) -> None:
    for i, p in enumerate(primals):
        if _kind(p) == "complex" or (isinstance(p, np.ndarray)
                                     and np.issubdtype(p.dtype, np.complexfloating)):
            raise UnsupportedError(
                f"complex arguments (argument {i})",
                function=f.py_func.__qualname__, loc=_def_loc(f),
                hint=f"split it into real and imaginary parts (two float arguments or a float "
                     f"array) before moonlite.{api}")


def _as_tuple(values, what: str, api: str) -> tuple:
    if not isinstance(values, (tuple, list)):
        raise ArgumentError(f"{api}: {what} must be a tuple (or list) with one entry per "
                            f"argument, got {type(values).__name__}")
    return tuple(values)


@contextlib.contextmanager
def compile_lock():
    """numba's compiler lock, taken before moonlite's rule cache lock: a grad dispatcher compiling
    in one thread holds numba's lock and then needs moonlite's; taking them in the same order
    here keeps a jvp in another thread from deadlocking with it."""
    with nb.global_compiler_lock:
        yield


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _check_tangent(primal, tangent, where: str, top: bool = True):
    """Return the tangent converted to what the rule expects, or raise ArgumentError. `top`: the
    argument itself, not an entry of a tuple argument (only arguments may be instances with
    tangents)."""
    kind = _kind(primal)
    if kind == "instance":
        if top and (tangent is None or type(tangent) is type(primal)):
            return tangent
        if top:
            raise ArgumentError(f"{where}: the tangent of {_a(type(primal).__name__)} instance "
                                f"must be an instance of the same class (its float fields hold "
                                f"the tangent), or None to hold it fixed; got "
                                f"{type(tangent).__name__}")
        kind = "none"
    if kind == "complex":
        raise UnsupportedError("complex arguments", hint="split them into real and imaginary "
                               "parts (two float arguments or a float array)")
    if kind == "none":
        if tangent is not None:
            raise ArgumentError(f"{where}: {_a(type(primal).__name__)} argument carries no "
                                f"tangent; pass None for it")
        return None
    if tangent is None:
        raise ArgumentError(f"{where}: the tangent is missing (pass zeros for a direction you "
                            f"do not need)")
    if kind == "float":
        if np.ndim(tangent) != 0:
            raise ArgumentError(f"{where}: the tangent of a scalar must be a scalar, got an "
                                f"array of shape {np.shape(tangent)}")
        if not (isinstance(tangent, numbers.Real) or (
                isinstance(tangent, np.ndarray) and tangent.dtype.kind in "fiu")):
            raise ArgumentError(f"{where}: the tangent of a float must be a real number, got "
                                f"{type(tangent).__name__}")
        return type(primal)(tangent) if isinstance(primal, np.floating) else float(tangent)
    if kind == "array":
        if not isinstance(tangent, np.ndarray):
            raise ArgumentError(f"{where}: the tangent of an array must be an array of shape "
                                f"{primal.shape} and dtype {primal.dtype}, got "
                                f"{type(tangent).__name__}")
        if tangent.shape != primal.shape or tangent.dtype != primal.dtype:
            raise ArgumentError(f"{where}: tangent has shape {tangent.shape} and dtype "
                                f"{tangent.dtype}; the argument has shape {primal.shape} and "
                                f"dtype {primal.dtype}")
        return tangent
    if kind in ("records", "record"):
        want = type(primal).__name__
        if type(tangent) is not type(primal) or tangent.dtype != primal.dtype \
                or np.shape(tangent) != np.shape(primal):
            raise ArgumentError(f"{where}: the tangent of {_a(want)} of dtype {primal.dtype} "
                                f"must be {_a(want)} of the same dtype and shape (float fields "
                                f"hold the tangent, others are unused), got "
                                f"{type(tangent).__name__} of dtype "
                                f"{getattr(tangent, 'dtype', None)}")
        return tangent
    if kind == "tuple":
        if not isinstance(tangent, tuple) or len(tangent) != len(primal):
            raise ArgumentError(f"{where}: the tangent of a tuple must be a tuple of "
                                f"{len(primal)} entries (None for entries without tangents)")
        return tuple(_check_tangent(p, t, f"{where}[{k}]", top=False)
                     for k, (p, t) in enumerate(zip(primal, tangent)))
    raise UnsupportedError("complex arguments", hint="split them into real and imaginary parts")


def checked_primals_and_tangents(f, primals, tangents, api: str) -> tuple:
    """(primals, tangents) as tuples, after checking `f`, the primals, and one tangent of the
    right shape and dtype per primal (`api` names the caller in errors)."""
    _check_njit(f, api)
    name = f"{api}({f.py_func.__qualname__})"
    primals = _as_tuple(primals, "primals", name)
    tangents = _as_tuple(tangents, "tangents", name)
    _check_arguments(f, primals, api)
    _refuse_complex_arguments(f, primals, api)
    if len(primals) != len(tangents):
        raise ArgumentError(f"{name} needs one tangent per primal: got {len(primals)} primals "
                            f"and {len(tangents)} tangents")
    return primals, [_check_tangent(p, t, f"{name}: tangent {i}")
                     for i, (p, t) in enumerate(zip(primals, tangents))]


def build_frule(f, *args):
    """The derived forward rule of `f` for the types of `args`: a compiled callable whose `.ir`
    is its moonlite IR. Call it as `rule(*primals, *tangents_of_differentiable_args)`; it
    returns `(out, dout)`."""
    _check_njit(f, "build_frule")
    _check_arguments(f, args, "build_frule")

    def build():
        argtypes = tuple(f.typeof_pyval(a) for a in args)
        with compile_lock():
            return derived_forward_rule(f, argtypes)

    rule = api_cached(f, ("forward", tuple(value_key(f, a) for a in args)), build)
    if not rule.signatures:  # jvp derived it to inline it, uncompiled: compile it now
        with compile_lock():
            rule.compile(tuple(t.to_numba() for t in rule.ir.argtypes))
    return rule


def _is_none_tangent(t) -> bool:
    return t is None or (isinstance(t, tuple) and all(_is_none_tangent(e) for e in t))


def zero_tangent_like(x):
    """A zero tangent for the argument `x` (a float, a float array, a record, a structured
    array, or a tuple of them: a plain tuple); None for arguments that carry no tangent."""
    kind = _kind(x)
    if kind == "tuple":
        return tuple(zero_tangent_like(v) for v in x)
    if kind == "float":
        return type(x)(0.0) if isinstance(x, np.floating) else 0.0
    if kind in ("array", "records"):
        return np.zeros_like(x)
    if kind == "record":
        return np.zeros(1, x.dtype)[0]  # a view of its array, which it keeps alive
    return None


def copy_arguments(values: tuple) -> tuple:
    """The arguments with every array and record copied (inside tuples and jitclass
    instances too): kernels may write into them."""
    return tuple(rebuild_tuple(v, copy_arguments(v)) if isinstance(v, tuple) else
                 _copy_one(v) for v in values)


def _copy_one(v):
    if is_jitclass_instance(v):  # a new instance holding copies of its arrays
        t = type(v)._numba_type_
        return maker_for(t).make(tuple(_copy_one(getattr(v, n)) for n in t.struct))
    if isinstance(v, nb.structref.StructRefProxy):  # the same, read in compiled code
        return copier_for(v._type)(v)
    return v.copy() if isinstance(v, (np.ndarray, np.void)) else v  # np.void: a record


def rebuild_tuple(like: tuple, entries) -> tuple:
    """A tuple of `entries` of the kind `like` is: a namedtuple of its class, or a tuple."""
    entries = tuple(entries)
    return type(like)(*entries) if hasattr(type(like), "_fields") else entries

