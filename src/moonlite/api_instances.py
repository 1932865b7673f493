"""Derivatives with respect to `@jitclass` and structref instance arguments (issue #20).

`grad(energy, argnums=0)(params, x)` with `params` a jitclass instance returns an instance of
the same class whose float fields (scalars and arrays) hold the gradient; `jvp` and `hvp` take
an instance of the same class as its tangent. No AD pass learns about instances for this: the
kernel is differentiated through its *flat* form,

    flat(k, c, w, x) = energy(make((k, c, w)), x)     # one parameter per field

where `make` builds an instance from the tuple of its fields without `__init__`
(`rules/jitclasses.py`). Capture and the inliner already read `p.k` of an instance built so
straight out of the tuple (`ad/instances.py`), so every mode differentiates the flat kernel as
an ordinary function of floats and arrays. The API's dispatcher for the instance signature is a
small function around the same API's dispatcher of `flat`, inlined into it: it reads the fields
of the instances it is given (arguments and tangents), calls it, and builds instances of the
gradients (`make` again; fields without derivatives are zero: ints, bools and their arrays).

The instance is the caller's: the kernel's writes into its array fields land in the caller's
arrays, as in the primal. Its scalar fields the kernel writes are fields of the instance the
flat form builds: the caller's instance keeps its values (`ad/instance_fields.py`).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from . import _numba as nb
from .ad.inline import inline_njit_calls
from .ad.tangents import hides_derivatives
from .driver import PASS_CONTEXT, api_cached
from .errors import ArgumentError, UnsupportedError
from .ir import Builder
from .ir.types import ArrayType, BoolType, IntType, from_numba, none
from .rules.jitclasses import (class_name, fields_of, is_numba_instance_type, maker_for,
                               reader_for)
from .rules.tangents import tangent_type, zero_tangent

types = nb.types


class FlatKernel(NamedTuple):
    fn: object  # the njit function of one parameter per field (per argument otherwise)
    groups: tuple  # per argument of the kernel: its flat index, or a tuple of its fields'
    instance_types: dict  # argument index -> numba ClassInstanceType or StructRef


def has_instance(primal_types) -> bool:
    return any(map(is_numba_instance_type, primal_types))


def differentiates_instance(argtypes: tuple, argnums) -> bool:
    """True if `grad(f, argnums)` at `argtypes` differentiates with respect to an instance
    (other instances are read as the kernel reads them: constants)."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    return any(is_numba_instance_type(argtypes[n])
               for n in nums if -len(argtypes) <= n < len(argtypes))


def has_instance_tangent(argtypes: tuple) -> bool:
    """True if the `(primals, tangents)` tuple types of a `jvp` or `hvp` give an instance a
    tangent (an instance whose tangent is None is read as a constant)."""
    if len(argtypes) != 2 or not all(isinstance(t, types.BaseTuple) for t in argtypes):
        return False
    return any(is_numba_instance_type(p) and not isinstance(t, types.NoneType)
               for p, t in zip(argtypes[0].types, argtypes[1].types))


def flat_kernel(f, primal_types: tuple) -> Optional[FlatKernel]:
    """The flat form of `f` for numba argument types `primal_types`, or None if no argument is
    a jitclass instance. Built once per kernel and signature."""
    if not has_instance(primal_types):
        return None
    return api_cached(f, ("flat kernel", tuple(primal_types)),
                      lambda: _build_flat_kernel(f, tuple(primal_types)))


def _build_flat_kernel(f, primal_types: tuple) -> FlatKernel:
    params, passed, groups, instances = [], [], [], {}
    scope = {"kernel": f}
    for i, t in enumerate(primal_types):
        if is_numba_instance_type(t):
            _refuse_hidden_fields(f, i, t)
            names = [f"a{len(params) + k}" for k in range(len(fields_of(t)))]
            scope[f"make{i}"] = maker_for(t).make
            passed.append(f"make{i}(({''.join(n + ', ' for n in names)}))")
            groups.append(tuple(range(len(params), len(params) + len(names))))
            instances[i] = t
            params += names
        else:
            groups.append(len(params))
            passed.append(f"a{len(params)}")
            params.append(f"a{len(params)}")
    # named as the kernel, so that errors do; its line says what it is
    name = f.py_func.__name__
    source = f"def {name}({', '.join(params)}):\n    return kernel({', '.join(passed)})\n"
    scope["__name__"] = __name__
    fn = njit_wrapper(f, source, "with its jitclass arguments passed as their fields",
                      f"{f.py_func.__qualname__}.with_fields", scope)  # (its disk cache's)
    return FlatKernel(fn, tuple(groups), instances)


def njit_wrapper(f, source: str, what: str, qualname: str, scope: dict):
    """The function named as `f` that `source` defines (its globals: `scope`), compiled with
    `f`'s error model and bounds checking: a kernel the API wraps around `f`. `what` says in
    tracebacks what it is (`<moonlite: f what>`); `qualname` is its own."""
    name = f.py_func.__name__
    exec(compile(source, f"<moonlite: {name} {what}>", "exec"), scope)
    scope[name].__qualname__ = qualname
    options = f.targetoptions
    return nb.njit(error_model=options.get("error_model", "python"),
                   boundscheck=bool(options.get("boundscheck")))(scope[name])


def flattenable(t) -> bool:
    """True for an instance type whose every field either carries derivatives or holds no
    float (`_refuse_hidden_fields`)."""
    return not any(hides_derivatives(from_numba(ft)) for ft in fields_of(t).values())


def _refuse_hidden_fields(f, i: int, t) -> None:
    """A field that may hold floats moonlite gives no derivative (another instance, a list)
    would be left out of the derivative: refused."""
    for name, ft in fields_of(t).items():
        if hides_derivatives(from_numba(ft)):
            raise UnsupportedError(
                f"differentiating with respect to a {instance_name(t)} instance (argument {i}) "
                f"whose field {name!r} holds {ft}", function=f.py_func.__qualname__,
                hint="derivatives with respect to an instance cover fields holding floats, "
                     "arrays, tuples and records (ints, bools and strings carry none); pass "
                     "the nested value as an argument of its own")


def flat_types(flat: FlatKernel, primal_types: tuple) -> tuple:
    """The numba argument types of `flat.fn`."""
    out = []
    for i, t in enumerate(primal_types):
        out += list(fields_of(t).values()) if i in flat.instance_types else [t]
    return tuple(out)


def field_values(b: Builder, instance) -> list:
    """The fields of the instance value `instance`, read in declaration order."""
    struct = fields_of(instance.type.numba_type)
    return [b.getattr(instance, name, from_numba(t)) for name, t in struct.items()]


def flat_values(b: Builder, flat: FlatKernel, values: list) -> list:
    """The arguments of `flat.fn` for the kernel's arguments `values`."""
    out = []
    for i, v in enumerate(values):
        out += field_values(b, v) if i in flat.instance_types else [v]
    return out


def differentiable_fields(flat: FlatKernel, i: int) -> tuple:
    """The flat indices of the fields of instance argument `i` that carry derivatives."""
    t = flat.instance_types[i]
    return tuple(k for k, ft in zip(flat.groups[i], fields_of(t).values())
                 if tangent_type(from_numba(ft)) is not None)


def instance_of(b: Builder, flat: FlatKernel, i: int, entries: dict, primal):
    """An instance of argument `i`'s class whose fields are `entries` (flat index -> value);
    fields without derivatives are zero (ints, bools and their arrays) or the argument
    `primal`'s own (strings: nothing a derivative could be mistaken for)."""
    t = flat.instance_types[i]
    fields = []
    for k, (name, ft) in zip(flat.groups[i], fields_of(t).items()):
        value = entries.get(k)
        if value is None or value.type == none:
            value = _zero_field(b, b.getattr(primal, name, from_numba(ft)))
        fields.append(value)
    made = maker_for(t).make
    return b.call(made, [b.build_tuple(fields)], type=from_numba(t))


def _zero_field(b: Builder, field):
    t = field.type
    if isinstance(t, BoolType):
        return b.const(False, t)
    if isinstance(t, IntType):
        return b.const(0, t)
    if isinstance(t, ArrayType) and isinstance(t.dtype, (IntType, BoolType)):
        return b.call(np.zeros_like, [field], type=ArrayType(t.dtype, t.ndim, "C"))
    return field


def flat_calls_ir(f, api: str, argtypes: tuple, flat: FlatKernel, inner, repack: bool):
    """The IR of `{api}_f(primals, tangents)` (`jvp`, `hvp`) for primals holding instances:
    the instances and their tangents (instances of the same class) taken apart into fields,
    a call of `inner` (the same API's dispatcher of `flat.fn`), and, with `repack`, the result
    (one entry per argument) with the entries of an instance's fields made an instance."""
    primal_types, tangent_types = tuple(argtypes[0].types), tuple(argtypes[1].types)
    qualname = f.py_func.__qualname__
    b = Builder.new_function(f"{api}_{f.py_func.__name__}", [from_numba(t) for t in argtypes],
                             ["primals", "tangents"], none)
    b.position_at_end(b.new_block("entry"))
    ptuple, ttuple = b.function.args
    P = [b.tuple_getitem(ptuple, i) for i in range(len(primal_types))]
    T = [b.tuple_getitem(ttuple, i) for i in range(len(tangent_types))]
    flat_T = []
    for i, (p, t) in enumerate(zip(P, T)):
        if i not in flat.instance_types:
            flat_T.append(t)
            continue
        if isinstance(tangent_types[i], types.NoneType):  # the instance held fixed
            flat_T += [zero_tangent(b, field) for field in field_values(b, p)]
            continue
        if tangent_types[i] != primal_types[i]:
            raise ArgumentError(f"{api}({qualname}): tangent {i}: the tangent of a "
                                f"{instance_name(primal_types[i])} instance must be an instance "
                                f"of the same class (its float fields hold the tangent), or "
                                f"None to hold it fixed; got {tangent_types[i]}")
        for k, value in zip(flat.groups[i], field_values(b, t)):
            differentiable = k in differentiable_fields(flat, i)
            flat_T.append(value if differentiable else b.const(None, none))
    pt, tt = b.build_tuple(flat_values(b, flat, P)), b.build_tuple(flat_T)
    inner_ir = inner.ir_for((pt.type.to_numba(), tt.type.to_numba()))
    result = b.call(inner, [pt, tt], type=inner_ir.return_type)
    if repack:
        flat_entries = {k: b.tuple_getitem(result, k)
                        for k in range(len(inner_ir.return_type.elements))}
        result = b.build_tuple([
            instance_of(b, flat, i, flat_entries, P[i]) if i in flat.instance_types
            else flat_entries[flat.groups[i]] for i in range(len(P))])
    b.function.return_type = result.type
    b.ret(result)
    return around_flat(b, inner)


def python_flat_values(flat: FlatKernel, values) -> list:
    """`flat_values` from Python: the arguments of `flat.fn` for the kernel's `values`."""
    out = []
    for i, v in enumerate(values):
        if i in flat.instance_types:
            out += python_fields(v, flat.instance_types[i])
        else:
            out.append(v)
    return out


def python_instances(flat: FlatKernel, entries, primals) -> tuple:
    """`instance_of` from Python: one value per kernel argument from `entries` (one per
    argument of `flat.fn`, None where none), the entries of an instance's fields made an
    instance of its class (zero, or the primal's, where an entry is None)."""
    out = []
    for i, primal in enumerate(primals):
        group = flat.groups[i]
        if i not in flat.instance_types:
            out.append(entries[group])
            continue
        if all(entries[k] is None for k in group):
            out.append(None)  # no field carries a derivative: as for an int argument
            continue
        t = flat.instance_types[i]
        fields = [entries[k] if entries[k] is not None else _python_zero(value)
                  for k, value in zip(group, python_fields(primal, t))]
        out.append(maker_for(t).make(tuple(fields)))
    return tuple(out)


def _python_zero(field):
    if isinstance(field, (bool, np.bool_)):
        return False
    if isinstance(field, (int, np.integer)):
        return 0
    if isinstance(field, np.ndarray) and field.dtype.kind in "iub":
        return np.zeros_like(field)
    return field


def around_flat(b: Builder, inner) -> object:
    """The function `b` builds, with its call of the flat kernel's dispatcher `inner` inlined
    (one compiled function; the dispatcher itself is never compiled for this)."""
    return inline_njit_calls(b.function, keep=lambda callee: callee is not inner,
                             context=PASS_CONTEXT)


def python_fields(value, instance_type) -> list:
    """The fields of a jitclass instance or structref proxy `value`, read from Python."""
    if isinstance(instance_type, types.ClassInstanceType):
        return [getattr(value, name) for name in instance_type.struct]
    return list(reader_for(instance_type)(value))


def instance_name(t) -> str:
    if isinstance(t, types.ClassInstanceType):
        return t.class_type.class_name
    return class_name(t)
