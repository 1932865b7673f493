"""`jvp` and `vjp` of a kernel returning a `@jitclass` or structref instance (issue #20).

`step(state, dt)` returning a new `State(x, v)` is differentiated through its *output-flat*
form, the kernel with the fields of what it returns read out,

    fields(*args) = (r.x, r.v)  where r = step(*args)

an ordinary kernel returning a tuple (the inliner reads `r.x` of an instance built in the
kernel straight out of its constructor's arguments, `ad/instances.py`, and a field the kernel
wrote is a local variable by then, `ad/instance_fields.py`). The API then builds instances:
`jvp` returns the output and its tangent as instances of the class (fields that carry no
derivative, ints, bools and their arrays, zero in the tangent; strings the output's), and
`vjp`'s pullback takes an instance of the class as the cotangent (its float fields, and float
arrays, are the tuple's cotangents). A plain tuple holding instances (`return state, loss`)
is read out the same way, its instances' fields in place of each, and made again. Inside njit
code `jvp` does the same through compiled functions generated per output type
(`njit_rebuilders`); `vjp` there is refused, as for any tuple output.
"""

from __future__ import annotations

import inspect
from typing import Optional

import numpy as np

from . import _numba as nb
from .api import instance_type_of
from .api_instances import flattenable, instance_name, njit_wrapper, python_fields
from .driver import api_cached
from .errors import ArgumentError
from .rules.jitclasses import fields_of, is_numba_instance_type, maker_for


def returned_instance_type(f, primals) -> Optional[object]:
    """The numba type of what `f(*primals)` returns when it is a jitclass or structref
    instance, or a plain tuple holding one (`return state, loss`), else None (another output,
    an instance with a field that hides floats, or `f` cannot be typed for them: the caller's
    error stands)."""
    try:
        signature = tuple(f.typeof_pyval(p) for p in primals)
    except Exception:  # numba's own error is the one to show: the caller re-raises its own
        return None
    return returned_instance_type_at(f, signature)


def returned_instance_type_at(f, argtypes: tuple) -> Optional[object]:
    """`returned_instance_type` for numba argument types (`jvp` inside njit code)."""
    try:
        f.compile(argtypes)
        out = f.overloads[argtypes].signature.return_type
    except Exception:
        return None
    instances = [t for t, _ in _entries(out) if t is not None]
    return out if instances and all(map(flattenable, instances)) else None


def _entries(out_type) -> list:
    """[(instance type or None, how many values of the output-flat tuple)] for each entry of
    the output (the output itself for an instance); [] for an output holding none."""
    if is_numba_instance_type(out_type):
        return [(out_type, len(fields_of(out_type)))]
    if not isinstance(out_type, nb.types.BaseTuple) \
            or isinstance(out_type, nb.types.BaseNamedTuple):
        return []
    return [(t, len(fields_of(t))) if is_numba_instance_type(t) else (None, 1)
            for t in out_type.types]


def fields_kernel(f, out_type):
    """The output-flat form of `f` (see the module docstring), one per kernel and output."""
    return api_cached(f, ("returned fields", out_type),
                      lambda: _build_fields_kernel(f, out_type))


def _build_fields_kernel(f, out_type):
    if is_numba_instance_type(out_type):
        reads = "".join(f"r.{name}, " for name in fields_of(out_type))
    else:
        reads = "".join("".join(f"r[{k}].{name}, " for name in fields_of(t)) if t is not None
                        else f"r[{k}], " for k, (t, _) in enumerate(_entries(out_type)))
    name = f.py_func.__name__
    params, args, scope = _same_parameters(f)
    source = f"def {name}({params}):\n    r = kernel({args})\n    return ({reads})\n"
    scope.update(kernel=f, __name__=__name__)
    return njit_wrapper(f, source, "with the fields of its output read out",
                        f"{f.py_func.__qualname__}.output_fields", scope)


def _same_parameters(f) -> tuple:
    """(parameters, arguments, scope) of source for a function taking `f`'s parameters and
    passing them on: named as `f` names them, defaults kept (`scope` holds their values), so
    that the vjp dispatcher, which takes named parameters, can be built for it; `*args` for a
    kernel taking more than named positional parameters."""
    parameters = inspect.signature(f.py_func).parameters.values()
    if any(p.kind != p.POSITIONAL_OR_KEYWORD for p in parameters):
        return "*args", "*args", {}
    scope, params = {}, []
    for k, p in enumerate(parameters):
        if p.default is p.empty:
            params.append(p.name)
        else:
            scope[f"_default{k}"] = p.default
            params.append(f"{p.name}=_default{k}")
    return ", ".join(params), ", ".join(p.name for p in parameters), scope


def _rebuilt(out_type, values: tuple, tangents=None):
    """The output from the values of the output-flat tuple (instances made again, other
    entries as they are), or with `tangents` (jvp's, entry by entry) the output's tangent."""
    parts, k = [], 0
    for t, n in _entries(out_type):
        if t is None:
            parts.append(values[k] if tangents is None else tangents[k])
        elif tangents is None:
            parts.append(maker_for(t).make(tuple(values[k:k + n])))
        else:
            parts.append(maker_for(t).make(tuple(map(_tangent_field, values[k:k + n],
                                                     tangents[k:k + n]))))
        k += n
    return parts[0] if is_numba_instance_type(out_type) else tuple(parts)


def instance_output_jvp(jvp, f, out_type, primals, tangents):
    """`jvp(f, primals, tangents)` through `f`'s output-flat form: the output and its tangent,
    instances where the output has them (`jvp`: the API's, passed by it)."""
    out, dout = jvp(fields_kernel(f, out_type), primals, tangents)
    dout = (None,) * len(out) if dout is None else dout
    return _rebuilt(out_type, tuple(out)), _rebuilt(out_type, tuple(out), tuple(dout))


def instance_output_vjp(vjp, f, out_type, primals):
    """`vjp(f, *primals)` through `f`'s output-flat form: the output with its instances, the
    pullback taking instances of their classes in the cotangent (`vjp`: the API's)."""
    out, pull = vjp(fields_kernel(f, out_type), *primals)
    qualname = f.py_func.__qualname__

    def pullback(dout):
        return pull(_flat_cotangent(out_type, dout, f"vjp({qualname}) pullback"))

    pullback.arguments = pull.arguments
    return _rebuilt(out_type, tuple(out)), pullback


def _flat_cotangent(out_type, dout, where: str) -> tuple:
    """The cotangent of the output-flat tuple: an instance's fields for an instance (its
    float fields and float arrays; None for the rest), other entries as given."""
    if is_numba_instance_type(out_type):
        return tuple(map(_cotangent_field, _instance_fields(out_type, dout, where)))
    entries = _entries(out_type)
    if not isinstance(dout, tuple) or len(dout) != len(entries):
        raise ArgumentError(f"{where}: the output is a tuple of {len(entries)} entries: its "
                            f"cotangent must be a tuple of {len(entries)} entries, got "
                            f"{type(dout).__name__}")
    flat = []
    for (t, _), d in zip(entries, dout):
        if t is None:
            flat.append(d)
        else:
            flat += map(_cotangent_field, _instance_fields(t, d, where))
    return tuple(flat)


def _instance_fields(instance_type, dout, where: str) -> list:
    if instance_type_of(dout) != instance_type:
        raise ArgumentError(f"{where}: the output is a {instance_name(instance_type)} "
                            f"instance: its cotangent must be an instance of the same class "
                            f"(its float fields hold the cotangent), got {type(dout).__name__}")
    return python_fields(dout, instance_type)


def njit_rebuilders(out_type, flat_types):
    """`(output(values), tangent(values, tangents))`: njit functions making the output and
    its tangent, as `_rebuilt` does, from what the jvp of the output-flat form gives inside
    njit code (`flat_types`: its numba types, the values' and the tangents')."""
    value_types, tangent_types = flat_types
    if isinstance(tangent_types, nb.types.NoneType):  # (no tangent reaches the output)
        tangent_types = (tangent_types,) * len(value_types)
    scope = {"np": np, "__name__": __name__}
    outputs, tangents, k = [], [], 0
    for t, n in _entries(out_type):
        if t is None:
            outputs.append(f"values[{k}]")
            tangents.append(f"tangents[{k}]")
        else:
            scope[f"make{k}"] = maker_for(t).make
            outputs.append(f"make{k}(({''.join(f'values[{k + i}], ' for i in range(n))}))")
            fields = (_tangent_source(f"values[{k + i}]", value_types[k + i],
                                      f"tangents[{k + i}]", tangent_types[k + i])
                      for i in range(n))
            tangents.append(f"make{k}(({''.join(f'{field}, ' for field in fields)}))")
        k += n
    if is_numba_instance_type(out_type):
        output, tangent = outputs[0], tangents[0]
    else:
        output, tangent = (f"({''.join(f'{e}, ' for e in parts)})"
                           for parts in (outputs, tangents))
    source = (f"def output(values):\n    return {output}\n"
              f"def tangent(values, tangents):\n    return {tangent}\n")
    exec(compile(source, f"<moonlite: {out_type} made from its fields>", "exec"), scope)
    return nb.njit(scope["output"]), nb.njit(scope["tangent"])


def _tangent_source(value: str, value_type, tangent: str, tangent_type) -> str:
    """Source of a field of the tangent instance inside njit code (`_tangent_field`)."""
    none = isinstance(tangent_type, nb.types.NoneType)
    if isinstance(value_type, nb.types.BaseTuple):
        entries = (_tangent_source(f"{value}[{i}]", t, tangent if none else f"{tangent}[{i}]",
                                   tangent_type if none else tangent_type[i])
                   for i, t in enumerate(value_type))
        return f"({''.join(f'{e}, ' for e in entries)})"
    if isinstance(value_type, nb.types.Array):
        floats = isinstance(value_type.dtype, nb.types.Float)
        return tangent if floats and not none else f"np.zeros_like({value})"
    if isinstance(value_type, nb.types.Boolean):
        return "False"
    if isinstance(value_type, nb.types.Integer):
        return "0"
    if isinstance(value_type, nb.types.Float):
        return "0.0" if none else tangent
    return value  # (a string: the output's own)


def _tangent_field(value, tangent):
    """A field of the tangent instance: the tangent jvp gave the field `value` (zero where
    it gave None), or for a field that carries none, zero (numbers and their arrays) or the
    output's own (a string)."""
    if isinstance(value, tuple):
        tangent = (None,) * len(value) if tangent is None else tangent
        return tuple(map(_tangent_field, value, tangent))
    if isinstance(value, np.ndarray):
        return np.zeros_like(value) if tangent is None or value.dtype.kind != "f" else tangent
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (float, np.floating, int, np.integer)):
        return type(value)(0) if tangent is None else tangent
    return value


def _cotangent_field(value):
    """The cotangent of a field, from the field of the cotangent instance: floats and float
    arrays (tuples entry by entry); None for the rest (ints, bools, strings)."""
    if isinstance(value, tuple):
        return tuple(map(_cotangent_field, value))
    if isinstance(value, np.ndarray):
        return value if value.dtype.kind == "f" else None
    return value if isinstance(value, (float, np.floating)) else None
