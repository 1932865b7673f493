"""`@jitclass` instances built in a kernel: `Box(a, b)` captured as two calls AD passes see
through.

numba runs a jitclass constructor as "allocate a zeroed instance, call `__init__(self, a, b)`",
and `__init__` sets fields one attribute assignment at a time: state moonlite cannot give
derivatives. When `__init__` only assigns and reads fields of `self`, its body is a function of
its arguments that computes the final field values. Capture rewrites `Box(a, b)` into

    fields = Box.__init__ as a function (a, b) -> (value of each field)   # an njit function
    obj = make_Box(fields)                                                # sets the fields

The first is rewritten from `__init__`'s source: `self.x` becomes a local, every `return` returns
the tuple of fields (scalar fields start at zero, as numba's allocation leaves them). Its body is
ordinary code, differentiated like any njit helper. The second allocates the instance without
`__init__` and sets its fields from the tuple (`rules/jitclasses.py`). The inliner then reads
`obj.x` straight out of `fields` (`ad/instances.py`), so once every call taking `obj` is inlined
no instance carries a derivative: reverse mode inlines every njit call, forward mode the calls
that take or return an instance. An instance that still carries a derivative (returned, kept in
a tuple carried around a loop) is refused (`ad/refusals.py`).

A structref proxy's constructor from `structref.define_proxy`, `State(x, v)`, is `make((x, v))`
(`structref_fields`): it sets one field from each argument.

A constructor whose `__init__` does anything else with `self` (calls a method, passes `self`
on, reads an array field before setting it) keeps numba's own constructor call: fine for
instances built from constants, refused when a value being differentiated reaches it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from typing import Optional

from .. import _numba as nb
from ..rules.jitclasses import Constructor, register_constructor

nbt = nb.types


@functools.lru_cache(maxsize=None)  # the answer, None too: each class is read once
def constructor_of(instance_type) -> Optional[Constructor]:
    """The two functions `Box(...)` is captured as, for numba's `ClassInstanceType`, or None if
    `__init__` does more than set fields of `self`."""
    init = instance_type.jit_methods.get("__init__")
    py = getattr(init, "py_func", None)
    if py is None or py.__code__.co_freevars:
        return None
    try:
        fields = _fields_function(py, tuple(instance_type.struct), instance_type.struct)
    except _NotRewritable:
        return None
    return register_constructor(fields, instance_type)


def structref_fields(function_type) -> Optional[tuple]:
    """The parameters of the constructor `structref.define_proxy` gives a proxy class (numba's
    `Function` type of a call of it), which sets one field from each, in order; else None (a
    constructor the user wrote, which keeps its own call)."""
    for template in getattr(function_type, "templates", ()):
        ctor = getattr(template, "_overload_func", None)
        if getattr(ctor, "__name__", None) == "ctor" \
                and getattr(ctor, "__globals__", {}).get("new") is nb.structref.new:
            return tuple(inspect.signature(ctor).parameters)
    return None


class _NotRewritable(Exception):
    pass


def _fields_function(init, names: tuple, struct: dict):
    """`init` (the Python `__init__`) rewritten into an njit function of its arguments but
    `self` that returns the tuple of field values."""
    try:
        source = textwrap.dedent(inspect.getsource(init))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        raise _NotRewritable from None
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef) or fdef.decorator_list or not fdef.args.args:
        raise _NotRewritable
    self_name = fdef.args.args[0].arg
    fdef.args.args = fdef.args.args[1:]
    result = ast.Tuple([ast.Name(_local(n), ast.Load()) for n in names], ast.Load())
    fdef.body = _FieldsAsLocals(self_name, set(names), result).visit_body(fdef.body)
    fdef.body = _zero_scalars(names, struct) + fdef.body + [ast.Return(result)]
    fdef.name = f"{init.__name__}_fields"
    ast.fix_missing_locations(tree)
    ast.increment_lineno(tree, init.__code__.co_firstlineno - 1)
    scope: dict = {}
    exec(compile(tree, init.__code__.co_filename, "exec"), init.__globals__, scope)
    fn = scope[fdef.name]
    fn.__qualname__ = init.__qualname__  # messages name the constructor as the user wrote it
    return nb.njit(cache=False)(fn)


def _local(name: str) -> str:
    return f"self__{name}"


class _FieldsAsLocals(ast.NodeTransformer):
    def __init__(self, self_name: str, names: set, result: ast.expr):
        self.self_name, self.names, self.result = self_name, names, result

    def visit_body(self, body: list) -> list:
        return [self.visit(stmt) for stmt in body]

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.self_name:
            if node.attr not in self.names:
                raise _NotRewritable  # a method, or a property
            return ast.copy_location(ast.Name(_local(node.attr), node.ctx), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == self.self_name:
            raise _NotRewritable  # self passed on, or rebound
        return node

    def visit_Return(self, node):
        if node.value is not None:
            raise _NotRewritable
        return ast.copy_location(ast.Return(self.result), node)

    def visit_FunctionDef(self, node):
        raise _NotRewritable  # a closure could see self

    visit_Lambda = visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef


def _zero_scalars(names: tuple, struct: dict) -> list:
    """numba allocates an instance zeroed: scalar fields start at 0 (the type of the field
    follows from the assignments; `make` converts to the declared type). Array fields have no
    such value: reading one before setting it fails to type, and the constructor stays numba's."""
    zeros = []
    for name in names:
        t = struct[name]
        if isinstance(t, nbt.Boolean):
            value = ast.Constant(False)
        elif isinstance(t, nbt.Integer):
            value = ast.Constant(0)
        elif isinstance(t, nbt.Float):
            value = ast.Constant(0.0)
        else:
            continue
        zeros.append(ast.Assign([ast.Name(_local(name), ast.Store())], value))
    return zeros
