"""Fields of jitclass instances that the code writes, made local variables (issue #20).

Capture turns `obj.x = v` (in the kernel, or in a method setting `self.x`) into a call of
`field_store(Box, 'x')(obj, v)` (`rules/jitclasses.py`). A field is memory: reads of it are not
pure any more, and no AD pass follows a derivative through it. Once every call taking `obj` is
inlined (reverse mode inlines every call, forward mode those taking an instance), each store
and each read of a written field is on one SSA value, `obj`: here the field becomes a local
variable, its stores stores of the local and its reads loads, and `ir/ssa.py` makes SSA values
and phis of them. What is left is ordinary code every mode differentiates, with the field's
value at each point: `p.step()` in a loop is a loop carrying `p.v` and `p.t`.

- An instance the code builds (`make(fields)`, `capture/jitclasses.py`) starts from its fields
  tuple and needs nothing else: nobody else sees it.
- An instance the code is given (an argument, or read out of one at the start) starts from
  its fields as it arrives (read once, by a call the pullback does not repeat), and each written
  field is stored back into it before every return, as numba would leave it. No derivative
  flows through the value stored back, as through a write into an argument array: it is not
  an output (`rules/jitclasses.py: field_store_back`).

Refused (`UnsupportedError`), because a write through one name would be missed by a read
through another: an instance with a written field that is also used other than by reading
fields and having fields written (passed to a call that is not inlined, kept in a tuple,
chosen by a branch, returned); an instance with a written field not built here (given to
the code, or chosen by a branch) when another instance of its class that may be the same
object is seen too (given, chosen, or built and then passed on); and one read out of another
value (a tuple, a field) after the function's start, where a loop would read it again before
its writes reach it.
"""

from __future__ import annotations

from ..errors import UnsupportedError
from ..ir import ops
from ..ir.builder import Builder
from ..ir.core import Argument, Function
from ..ir.ssa import promote_locals
from ..ir.types import from_numba, none
from ..rules.jitclasses import (class_name, field_index, field_load, field_store_back,
                               fields_of, is_jitclass, maker, stored_field)
from .instances import as_field
from ..ir.readonly import value_users

_HINT = ("read and write fields of an instance the kernel builds or is given, and call its "
         "methods; do not pass it to functions with custom rules, keep it in a tuple, choose it "
         "by a branch or return it")


def writes_instance_fields(fn: Function) -> bool:
    return any(_is_store(op) for op in fn.ops())


def promote_instance_fields(fn: Function, b: Builder, mode: str) -> Function:
    """In place: the written fields of jitclass instances made local variables, then SSA
    values (see the module docstring). `b`: a Builder on `fn`."""
    stores = [op for op in fn.ops() if _is_store(op)]
    roots = list(dict.fromkeys(op.operands[0] for op in stores))
    users = value_users(fn)
    variables, loaded = [], {}
    for root in roots:
        _check_alone(fn, root, users, mode)
        variables += _promote(fn, b, root, [op for op, _ in users[root]], loaded)
    for op in fn.ops():
        op.operands = tuple(loaded.get(v, v) for v in op.operands)
    return promote_locals(fn, variables)


def _is_store(op) -> bool:
    return isinstance(op, ops.Call) and stored_field(op.callee) is not None


def _is_built(root) -> bool:
    """Built by capture's `make(fields)`: its fields are in the tuple."""
    op = getattr(root, "op", None)
    return isinstance(op, ops.Call) and maker(op.callee) is not None


def _is_new(root) -> bool:
    """A new instance nobody else sees: built by `make`, or by numba's constructor (kept for
    an `__init__` that does more than set fields: `capture/jitclasses.py`)."""
    op = getattr(root, "op", None)
    return _is_built(root) or (isinstance(op, ops.Call) and is_jitclass(op.callee))


def _check_alone(fn: Function, root, users: dict, mode: str) -> None:
    """Refuse `root` unless every use reads or writes one of its fields, and (given to the
    code, or chosen among instances) no other instance of its class may be the same object."""
    for use, position in users.get(root, ()):
        if not _reads_or_writes_fields(use, position):
            _refuse(fn, root, f"also {_how_used(use)}", use.loc, mode)
    if _is_new(root):
        return
    if isinstance(getattr(root, "op", None), ops.Phi):
        _refuse(fn, root, "chosen by a branch or carried around a loop (one of several "
                "instances)", _first_store(root, users).loc, mode)
    if not isinstance(root, Argument) and root.op.block is not fn.entry:
        # its fields are read where it is defined: in a loop, again after each iteration's
        # stores (which reach the instance only when the function returns)
        _refuse(fn, root, "that the function reads out of another value after its start (in "
                "a loop or a branch)", _first_store(root, users).loc, mode)
    for other in _values(fn):
        if other is not root and other.type == root.type and not (
                _is_new(other) and all(_reads_or_writes_fields(use, position)
                                       for use, position in users.get(other, ()))):
            _refuse(fn, root, "that may be the same object as another instance of its class "
                    "the function sees", _first_store(root, users).loc, mode)


def _reads_or_writes_fields(use, position: int) -> bool:
    """An op reading a field of its operand `position`, or a store into one (not of it)."""
    return isinstance(use, ops.GetAttr) or (_is_store(use) and position == 0)


def _how_used(op) -> str:
    if isinstance(op, ops.Phi):
        return "chosen by a branch or carried around a loop as a new instance"
    if isinstance(op, ops.Return):
        return "returned"
    if isinstance(op, ops.BuildTuple):
        return "kept in a tuple"
    if _is_store(op):
        return "stored into a field"
    return "passed to a function that is not inlined (a custom rule)"


def _refuse(fn: Function, root, how: str, loc, mode: str) -> None:
    classname = class_name(root.type.numba_type)
    raise UnsupportedError(f"writing a field of a {classname} instance {how}, in {mode}",
                           function=fn.name, argtypes=fn.argtypes, loc=loc, hint=_HINT)


def _values(fn: Function):
    yield from fn.args
    for op in fn.ops():
        if op.result is not None:
            yield op.result


def _first_store(root, users: dict):
    return next(op for op, _ in users[root] if _is_store(op))


def _promote(fn: Function, b: Builder, root, uses: list, loaded: dict) -> list:
    """The written fields of `root` as locals: first stored where `root` is defined, stored by
    its stores, loaded by its reads (`loaded`: each read's result -> its load), stored back
    before each return if it was given."""
    instance_type = root.type.numba_type
    names = list(dict.fromkeys(stored_field(op.callee) for op in uses if _is_store(op)))
    local = {name: ops.LocalVar(from_numba(fields_of(instance_type)[name]),
                                f"{root.hint or 'obj'}.{name}") for name in names}
    _store_first_values(fn, b, root, local)
    for op in uses:
        b.loc = op.loc
        if _is_store(op):
            with b.before(op):
                b.store(local[stored_field(op.callee)], op.operands[1])
            op.block.ops.remove(op)
        elif op.name in local:
            with b.before(op):
                value = b.load(local[op.name])
            loaded[op.result] = value
            op.block.ops.remove(op)
    if not _is_new(root):
        _store_back(fn, b, root, local)
    return list(local.values())


def _store_first_values(fn: Function, b: Builder, root, local: dict) -> None:
    where = _first_op_after(fn, root)
    with b.before(where):
        if _is_built(root):
            ctor = maker(root.op.callee)
            fields = root.op.operands[0]
            for name, var in local.items():
                item = as_field(b, b.tuple_getitem(fields, field_index(ctor, name)), var.type)
                b.store(var, item if item is not None else b.getattr(root, name, var.type))
        else:  # read once: the pullback must not read it again after the store back
            for name, var in local.items():
                b.store(var, b.call(field_load(root.type.numba_type, name), [root],
                                    type=var.type))


def _first_op_after(fn: Function, root):
    """The op before which `root`'s fields are first read: the first op of the entry block for
    an argument, else the first op after `root`'s definition that is not a phi."""
    if isinstance(root, Argument):
        block, start = fn.entry, 0
    else:
        block = root.op.block
        start = block.ops.index(root.op) + 1
    return next(op for op in block.ops[start:] if not isinstance(op, ops.Phi))


def _store_back(fn: Function, b: Builder, root, local: dict) -> None:
    instance_type = root.type.numba_type
    for ret in [op for op in fn.ops() if isinstance(op, ops.Return)]:
        b.loc = ret.loc
        with b.before(ret):
            for name, var in local.items():
                b.call(field_store_back(instance_type, name), [root, b.load(var)], type=none)

