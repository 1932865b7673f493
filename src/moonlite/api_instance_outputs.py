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
arrays, are the tuple's cotangents). From Python only: inside njit code such kernels stay
refused (numba types the call before moonlite could rewrite it).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import _numba as nb
from .api import instance_type_of
from .api_instances import flattenable, instance_name, python_fields
from .driver import api_cached
from .errors import ArgumentError
from .rules.jitclasses import fields_of, is_numba_instance_type, maker_for


def returned_instance_type(f, primals) -> Optional[object]:
    """The numba type of the jitclass or structref instance `f(*primals)` returns, or None
    (another output, an instance with a field that hides floats, or `f` cannot be typed for
    them: the caller's error stands)."""
    try:
        signature = tuple(f.typeof_pyval(p) for p in primals)
        f.compile(signature)
        out = f.overloads[signature].signature.return_type
    except Exception:  # numba's own error is the one to show: the caller re-raises its own
        return None
    return out if is_numba_instance_type(out) and flattenable(out) else None


def fields_kernel(f, instance_type):
    """The output-flat form of `f` (see the module docstring), one per kernel and class."""
    return api_cached(f, ("returned fields", instance_type),
                      lambda: _build_fields_kernel(f, instance_type))


def _build_fields_kernel(f, instance_type):
    names = list(fields_of(instance_type))
    reads = "".join(f"r.{name}, " for name in names)
    name = f.py_func.__name__
    source = (f"def {name}(*args):\n    r = kernel(*args)\n    return ({reads})\n")
    scope = {"kernel": f, "__name__": __name__}
    exec(compile(source, f"<moonlite: {name} with the fields of its output read out>",
                 "exec"), scope)
    scope[name].__qualname__ = f"{f.py_func.__qualname__}.output_fields"
    options = f.targetoptions
    return nb.njit(error_model=options.get("error_model", "python"),
                   boundscheck=bool(options.get("boundscheck")))(scope[name])


def instance_output_jvp(jvp, f, instance_type, primals, tangents):
    """`jvp(f, primals, tangents)` through `f`'s output-flat form: `(output, tangent)`, two
    instances (`jvp`: the API's, passed by it)."""
    out, dout = jvp(fields_kernel(f, instance_type), primals, tangents)
    dout = (None,) * len(out) if dout is None else dout
    make = maker_for(instance_type).make
    return make(tuple(out)), make(tuple(map(_tangent_field, out, dout)))


def instance_output_vjp(vjp, f, instance_type, primals):
    """`vjp(f, *primals)` through `f`'s output-flat form: the output an instance, the pullback
    taking an instance of its class as the cotangent (`vjp`: the API's, passed by it)."""
    out, pull = vjp(fields_kernel(f, instance_type), *primals)
    qualname = f.py_func.__qualname__

    def pullback(dout):
        if instance_type_of(dout) != instance_type:
            raise ArgumentError(f"vjp({qualname}) pullback: the output is a "
                                f"{instance_name(instance_type)} instance: its cotangent must "
                                f"be an instance of the same class (its float fields hold "
                                f"the cotangent), got {type(dout).__name__}")
        return pull(tuple(map(_cotangent_field, python_fields(dout, instance_type))))

    pullback.arguments = pull.arguments
    return maker_for(instance_type).make(tuple(out)), pullback


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
