"""Second derivatives: forward mode applied to the derived reverse rule (forward over reverse).

The reverse rule of `f` is moonlite IR like any other (its tapes, block stack and adjoint locals
included), so the forward pass differentiates it: along a direction `v`, the tangent of the
gradient it returns is the Hessian-vector product `H v`, computed in one compiled evaluation
together with the value and the gradient. `hessian` runs that rule with `HESSIAN_WIDTH`
directions per evaluation (batched tangents), filling `HESSIAN_WIDTH` rows at a time.
"""

from __future__ import annotations

import inspect
from typing import Sequence

import numpy as np

from .ad.inline import inline_njit_calls
from .ad.nan_retry import emit_nan_notes
from .api import ArgumentError, _check_arguments, _check_njit, _def_loc
from .api_drivers import (api_dispatcher, c_order_index, contiguous, driver_function, njit_driver,
                          rule_arguments, spelled_shape)
from .api_calls import (alias_checks, calls_dispatcher, checked_tangent, compiled_call,
                        parameter_names_of, split_arguments, unpacked)
from .api_instances import flat_calls_ir, flat_kernel, has_instance_tangent
from .api_reverse import check_argnums_form, reverse_rule
from .driver import PASS_CONTEXT, api_cached, api_entry, derived_hvp_rule
from .errors import UnsupportedError
from .ir import Builder
from .ir.types import ArrayType, FloatType, from_numba
from .rules.tangents import tangent_type

# directions per evaluation. Compile time grows with it, run time falls, but since the Hessian
# is filled by rows (in memory order) the fall is small: at 2 directions rather than 1 the suite's
# 10,000-entry rosenbrock and scalar-loop Hessians ran 0.70 and 2.87 s against 0.77 and 3.41 s,
# while the first call compiled 1.4-1.5x longer (reprojection 2.06 s against 1.43 s, the MLP 3.26
# against 2.22). (Filling columns, the gain was 2.6 -> 1.1 s: it halved the cache misses.)
# docs/benchmarks.md, "seventh latency session"
HESSIAN_WIDTH = 1


def hvp(f, primals: Sequence, tangents: Sequence) -> tuple:
    """Hessian-vector products of scalar-valued `f` at `primals` along `tangents`: one entry per
    primal, shaped like it (None for int and bool arguments), the Hessian of `f` with respect to
    all its float arguments applied to the direction `tangents`. After the first call for `f`,
    a look-up and one call of the compiled `hvp_f(primals, tangents)` (`api_calls.py`)."""
    return compiled_call(f, "hvp", _HVP, _plain_hvp_dispatcher, primals, tangents)


_HVP = ("hvp", False)


def _plain_hvp_dispatcher(f):
    return _hvp_dispatcher(f, False)


def _hvp_dispatcher(f, strong_zeros: bool):
    # an HVP with a nan is computed again with zero-guarded products (nan_retry.py)
    retry = None if strong_zeros else (lambda: _hvp_dispatcher(f, True))
    return api_cached(f, ("hvp", strong_zeros),
                      lambda: calls_dispatcher(f, "hvp", _hvp_ir, (strong_zeros,),
                                               (_hvp_dispatcher, (f, strong_zeros)), retry))


def _hvp_ir(f, argtypes: tuple, strong_zeros: bool):
    primals, _ = split_arguments(f, argtypes, "hvp")
    _check_arguments(f, primals, "hvp")
    if has_instance_tangent(argtypes):  # through the flat kernel (api_instances.py)
        flat = flat_kernel(f, primals)
        return flat_calls_ir(f, "hvp", argtypes, flat, _hvp_dispatcher(flat.fn, strong_zeros),
                             repack=True)
    types = [from_numba(p) for p in primals]
    active = frozenset(i for i, t in enumerate(types) if tangent_type(t) is not None)
    one = _unit_cotangent(f, primals, "hvp")
    rule = derived_hvp_rule(f, primals, 1, active, strong_zeros)
    qualname = f.py_func.__qualname__
    b = Builder.new_function(f"hvp_{f.py_func.__name__}", [from_numba(t) for t in argtypes],
                             ["primals", "tangents"], types[0])
    b.position_at_end(b.new_block("entry"))
    P, T = unpacked(b, len(primals))
    passed = [checked_tangent(b, p, t, f"hvp({qualname}): tangent {i}")
              for i, (p, t) in enumerate(zip(P, T))]
    # the rule runs f's sweep: on copies of what it writes (and of their tangents)
    T = [t if t is not None else T[i] for i, t in enumerate(passed)]
    P, T = alias_checks(b, P, T, rule.written, qualname, copy=True,
                        names=parameter_names_of(f, len(P)))
    tangents = [T[i] for i, t in enumerate(passed) if t is not None]
    result = b.call(rule, P + [b.const(one, rule.ir.argtypes[len(P)])] + tangents,
                    type=rule.ir.return_type)
    hv = b.tuple_getitem(b.tuple_getitem(result, 1), 1)
    if not strong_zeros:
        emit_nan_notes(b, hv)  # the Python call then reruns the strong-zeros variant
    b.function.return_type = hv.type
    b.ret(hv)
    return inline_njit_calls(b.function, keep=lambda callee: callee is not rule,
                             context=PASS_CONTEXT)


def hessian(f, argnums: int = 0):
    """A compiled function (a numba dispatcher, usable inside @njit code) returning the dense
    Hessian of scalar-valued `f` with respect to argument `argnums`: shape arg.shape + arg.shape
    (a float for a float argument)."""
    if type(argnums) is int:  # the fast path, as for grad
        known = api_entry(f, ("hessian", argnums, False))
        if known is not None:
            return known
    _check_njit(f, "hessian")
    if isinstance(argnums, tuple):
        raise ArgumentError(f"hessian({f.py_func.__qualname__}): argnums must be an int, got "
                            f"{argnums!r} (a Hessian with "
                            f"respect to several arguments: pack them into one array)")
    argnums = check_argnums_form(f, argnums, "hessian")
    return _hessian_dispatcher(f, argnums, strong_zeros=False)


def _hessian_dispatcher(f, argnums: int, strong_zeros: bool):
    names = list(inspect.signature(f.py_func).parameters)

    def derive(argtypes: tuple):
        return _hessian_ir(f, argtypes, argnums, names, strong_zeros)

    def build():
        # a Hessian with a nan is computed again with zero-guarded products (nan_retry.py)
        retry = None if strong_zeros else \
            (lambda: _hessian_dispatcher(f, argnums, strong_zeros=True))
        return api_dispatcher(f, "hessian", names, derive, (argnums, strong_zeros),
                              (_hessian_dispatcher, (f, argnums, strong_zeros)), retry)

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
    rule = derived_hvp_rule(f, contiguous(argtypes), width, frozenset([argnum]), strong_zeros)
    seed = (np.float32(1.0) if x.bits == 32 else 1.0) if isinstance(x, FloatType) else None
    driver = _driver(rule, tuple(argtypes), argnum, width, one, seed,
                     x.ndim if isinstance(x, ArrayType) else 0)
    return driver_function(f"hessian_{f.py_func.__name__}", tuple(argtypes), names, driver,
                           (rule,), qualname, written=rule.written, nan_notes=not strong_zeros)


def _unit_cotangent(f, argtypes: tuple, api: str):
    """1 of the output's type, checked to be a float before any second-order rule is built."""
    out_type = reverse_rule(f, argtypes).ir.return_type.elements[0]
    if not isinstance(out_type, FloatType):
        raise UnsupportedError(f"{api} of a function returning {out_type}",
                               function=f.py_func.__qualname__, loc=_def_loc(f),
                               hint=f"{api} needs a scalar float output")
    return np.float32(1.0) if out_type.bits == 32 else 1.0


def _driver(rule, argtypes: tuple, argnum: int, width: int, one, seed, ndim: int = 0):
    """An njit function `driver(*args)` filling the Hessian `width` rows per call of the
    forward-over-reverse `rule` (generated per signature: numba needs the arity spelled out;
    filled entry by entry, see api_drivers.py). The rule undoes its writes, so every call
    starts from the same arguments.

    Row j gets H e_j, the derivative of the gradient along e_j, which is column j: the Hessian
    is symmetric. Rows are written in memory order, columns a stride apart: filling columns
    made the first Hessian of a 10,000-entry kernel spend 4.9 s running, rows 2.8 s."""
    args = ", ".join(f"a{i}" for i in range(len(argtypes)))
    prelude, names = rule_arguments(argtypes)
    call = ", ".join(names)
    if seed is not None:  # a float argument: one direction, the Hessian is a float
        body = (f"{prelude}    res = rule({call}, ONE, SEED)\n"
                f"    return res[1][1][{argnum}]\n")
    else:
        seeds = "".join(f"        s{j} = zeros(x.shape, x.dtype)\n"
                        f"        if start + {j} < n:\n"
                        f"            s{j}[{c_order_index(f'start + {j}', 'x', ndim)}] = 1\n"
                        for j in range(width))
        rows = "".join(f"        if start + {j} < n:\n"
                       f"            g = reshape(ascontiguousarray(res[{1 + j}][1][{argnum}]),"
                       f" (-1,))\n"
                       f"            for r in range(n):\n"
                       f"                H[start + {j}, r] = g[r]\n" for j in range(width))
        body = (f"{prelude}    x = a{argnum}\n"
                f"    n = x.size\n"
                f"    H = zeros((n, n), x.dtype)\n"
                f"    for start in range(0, n, {width}):\n"
                f"{seeds}"
                f"        res = rule({call}, ONE, {', '.join(f's{j}' for j in range(width))})\n"
                f"{rows}"
                f"    return reshape(H, {spelled_shape(('x.shape', ndim), ('x.shape', ndim))})\n")
    return njit_driver("hessian_driver", f"def hessian_driver({args}):\n{body}",
                       {"rule": rule, "ONE": one, "SEED": seed})
