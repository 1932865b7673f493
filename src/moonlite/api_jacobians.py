"""Dense Jacobians: `jacfwd` (forward mode, `JACFWD_WIDTH` columns per evaluation) and `jacrev`
(reverse mode, one row per pullback).

Both return `DerivedDispatcher`s, like `grad`: compiled per signature, callable from Python and
from njit code, the same dispatcher for the same `f` and `argnums`. For each signature the body
is a generated driver (`api_drivers.py`) looping over columns or rows and calling the derived
rule on fresh copies of the arrays the kernel writes (each evaluation starts from the caller's
values, and the caller's arrays are never written). The Jacobian has shape
`out.shape + arg.shape` (a float when both are floats); a tuple `argnums` gives a tuple.
"""

from __future__ import annotations

import inspect

import numpy as np

from . import _numba as nb
from .api import ArgumentError, _check_njit, compile_lock
from .api_drivers import (api_dispatcher, c_order_index, contiguous, driver_function, njit_driver,
                          rule_arguments, spelled_shape)
from .api_reverse import check_argnums_form, plain_argnums, reverse_rule
from .driver import api_cached, api_entry, derived_forward_rule, written_record_arguments
from .ir.types import ArrayType, BoolType, FloatType, IntType, from_numba

# jacfwd pushes this many tangent directions through one evaluation of the kernel.
JACFWD_WIDTH = 8


def jacfwd(f, argnums=0):
    """A compiled function (a numba dispatcher) computing the Jacobian of `f` with respect to
    argument(s) `argnums` by forward mode, `JACFWD_WIDTH` directions per evaluation."""
    return _jacobian(f, argnums, "jacfwd")


def jacrev(f, argnums=0):
    """A compiled function (a numba dispatcher) computing the Jacobian of `f` with respect to
    argument(s) `argnums` by reverse mode: one pullback per output entry."""
    return _jacobian(f, argnums, "jacrev")


def _jacobian(f, argnums, api: str, strong_zeros: bool = False):
    if plain_argnums(argnums):  # the fast path: a look-up
        known = api_entry(f, (api, argnums, strong_zeros))
        if known is not None:
            return known
    _check_njit(f, api)
    argnums = check_argnums_form(f, argnums, api)
    names = list(inspect.signature(f.py_func).parameters)

    def derive(argtypes: tuple):
        with compile_lock():
            return _jacobian_ir(f, tuple(argtypes), argnums, names, api, strong_zeros)

    def build():
        # reverse mode: a Jacobian with a nan is computed again with zero-guarded products
        retry = None if strong_zeros or api == "jacfwd" else \
            (lambda: _jacobian(f, argnums, api, strong_zeros=True))
        return api_dispatcher(f, api, names, derive, (argnums, strong_zeros),
                              (_jacobian, (f, argnums, api, strong_zeros)), retry)

    return api_cached(f, (api, argnums, strong_zeros), build)


def _jacobian_ir(f, argtypes: tuple, argnums, names: list, api: str, strong_zeros: bool):
    qualname = f.py_func.__qualname__
    types = [from_numba(t) for t in argtypes]
    nums = tuple(_checked_argnum(n, types, f"{api}({qualname})")
                 for n in (argnums if isinstance(argnums, tuple) else (argnums,)))
    _refuse_written_records(f, argtypes, api)
    make = _forward_driver if api == "jacfwd" else _reverse_driver
    driver, rules, written = make(f, argtypes, types, nums, qualname, strong_zeros,
                                  isinstance(argnums, tuple))
    return driver_function(f"{api}_{f.py_func.__name__}", argtypes, names, driver, rules,
                           qualname, written=written,
                           nan_notes=api == "jacrev" and not strong_zeros)


def _refuse_written_records(f, argtypes: tuple, api: str) -> None:
    """A Jacobian evaluates `f` several times, each from the caller's arguments: the drivers
    copy the arrays `f` writes, but numba has no record that owns its bytes to copy into."""
    written = written_record_arguments(f, argtypes)
    if written:
        i = min(written)
        raise ArgumentError(f"{api}({f.py_func.__qualname__}): argument {i} is a record, or a "
                            f"tuple holding arrays, that {f.py_func.__name__} writes into; "
                            f"{api} evaluates it several times, each from the caller's values, "
                            "and copies arrays only: pass a structured array of one entry "
                            "(np.array([r]), read as p[0] in the kernel) or the arrays as "
                            "arguments of their own, or use grad, vjp or hvp, which restore "
                            "what the kernel writes")


def _checked_argnum(n: int, types: list, where: str) -> int:
    if not -len(types) <= n < len(types):
        raise ArgumentError(f"{where}: argnums {n} is out of range for {len(types)} arguments")
    t = types[n]
    if not (isinstance(t, FloatType) or (isinstance(t, ArrayType)
                                         and isinstance(t.dtype, FloatType))):
        what = "an int" if isinstance(t, IntType) else \
            "a bool" if isinstance(t, BoolType) else f"of type {t}"
        raise ArgumentError(f"{where}: argument {n} is {what}; only float scalars and float "
                            f"arrays can be differentiated")
    return n % len(types)


def _checked_output(rule_ir, where: str):
    out = rule_ir.return_type.elements[0]
    if not (isinstance(out, FloatType) or (isinstance(out, ArrayType)
                                           and isinstance(out.dtype, FloatType))):
        raise ArgumentError(f"{where}: the function must return a float or a float array, "
                            f"got {out}")
    return out


def _dtype(t) -> type:
    float_type = t if isinstance(t, FloatType) else t.dtype
    return np.float32 if float_type.bits == 32 else np.float64


def _ndim(t) -> int:
    return t.ndim if isinstance(t, ArrayType) else 0


def _arrays_among(written, argtypes: tuple) -> frozenset:
    """The written arguments that are arrays: an instance whose array field is written
    (`guards.written_arguments`) is checked for shared memory, not copied."""
    return frozenset(i for i in written if isinstance(argtypes[i], nb.types.Array))


def _copies(written, indent: str, prefix: str = "c") -> str:
    """Fresh C-contiguous copies `c{i}` of the written arrays: each evaluation starts from the
    caller's values."""
    return "".join(f"{indent}{prefix}{i} = a{i}.copy()\n" for i in sorted(written))


# --- jacfwd ------------------------------------------------------------------------------------

def _forward_driver(f, argtypes, types, nums, qualname, strong_zeros, as_tuple):
    namespace, blocks, rules, written = {}, [], [], set()
    for k, n in enumerate(nums):
        x = types[n]
        width = 1 if isinstance(x, FloatType) else JACFWD_WIDTH
        rule = derived_forward_rule(f, contiguous(argtypes), width, frozenset([n]), eager=False)
        out = _checked_output(rule.ir, f"jacfwd({qualname})")
        rules.append(rule)
        # a forward rule computes what it writes only when asked (driver._precise_written)
        mine = _arrays_among(rule.written(), argtypes)  # (what the driver copies)
        written |= frozenset(rule.written())
        namespace.update({f"rule{k}": rule, f"DT{k}": _dtype(out), f"DX{k}": _dtype(x),
                          f"ONE{k}": _dtype(x)(1.0)})
        prelude, names = rule_arguments(argtypes, mine)
        blocks.append(prelude + _forward_block(k, n, x, out, width, ", ".join(names),
                                               _copies(mine, "        ")))
    source = _driver_source("jacfwd_driver", len(types), blocks, len(nums), as_tuple)
    return njit_driver("jacfwd_driver", source, namespace), tuple(rules), frozenset(written)


def _forward_block(k: int, n: int, x, out, width: int, call: str, copies: str) -> str:
    """Source computing `J{k}`, the Jacobian with respect to argument `n`."""
    if isinstance(x, FloatType):  # one direction: the column is the output's tangent
        copies = copies.replace("        ", "    ")  # no loop: one indent less
        res = f"    res = rule{k}({call}, ONE{k})\n"
        take = "res[1]" if isinstance(out, FloatType) else "ascontiguousarray(res[1]).copy()"
        return copies + res + f"    J{k} = {take}\n"
    nx, no = _ndim(x), _ndim(out)
    seeds = "".join(f"        s{j} = zeros(x{k}.shape, DX{k})\n"
                    f"        if start + {j} < n{k}:\n"
                    f"            s{j}[{c_order_index(f'start + {j}', f's{j}', nx)}] = 1\n"
                    for j in range(width))
    call_line = f"        res = rule{k}({call}, {', '.join(f's{j}' for j in range(width))})\n"
    if isinstance(out, FloatType):
        fill = "".join(f"        if start + {j} < n{k}:\n"
                       f"            J{k}[start + {j}] = res[{1 + j}]\n" for j in range(width))
        return (f"    x{k} = a{n}\n    n{k} = x{k}.size\n    J{k} = zeros(n{k}, DT{k})\n"
                f"    for start in range(0, n{k}, {width}):\n{copies}{seeds}{call_line}{fill}"
                f"    J{k} = reshape(J{k}, {spelled_shape((f'x{k}.shape', nx))})\n")
    fill = "".join(f"        if start + {j} < n{k}:\n"
                   f"            g = reshape(ascontiguousarray(res[{1 + j}]), (-1,))\n"
                   f"            for r in range(m{k}):\n"
                   f"                J{k}[r, start + {j}] = g[r]\n" for j in range(width))
    first = (f"        if start == 0:  # the output's shape, known from the first evaluation\n"
             f"            shape{k} = res[0].shape\n"
             f"            m{k} = res[0].size\n"
             f"            J{k} = zeros((m{k}, n{k}), DT{k})\n")
    return (f"    x{k} = a{n}\n    n{k} = x{k}.size\n    m{k} = 0\n"
            f"    shape{k} = ({'0, ' * no})\n    J{k} = zeros((0, 0), DT{k})\n"
            f"    for start in range(0, n{k}, {width}):\n{copies}{seeds}{call_line}{first}{fill}"
            f"    J{k} = reshape(J{k}, {spelled_shape((f'shape{k}', no), (f'x{k}.shape', nx))})\n")


def _driver_source(name: str, nargs: int, blocks: list, count: int, as_tuple: bool) -> str:
    """The driver returns `J0` (an int argnums) or the tuple `(J0, J1, ...)`."""
    args = ", ".join(f"a{i}" for i in range(nargs))
    results = "(" + "".join(f"J{k}, " for k in range(count)) + ")" if as_tuple else "J0"
    return f"def {name}({args}):\n" + "".join(blocks) + f"    return {results}\n"


# --- jacrev ------------------------------------------------------------------------------------

def _reverse_driver(f, argtypes, types, nums, qualname, strong_zeros, as_tuple):
    rule = reverse_rule(f, contiguous(argtypes), strong_zeros=strong_zeros)
    out = _checked_output(rule.ir, f"jacrev({qualname})")
    written = _arrays_among(rule.written, argtypes)  # (what the driver copies)
    prelude, names = rule_arguments(argtypes, written)
    call = ", ".join(names)
    namespace = {"rule": rule, "F": f, "ONE": _dtype(out)(1.0), "DT": _dtype(out)}
    body = prelude
    if isinstance(out, FloatType):  # one row: the gradient
        body += _copies(written, "    ") + f"    res = rule({call}, ONE)\n"
        for k, n in enumerate(nums):
            g = f"res[1][{n}]"
            body += f"    J{k} = {g if isinstance(types[n], FloatType) else g + '.copy()'}\n"
    else:
        no = _ndim(out)
        # the primal on copies of its own, for the output's shape
        body += _copies(written, "    ", prefix="p")
        primal_args = ", ".join(f"p{i}" if i in written else f"a{i}" for i in range(len(types)))
        body += f"    o = F({primal_args})\n    m = o.size\n"
        for k, n in enumerate(nums):
            size = "1" if isinstance(types[n], FloatType) else f"a{n}.size"
            body += f"    J{k} = zeros((m, {size}), DT)\n"
        body += (f"    for r in range(m):\n{_copies(written, '        ')}"
                 f"        seed = zeros(o.shape, DT)\n"
                 f"        seed[{c_order_index('r', 'seed', no)}] = 1\n"
                 f"        res = rule({call}, seed)\n")
        for k, n in enumerate(nums):
            if isinstance(types[n], FloatType):
                body += f"        J{k}[r, 0] = res[1][{n}]\n"
            else:
                body += (f"        g = reshape(ascontiguousarray(res[1][{n}]), (-1,))\n"
                         f"        for c in range(a{n}.size):\n"
                         f"            J{k}[r, c] = g[c]\n")
        for k, n in enumerate(nums):
            shape = spelled_shape(("o.shape", no), (f"a{n}.shape", _ndim(types[n])))
            body += f"    J{k} = reshape(J{k}, {shape})\n"
    source = _driver_source("jacrev_driver", len(types), [body], len(nums), as_tuple)
    return njit_driver("jacrev_driver", source, namespace), (rule,), frozenset(rule.written)
