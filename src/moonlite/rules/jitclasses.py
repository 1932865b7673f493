"""Jitclass instances built from the tuple of their fields: the `make` function capture calls
for `Box(a, b)` (after `capture/jitclasses.py` rewrote `__init__` into the function computing
that tuple), and what the AD passes ask of it (`ad/instances.py` reads fields through it).
Instances of a numba `StructRef` type are built and read the same way (`State(x, v)` of a
`structref.define_proxy` class: its fields are its arguments), and both kinds have their
fields written by `field_store` (`ad/instance_fields.py`).

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
from ..ir.types import ArrayType, TupleType
from .define import njit_from_source, no_adjoint
from .operands import reads_nothing
from .registry import register


class Constructor(NamedTuple):
    fields: object  # njit: the constructor's arguments -> tuple of the field values
    make: object  # njit: that tuple -> a new instance holding it
    names: tuple  # field names, in the tuple's order


_MAKERS: dict = {}  # id of a make function -> its Constructor


def register_constructor(fields, instance_type) -> Constructor:
    """The Constructor of `instance_type` (numba's `ClassInstanceType`, or a `StructRef`)
    whose fields function is `fields`, with a new `make` function."""
    names = tuple(fields_of(instance_type))
    found = Constructor(fields, _make_function(instance_type, names), names)
    _MAKERS[id(found.make)] = found
    return found


@functools.lru_cache(maxsize=None)  # one make function per class
def maker_for(instance_type) -> Constructor:
    """A Constructor of `instance_type` with only its `make` function (no `fields`): what
    derivative code uses to build an instance from the tuple of its fields (the gradient of a
    jitclass argument, `api_instances.py`)."""
    names = tuple(fields_of(instance_type))
    found = Constructor(None, _make_function(instance_type, names), names)
    _MAKERS[id(found.make)] = found
    return found


@functools.lru_cache(maxsize=None)  # one store function per class and field
def field_store(instance_type, name: str):
    """The njit function `store_<name>(obj, value)` doing `obj.name = value`: what capture
    calls for an attribute assignment to a jitclass or structref instance. It has no rules and
    is never inlined: the inliner turns the fields an instance's stores write into local
    variables (`ad/instance_fields.py`), or refuses."""
    store = _store_function(instance_type, name, "store")
    _STORES[id(store)] = (store, instance_type, name)
    return store


@functools.lru_cache(maxsize=None)
def field_store_back(instance_type, name: str):
    """`store_back_<name>(obj, value)`, the same store, as `ad/instance_fields.py` emits it
    just before a return: a field of an instance the code was given, written back with its
    final value. Nothing reads it after that, so no derivative flows through it (like a write
    into an argument array, whose derivative is no output either): its forward rule gives no
    tangent, its adjoint sends nothing back."""
    store = _store_function(instance_type, name, "store_back")
    register(store, jvp=_no_tangent, adjoint=no_adjoint, reads=reads_nothing, keywords=())
    return store


@functools.lru_cache(maxsize=None)
def field_load(instance_type, name: str):
    """`load_<name>(obj) -> obj.name`, as `ad/instance_fields.py` emits it where an instance
    the code was given first has a field read that it later stores back. Not pure, unlike a
    field read (`GetAttr`): the pullback must not read the field again, after the store back
    changed it (reverse mode keeps the value read instead). The instance is held fixed, so the
    value carries no derivative."""
    load = njit_from_source(f"def load_{name}(obj):\n    return obj.{name}\n", f"load_{name}",
                            f"load {class_name(instance_type)}.{name}", __name__=__name__)
    register(load, jvp=_no_tangent, adjoint=no_adjoint, reads=reads_nothing, keywords=())
    return load


def _store_function(instance_type, name: str, what: str):
    return njit_from_source(f"def {what}_{name}(obj, value):\n    obj.{name} = value\n",
                            f"{what}_{name}", f"{what} {class_name(instance_type)}.{name}",
                            __name__=__name__)


def _no_tangent(b, primals, tangents, kwargs):
    return None


_STORES: dict = {}  # id of a store function -> (it, the instance type, the field)


def stored_field(callee) -> Optional[str]:
    """The field `callee` writes if it is a `field_store` function, else None."""
    found = _STORES.get(id(callee))
    return found[2] if found is not None and found[0] is callee else None


def maker(callee) -> Optional[Constructor]:
    """The Constructor whose `make` function `callee` is, or None."""
    found = _MAKERS.get(id(callee))
    return found if found is not None and found.make is callee else None


def field_index(constructor: Constructor, name: str) -> Optional[int]:
    return constructor.names.index(name) if name in constructor.names else None


def is_jitclass(fn) -> bool:
    """True for a `@jitclass` class (calling it builds an instance)."""
    return isinstance(fn, nb.JitClassType)


def is_instance_type(t) -> bool:
    """True for the moonlite type of a jitclass or structref instance."""
    return is_numba_instance_type(getattr(t, "numba_type", None))


def is_numba_instance_type(t) -> bool:
    return isinstance(t, (nb.types.ClassInstanceType, nb.types.StructRef))


def fields_of(instance_type) -> dict:
    """{field name: numba type} of a jitclass instance type or a structref type, in order."""
    if isinstance(instance_type, nb.types.StructRef):
        return instance_type.field_dict
    return instance_type.struct


def class_name(instance_type) -> str:
    """The class as the user wrote it: `Box` of a jitclass, `StateType` of a structref."""
    return getattr(instance_type, "classname", None) or type(instance_type).__name__


def takes_or_returns_instance(op) -> bool:
    """Forward mode inlines such calls, so that instances built in the kernel are read through
    (a method of an instance, a helper building one, a helper given a tuple holding one)."""
    values = list(op.operands) + ([op.result] if op.result is not None else [])
    return any(_holds_instance(v.type) for v in values)


def _holds_instance(t) -> bool:
    if isinstance(t, TupleType):
        return any(_holds_instance(e) for e in t.elements)
    return is_instance_type(t)


def _make_function(instance_type, names: tuple):
    lines = ["def make(fields):", "    obj = new_instance()"]
    if isinstance(instance_type, nb.types.StructRef):
        lines[1] = "    obj = new_instance(instance_type)"
    lines += [f"    obj.{name} = fields[{k}]" for k, name in enumerate(names)]
    lines += ["    return obj"]
    allocate = nb.structref.new if isinstance(instance_type, nb.types.StructRef) \
        else _allocator(instance_type)
    make = njit_from_source("\n".join(lines) + "\n", "make", f"make {instance_type.name}",
                            new_instance=allocate, instance_type=instance_type,
                            __name__=__name__)
    # no effect: an unused instance is dropped (after its fields were read through)
    register(make, traits=Trait.PURE)
    return make


@functools.lru_cache(maxsize=None)
def copier_for(instance_type):
    """An njit function returning a new instance of `instance_type` holding the same field
    values, arrays copied: what the API and the rule checker give a kernel that may write
    into an instance (structrefs: no Python code reads their fields)."""
    fields = fields_of(instance_type)
    reads = [f"obj.{name}.copy()" if isinstance(t, nb.types.Array) else f"obj.{name}"
             for name, t in fields.items()]
    return njit_from_source(f"def copy(obj):\n    return make(({', '.join(reads)},))\n", "copy",
                            f"copy {class_name(instance_type)}",
                            make=maker_for(instance_type).make, __name__=__name__)


@functools.lru_cache(maxsize=None)
def reader_for(instance_type):
    """An njit function returning the tuple of an instance's fields, in declaration order: how
    Python reads a structref argument's fields (a proxy class need not define properties)."""
    reads = [f"obj.{name}" for name in fields_of(instance_type)]
    return njit_from_source(f"def read(obj):\n    return ({', '.join(reads)},)\n", "read",
                            f"read {class_name(instance_type)}", __name__=__name__)


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


# --- an array set into a field declared of any layout ----------------------------------------

def _same_array(context, builder, signature, args):
    """The codegen of an intrinsic that only changes an array's layout in its type (numba's
    arrays of every layout share one data model)."""
    return nb.impl_ret_borrowed(context, builder, signature.return_type, args[0])


@nb.intrinsic
def _as_any_layout(typingctx, array):
    if not isinstance(array, nb.types.Array):
        return None
    result = nb.types.Array(array.dtype, array.ndim, "A", readonly=not array.mutable)
    return result(array), _same_array


any_layout = njit_from_source("def any_layout(a):\n    return as_any_layout(a)\n",
                              "any_layout", "any layout", as_any_layout=_as_any_layout)
any_layout.__doc__ = """`any_layout(a)`: the array `a` itself, typed of layout "A": a C-ordered
array read back out of a jitclass field declared `float64[:]` where an op already typed the
field's read as numba does (a tuple of fields, `ad/instances.py: as_field`). Linear and a view
of `a`: its tangent is `any_layout` of a's, its shadow the same view of a's shadow."""


def _any_layout_jvp(b, primals, tangents, kwargs):
    if tangents[0] is None:
        return None
    t = tangents[0].type
    return b.call(any_layout, [tangents[0]], type=ArrayType(t.dtype, t.ndim, "A", False))


register(any_layout, jvp=_any_layout_jvp, adjoint=no_adjoint, reads=reads_nothing,
         keywords=(), traits=Trait.AXES_VIEW | Trait.VIEW)
