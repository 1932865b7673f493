"""Second derivatives: forward mode applied to the derived reverse rule (forward over reverse).

The reverse rule of `f` is moonlite IR like any other (its tapes, block stack and adjoint locals
included), so the forward pass differentiates it: along a direction `v`, the tangent of the
gradient it returns is the Hessian-vector product `H v`, computed in one compiled evaluation
together with the value and the gradient. `hessian` runs that rule with `HESSIAN_WIDTH`
directions per evaluation (batched tangents), filling `HESSIAN_WIDTH` columns at a time.
"""

from __future__ import annotations

import inspect
from typing import Sequence

import numpy as np

from . import _numba as nb
from .ad.guards import emit_guards, private_copies
from .ad.inline import inline_njit_calls
from .ad.nan_retry import NAN_NOTES, emit_nan_notes, has_nan
from .api import (ArgumentError, _check_njit, _def_loc, _kind, checked_primals_and_tangents,
                  compile_lock, refuse_aliased_writes, value_key)
from .api_reverse import reverse_rule
from .cache import attach_disk_cache
from .driver import PASS_CONTEXT, api_cached, api_entry, derived_hvp_rule
from .errors import UnsupportedError
from .ir import Builder
from .ir.types import ArrayType, FloatType, from_numba
from .lower import DerivedDispatcher

HESSIAN_WIDTH = 4  # directions per evaluation: compile time grows with it (8: 2.2 s, 4: 1.1 s)


def hvp(f, primals: Sequence, tangents: Sequence) -> tuple:
    """Hessian-vector products of scalar-valued `f` at `primals` along `tangents`: one entry per
    primal, shaped like it (None for int and bool arguments), the Hessian of `f` with respect to
    all its float arguments applied to the direction `tangents`."""
    primals, checked = checked_primals_and_tangents(f, primals, tangents, "hvp")
    hv = _run_hvp(f, primals, checked, strong_zeros=False)
    if has_nan(hv):  # again with zero-guarded products (ad/nan_retry.py)
        hv = _run_hvp(f, primals, checked, strong_zeros=True)
    return hv


def _run_hvp(f, primals: tuple, checked: list, strong_zeros: bool) -> tuple:
    key = ("hvp", tuple(value_key(f, p) for p in primals), strong_zeros)
    rule, one = api_cached(f, key, lambda: _hvp_rule(f, primals, strong_zeros))
    if rule.written:  # the rule runs f's sweep: on copies, so a failure leaves no trace
        refuse_aliased_writes(f, primals, checked, rule.written)
        primals = private_copies(primals, rule.written)
        checked = private_copies(tuple(checked), rule.written)
    _, (_, hv) = rule(*primals, one, *[t for t in checked if t is not None])
    return tuple(hv)


def _hvp_rule(f, primals: tuple, strong_zeros: bool) -> tuple:
    active = frozenset(i for i, p in enumerate(primals) if _kind(p) != "none")
    argtypes = tuple(f.typeof_pyval(p) for p in primals)
    one = _unit_cotangent(f, argtypes, "hvp")
    with compile_lock():
        return derived_hvp_rule(f, argtypes, 1, active, strong_zeros), one


def hessian(f, argnums: int = 0):
    """A compiled function (a numba dispatcher, usable inside @njit code) returning the dense
    Hessian of scalar-valued `f` with respect to argument `argnums`: shape arg.shape + arg.shape
    (a float for a float argument)."""
    if type(argnums) is int:  # the fast path, as for grad
        known = api_entry(f, ("hessian", argnums, False))
        if known is not None:
            return known
    _check_njit(f, "hessian")
    if isinstance(argnums, bool) or not isinstance(argnums, int):
        raise ArgumentError(f"hessian({f.py_func.__qualname__}): argnums must be an int, got "
                            f"{argnums!r} (a Hessian with "
                            f"respect to several arguments: pack them into one array)")
    return _hessian_dispatcher(f, argnums, strong_zeros=False)


def _hessian_dispatcher(f, argnums: int, strong_zeros: bool):
    names = list(inspect.signature(f.py_func).parameters)

    def derive(argtypes: tuple):
        return _hessian_ir(f, argtypes, argnums, names, strong_zeros)

    def build():
        # a Hessian with a nan is computed again with zero-guarded products (nan_retry.py)
        retry = None if strong_zeros else \
            (lambda: _hessian_dispatcher(f, argnums, strong_zeros=True))
        disp = DerivedDispatcher(f"hessian_{f.py_func.__name__}", names, derive,
                                 bool(f.targetoptions.get("boundscheck")), retry, NAN_NOTES)
        disp.recipe = (_hessian_dispatcher, (f, argnums, strong_zeros))
        attach_disk_cache(disp, f, ("hessian", argnums, strong_zeros))
        return disp

    # one dispatcher per function and argnums, as for grad: `hessian(f)(x)` written in a loop
    # compiles once, not once per call (about 4 s each)
    return api_cached(f, ("hessian", argnums, strong_zeros), build)


def _hessian_ir(f, argtypes: tuple, argnum: int, names: list, strong_zeros: bool):
    types = [from_numba(t) for t in argtypes]
    qualname = f.py_func.__qualname__
    if not -len(types) <= argnum < len(types):
        raise ArgumentError(f"hessian({qualname}): argnums {argnum} is out of range for "
                            f"{len(types)} arguments")
    argnum %= len(types)
    x = types[argnum]
    if not (isinstance(x, FloatType) or (isinstance(x, ArrayType)
                                         and isinstance(x.dtype, FloatType))):
        raise ArgumentError(f"hessian({qualname}): argument {argnum} has type {x}; Hessians "
                            f"exist for float scalars and float arrays")
    width = 1 if isinstance(x, FloatType) else HESSIAN_WIDTH
    one = _unit_cotangent(f, tuple(argtypes), "hessian")
    rule = derived_hvp_rule(f, tuple(argtypes), width, frozenset([argnum]), strong_zeros)
    seed = (np.float32(1.0) if x.bits == 32 else 1.0) if isinstance(x, FloatType) else None
    driver = _driver(rule, len(types), argnum, width, one, seed,
                     x.ndim if isinstance(x, ArrayType) else 0)
    b = Builder.new_function(f"hessian_{f.py_func.__name__}", types, names, x)
    b.position_at_end(b.new_block("entry"))
    args = emit_guards(b, list(b.function.args), rule.written, qualname)  # ad/guards.py
    result = b.call(driver, args)
    if not strong_zeros:
        emit_nan_notes(b, result)  # the Python call then reruns the strong-zeros variant
    b.function.return_type = result.type
    b.ret(result)
    # one compiled function: the driver and the rule inlined (see api_reverse.inline_rule)
    return inline_njit_calls(b.function, keep=lambda callee: callee not in (driver, rule),
                             context=PASS_CONTEXT)


def _unit_cotangent(f, argtypes: tuple, api: str):
    """1 of the output's type, checked to be a float before any second-order rule is built."""
    out_type = reverse_rule(f, argtypes).ir.return_type.elements[0]
    if not isinstance(out_type, FloatType):
        raise UnsupportedError(f"{api} of a function returning {out_type}",
                               function=f.py_func.__qualname__, loc=_def_loc(f),
                               hint=f"{api} needs a scalar float output")
    return np.float32(1.0) if out_type.bits == 32 else 1.0


def _doubled_shape(ndim: int) -> str:
    """Source of x.shape + x.shape, spelled out (moonlite's IR does not add tuples)."""
    dims = [f"x.shape[{k}]" for k in range(ndim)]
    return f"({', '.join(dims + dims)})"


def _driver(rule, nargs: int, argnum: int, width: int, one, seed, ndim: int = 0):
    """An njit function `driver(*args)` filling the Hessian `width` columns per call of the
    forward-over-reverse `rule` (generated per signature: numba needs the arity spelled out)."""
    args = ", ".join(f"a{i}" for i in range(nargs))
    if seed is not None:  # a float argument: one direction, the Hessian is a float
        body = (f"    res = rule({args}, ONE, SEED)\n"
                f"    return res[1][1][{argnum}]\n")
    else:
        seeds = "".join(f"        s{j} = np.zeros(x.shape, x.dtype)\n"
                        f"        if start + {j} < n:\n"
                        f"            s{j}.reshape(-1)[start + {j}] = 1\n" for j in range(width))
        columns = "".join(f"        if start + {j} < n:\n"
                          f"            H[:, start + {j}] = np.ascontiguousarray("
                          f"res[{1 + j}][1][{argnum}]).reshape(-1)\n" for j in range(width))
        body = (f"    x = a{argnum}\n"
                f"    n = x.size\n"
                f"    H = np.zeros((n, n), x.dtype)\n"
                f"    for start in range(0, n, {width}):\n"
                f"{seeds}"
                f"        res = rule({args}, ONE, {', '.join(f's{j}' for j in range(width))})\n"
                f"{columns}"
                f"    return H.reshape({_doubled_shape(ndim)})\n")
    source = f"def hessian_driver({args}):\n{body}"
    namespace = {"np": np, "rule": rule, "ONE": one, "SEED": seed}
    exec(compile(source, "<moonlite hessian driver>", "exec"), namespace)
    return nb.njit(namespace["hessian_driver"])
