"""Jitclass instances built from the tuple of their fields: the `make` function capture calls
for `Box(a, b)` (after `capture/jitclasses.py` rewrote `__init__` into the function computing
that tuple), and what the AD passes ask of it (`ad/instances.py` reads fields through it).

`make(fields)` allocates a zeroed instance without running `__init__` (an intrinsic: numba's
`jitclass/base.py: ctor_impl` less the call) and sets each field from the tuple. It is pure, so
an instance whose every field read was read through is dropped. It has no derivative rule: an
instance left carrying a derivative is refused (`ad/refusals.py`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Optional

from .. import _numba as nb
from ..ir.traits import Trait
from .registry import register


class Constructor(NamedTuple):
    fields: object  # njit: the constructor's arguments -> tuple of the field values
    make: object  # njit: that tuple -> a new instance holding it
    names: tuple  # field names, in the tuple's order


_MAKERS: dict = {}  # id of a make function -> its Constructor


def register_constructor(fields, instance_type) -> Constructor:
    """The Constructor of `instance_type` (numba's `ClassInstanceType`) whose fields function
    is `fields`, with a new `make` function."""
    names = tuple(instance_type.struct)
    found = Constructor(fields, _make_function(instance_type, names), names)
    _MAKERS[id(found.make)] = found
    return found


@functools.lru_cache(maxsize=None)  # one make function per class
def maker_for(instance_type) -> Constructor:
    """A Constructor of `instance_type` with only its `make` function (no `fields`): what
    derivative code uses to build an instance from the tuple of its fields (the gradient of a
    jitclass argument, `api_instances.py`)."""
    names = tuple(instance_type.struct)
    found = Constructor(None, _make_function(instance_type, names), names)
    _MAKERS[id(found.make)] = found
    return found


def maker(callee) -> Optional[Constructor]:
    """The Constructor whose `make` function `callee` is, or None."""
    found = _MAKERS.get(id(callee))
    return found if found is not None and found.make is callee else None


def field_index(constructor: Constructor, name: str) -> Optional[int]:
    return constructor.names.index(name) if name in constructor.names else None


def is_instance_type(t) -> bool:
    """True for the moonlite type of a jitclass instance."""
    return isinstance(getattr(t, "numba_type", None), nb.types.ClassInstanceType)


def takes_or_returns_instance(op) -> bool:
    """Forward mode inlines such calls, so that instances built in the kernel are read through
    (a method of an instance, a helper building one)."""
    values = list(op.operands) + ([op.result] if op.result is not None else [])
    return any(is_instance_type(v.type) for v in values)


def _make_function(instance_type, names: tuple):
    lines = ["def make(fields):", "    obj = new_instance()"]
    lines += [f"    obj.{name} = fields[{k}]" for k, name in enumerate(names)]
    lines += ["    return obj"]
    scope = {"new_instance": _allocator(instance_type), "__name__": __name__}
    exec(compile("\n".join(lines) + "\n", f"<moonlite make {instance_type.name}>", "exec"),
         scope)
    make = nb.njit(cache=False)(scope["make"])
    # no effect: an unused instance is dropped (after its fields were read through)
    register(make, traits=Trait.PURE)
    return make


def _allocator(instance_type):
    """An intrinsic `new_instance()` returning a zeroed instance of `instance_type` without
    running `__init__`."""

    @nb.intrinsic
    def new_instance(typingctx):
        def codegen(context, builder, signature, args):
            alloc_type = context.get_data_type(instance_type.get_data_type())
            size = context.get_constant(nb.types.uintp, context.get_abi_sizeof(alloc_type))
            meminfo = context.nrt.meminfo_alloc_dtor(
                builder, size, nb.jitclass_dtor(context, builder.module, instance_type))
            data = builder.bitcast(context.nrt.meminfo_data(builder, meminfo),
                                   alloc_type.as_pointer())
            builder.store(nb.cgutils.get_null_value(alloc_type), data)
            instance = context.make_helper(builder, instance_type)
            instance.meminfo = meminfo
            instance.data = data
            return instance._getvalue()

        return instance_type(), codegen

    return new_instance
