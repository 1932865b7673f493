"""The public differentiation API (forward mode so far): `jvp`, `jacfwd`, `build_frule`.

Each function checks its arguments in Python before anything runs (a wrong tangent raises a
clear error, never a wrong number or a crash), finds the derived rule for the argument types in
the cache (so a second call with the same types does not recompile), and calls it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from . import _numba as nb
from .ad.derived import derived_forward_rule
from .errors import MoonliteError, UnsupportedError

# jacfwd pushes this many tangent directions through one evaluation of the kernel.
JACFWD_WIDTH = 8


class ArgumentError(MoonliteError, ValueError):
    """Arguments given to a moonlite API function do not fit the function being differentiated."""


# --- argument kinds ----------------------------------------------------------------------------

def _kind(value) -> str:
    """'float', 'array' (float array), 'tuple', or 'none' (carries no tangent)."""
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (int, np.integer)):
        return "none"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, np.ndarray):
        return "array" if np.issubdtype(value.dtype, np.floating) else "none"
    if isinstance(value, tuple):
        return "tuple" if any(_kind(v) != "none" for v in value) else "none"
    if isinstance(value, complex) or (isinstance(value, np.ndarray)
                                      and np.issubdtype(value.dtype, np.complexfloating)):
        return "complex"
    return "none"


def _check_njit(f, api: str) -> None:
    if not isinstance(f, nb.Dispatcher):
        raise UnsupportedError("a function that is not compiled with @numba.njit",
                               function=getattr(f, "__qualname__", repr(f)),
                               hint=f"decorate the function with @numba.njit before moonlite.{api}")


def _check_tangent(primal, tangent, where: str):
    """Return the tangent converted to what the rule expects, or raise ArgumentError."""
    kind = _kind(primal)
    if kind == "none":
        if tangent is not None:
            raise ArgumentError(f"{where}: a {type(primal).__name__} argument carries no "
                                f"tangent; pass None for it")
        return None
    if tangent is None:
        raise ArgumentError(f"{where}: the tangent is missing (pass zeros for a direction you "
                            f"do not need)")
    if kind == "float":
        if np.ndim(tangent) != 0:
            raise ArgumentError(f"{where}: the tangent of a scalar must be a scalar, got an "
                                f"array of shape {np.shape(tangent)}")
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
    if kind == "tuple":
        if not isinstance(tangent, tuple) or len(tangent) != len(primal):
            raise ArgumentError(f"{where}: the tangent of a tuple must be a tuple of "
                                f"{len(primal)} entries (None for entries without tangents)")
        return tuple(_check_tangent(p, t, f"{where}[{k}]")
                     for k, (p, t) in enumerate(zip(primal, tangent)))
    raise UnsupportedError("complex arguments", hint="split them into real and imaginary parts")


def _rule_for(f, primals: tuple, width: int, api: str, active=None):
    _check_njit(f, api)
    argtypes = tuple(f.typeof_pyval(p) for p in primals)
    return derived_forward_rule(f, argtypes, width, active)


# --- jvp ---------------------------------------------------------------------------------------

def jvp(f, primals: Sequence, tangents: Sequence):
    """`(f(*primals), J f(primals) @ tangents)`, in one compiled forward-mode evaluation.

    `tangents` has one entry per primal: None for int and bool arguments, a float for a float,
    an array of the same shape and dtype for a float array, a tuple for a tuple. Like the primal,
    the forward rule writes into arrays: after the call every input array holds what `f` leaves
    in it, and the tangent array given for it describes that new value.
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ArgumentError(f"jvp needs one tangent per primal: got {len(primals)} primals and "
                            f"{len(tangents)} tangents")
    checked = [_check_tangent(p, t, f"tangent {i}")
               for i, (p, t) in enumerate(zip(primals, tangents))]
    rule = _rule_for(f, primals, 1, "jvp")
    out, dout = rule(*primals, *[t for t in checked if t is not None])
    return out, (None if _is_none_tangent(dout) else dout)


def build_frule(f, *args):
    """The derived forward rule of `f` for the types of `args`: a compiled callable whose `.ir`
    is its moonlite IR. Call it as `rule(*primals, *tangents_of_differentiable_args)`; it
    returns `(out, dout)`."""
    return _rule_for(f, tuple(args), 1, "build_frule")


def _is_none_tangent(t) -> bool:
    return t is None or (isinstance(t, tuple) and all(_is_none_tangent(e) for e in t))


# --- jacfwd ------------------------------------------------------------------------------------

def jacfwd(f, argnums=0):
    """A function computing the Jacobian of `f` with respect to argument(s) `argnums` by forward
    mode, `JACFWD_WIDTH` directions per evaluation. The Jacobian has shape out.shape + arg.shape;
    a tuple `argnums` gives a tuple of Jacobians."""
    _check_njit(f, "jacfwd")

    def jacobian(*args):
        nums = argnums if isinstance(argnums, tuple) else (argnums,)
        for n in nums:
            _check_argnum(n, args, "jacfwd")
        jacs = tuple(_jacobian_wrt(f, args, n) for n in nums)
        return jacs if isinstance(argnums, tuple) else jacs[0]

    jacobian.__name__ = f"jacfwd_{getattr(f, '__name__', 'f')}"
    return jacobian


def _check_argnum(n, args: tuple, api: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise ArgumentError(f"{api}: argnums must be an int or a tuple of ints, got {n!r}")
    if not -len(args) <= n < len(args):
        raise ArgumentError(f"{api}: argnums {n} is out of range for {len(args)} arguments")
    if _kind(args[n]) not in ("float", "array"):
        raise ArgumentError(f"{api}: argument {n} is a {type(args[n]).__name__}; only float "
                            f"scalars and float arrays can be differentiated")


def _jacobian_wrt(f, args: tuple, argnum: int):
    argnum = argnum % len(args)
    x = args[argnum]
    n = int(np.size(x))
    width = min(JACFWD_WIDTH, n)
    # Only x carries tangents: the other arguments are inactive (zero tangents, allocated inside
    # the rule only where the kernel writes into them).
    rule = _rule_for(f, args, width, "jacfwd", active=frozenset([argnum]))
    columns = []
    for start in range(0, n, width):
        count = min(width, n - start)
        fresh = copy_arguments(args)  # the kernel may write into its inputs: each pass its own
        seeds = [_seed(x, start + j) if j < count else zero_tangent_like(x)
                 for j in range(width)]
        result = rule(*fresh, *seeds)
        out = result[0]
        if _kind(out) not in ("float", "array"):
            raise ArgumentError("jacfwd: the function must return a float or a float array, "
                                f"got {type(out).__name__}")
        columns.extend(np.asarray(result[1 + j]) for j in range(count))
    out_shape = np.shape(out)
    jac = np.stack(columns, axis=-1) if columns else np.zeros(out_shape + (0,))
    return jac.reshape(out_shape + np.shape(x))


def _seed(x, k: int):
    if np.ndim(x) == 0:
        return type(x)(1.0) if isinstance(x, np.floating) else 1.0
    e = np.zeros_like(x)
    e.reshape(-1)[k] = 1.0
    return e


def zero_tangent_like(x):
    """A zero tangent for the argument `x` (a float or float array); None for arguments that
    carry no tangent."""
    kind = _kind(x)
    if kind == "float":
        return type(x)(0.0) if isinstance(x, np.floating) else 0.0
    if kind == "array":
        return np.zeros_like(x)
    return None


def copy_arguments(values: tuple) -> tuple:
    """The arguments with every array copied (inside tuples too): kernels may write into them."""
    return tuple(copy_arguments(v) if isinstance(v, tuple) else
                 (v.copy() if isinstance(v, np.ndarray) else v) for v in values)

