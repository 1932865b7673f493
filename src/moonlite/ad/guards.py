"""Guards at the boundary of a derivative call: the caller's arrays are never left half-written,
and arguments that share memory with an array the kernel writes are refused.

- **Private copies.** A reverse rule writes into the arrays the kernel writes (its sweep runs
  the kernel) and undoes the writes in its pullback. If the call stops midway (the kernel raises,
  an allocation fails, an index is out of bounds under `boundscheck=True`), the undoing never
  runs. `grad`, `value_and_grad`, `hvp` and `hessian` therefore run the rule on copies of the
  array arguments the kernel may write: the caller's arrays are untouched whatever happens. A
  copy costs one pass over the array, less than the sweep that saves what it overwrites.
- **Ctrl-C.** numba's compiled code cannot be interrupted: a SIGINT waits until the call
  returns. But if it arrives while numba turns a `numba.typed.List` into a Python object (the
  state of `vjp` when tapes hold arrays), numba's boxing code meets the pending KeyboardInterrupt
  and crashes (SystemError, or a segfault). `deferred_interrupts()` holds SIGINT back during such
  a call and raises KeyboardInterrupt right after it.
- **Aliasing.** `f(x, x)` with `f` writing into its first argument reads the write through the
  second; a derivative keeps a separate tangent or shadow per argument and would be wrong. Such
  calls are refused with an error naming the arguments (arrays that are only read may alias).

`written_arguments(fn)` finds the arguments a captured function may write (`ir/readonly.py`).
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading

import numpy as np

from .. import _numba as nb
from ..errors import ArgumentError
from ..ir.core import Function
from ..ir.types import ArrayType, TupleType, from_numba, is_record
from ..rules.jitclasses import fields_of, is_numba_instance_type, reader_for
from ..rules.overlap import may_share_memory
from ..rules.records import record_view
from ..ir import ops
from ..ir.readonly import never_written, value_users


def written_arguments(fn: Function) -> frozenset:
    """Indices of the array and record arguments `fn` may write into (through any view), and
    of the jitclass and structref arguments into whose array fields it may write. The guards
    check them for shared memory and copy the arrays (a record has no owner of its own to copy
    into in compiled code: reverse rules restore what they write into one)."""
    return frozenset(i for i, a in enumerate(fn.args)
                     if (isinstance(a.type, (ArrayType, TupleType)) or is_record(a.type))
                     and not never_written(fn, a) or _array_field_written(fn, a))


def _array_field_written(fn: Function, arg) -> bool:
    """True if `fn` may write into an array held by a field of the instance `arg` (`m.w[0] =
    v`: `m.w` may be another argument's memory)."""
    if not is_numba_instance_type(getattr(arg.type, "numba_type", None)):
        return False
    fields = [op.result for op, _ in value_users(fn).get(arg, ())
              if isinstance(op, ops.GetAttr) and isinstance(op.result.type, ArrayType)]
    return any(not never_written(fn, field) for field in fields)


def emit_guards(b, values: list, written: frozenset, function_name: str,
                copy: bool = True, names=None) -> list:
    """At the builder's position: refuse (raise ValueError) if an array in `values` that the
    kernel writes shares memory with another array argument, then (with `copy`) copy the
    written ones. Returns the values to pass on (copies in place of the written arrays).
    `names`: what the message calls the values (their own names by default)."""
    names = names or [getattr(v, "name", f"argument {i}") for i, v in enumerate(values)]
    arrays = [i for i, v in enumerate(values) if isinstance(v.type, ArrayType)]
    memory = {}  # (argument, entry) -> an array over that memory (a tuple's arrays each)
    for i, v in enumerate(values):
        for k, item in _memory_of(b, v):
            memory[(i, k)] = item
    for (i, k) in [key for key in memory if key[0] in written]:
        for (j, m) in memory:
            if (j, m) == (i, k):
                continue
            shared = b.call(may_share_memory, [memory[(i, k)], memory[(j, m)]])
            refuse, go_on = b.new_block("aliased"), b.new_block("not_aliased")
            b.branch(shared, refuse, go_on)
            b.position_at_end(refuse)
            b.raise_(ArgumentError, [b.const(aliasing_message(
                function_name, _label(names[i], k), _label(names[j], m)))])
            b.position_at_end(go_on)
    return [_copied(b, v) if copy and i in written else v for i, v in enumerate(values)]


def _copied(b, value):
    """A copy of an array, or of a tuple (a namedtuple too) with copies of the arrays it holds
    (vjp's sweep writes them, and its pullback restores them: on copies, never the caller's);
    records and other values as they are."""
    if isinstance(value.type, ArrayType):
        return b.call(np.copy, [value], type=value.type)
    if isinstance(value.type, TupleType) and _holds_array(value.type):
        items = [_copied(b, b.tuple_getitem(value, k)) for k in range(len(value.type.elements))]
        return b.build_tuple(items, named=getattr(value.type, "numba_type", None))
    return value


def _holds_array(t) -> bool:
    return isinstance(t, ArrayType) or (isinstance(t, TupleType)
                                        and any(_holds_array(e) for e in t.elements))


def copied_back_arrays(b, caller, work) -> list:
    """(caller's array, its copy) for each array `caller` holds (itself, or a tuple's
    entries) that `_copied` copied into `work`."""
    if isinstance(caller.type, ArrayType):
        return [] if caller is work else [(caller, work)]
    if isinstance(caller.type, TupleType) and caller is not work and _holds_array(caller.type):
        return [pair for k in range(len(caller.type.elements))
                for pair in copied_back_arrays(b, b.tuple_getitem(caller, k),
                                               b.tuple_getitem(work, k))]
    return []


def _memory_of(b, value) -> list:
    """[(entry, an array over memory `value` holds)]: an array itself, a record's one-entry
    view, each array of a tuple (`(W, W)` given as one argument shares memory with itself)."""
    if isinstance(value.type, ArrayType):
        return [(None, value)]
    if is_record(value.type):
        return [(None, b.call(record_view, [value], type=ArrayType(value.type, 1, "C")))]
    if isinstance(value.type, TupleType):
        return [((k, sub), item) for k in range(len(value.type.elements))
                for sub, item in _memory_of(b, b.tuple_getitem(value, k))]
    numba_type = getattr(value.type, "numba_type", None)
    if is_numba_instance_type(numba_type):  # the arrays its fields hold (`m.w` may be `x`)
        return [((name, sub), item) for name, t in fields_of(numba_type).items()
                if _may_hold_arrays(t)
                for sub, item in _memory_of(b, b.getattr(value, name, from_numba(t)))]
    return []


def _label(name: str, entry) -> str:
    """An argument's name, with the fields that hold the array (`m.w`): `entry` is the key
    `_memory_of` gave it (None, (tuple index, ...) or (field name, ...))."""
    while isinstance(entry, tuple):
        if isinstance(entry[0], str):
            name = f"{name}.{entry[0]}"
        entry = entry[1]
    return name


def _may_hold_arrays(t) -> bool:
    return isinstance(t, (nb.types.Array, nb.types.BaseTuple, nb.types.Record)) \
        or is_numba_instance_type(t)


def check_aliasing(function_name: str, args: tuple, written: frozenset, names=None) -> None:
    """The Python-side check of `emit_guards` (for jvp, vjp, hvp, jacfwd, jacrev)."""
    names = names or [f"argument {i}" for i in range(len(args))]
    items = [(j, k, label, part) for j, a in enumerate(args)
             for k, (label, part) in enumerate(_labelled_parts(a, names[j]))]
    for i, k, mine_label, mine in items:
        if i not in written:
            continue
        for j, m, other_label, other in items:
            if (j, m) != (i, k) and np.may_share_memory(mine, other):
                raise ArgumentError(aliasing_message(function_name, mine_label, other_label))


def _parts(value) -> list:
    """The arrays and records `value` is or holds (a tuple's, entry by entry; a jitclass or
    structref instance's, field by field)."""
    return [part for _, part in _labelled_parts(value, "")]


def _labelled_parts(value, name: str) -> list:
    """[(`name` with the fields holding it, an array or record)] of `_parts`."""
    if isinstance(value, _MEMORY):
        return [(name, value)]
    if isinstance(value, tuple):
        return [item for v in value for item in _labelled_parts(v, name)]
    instance_type = _instance_type(value)
    if instance_type is not None:
        return [item for field, v in zip(fields_of(instance_type),
                                         _field_values(value, instance_type))
                for item in _labelled_parts(v, f"{name}.{field}")]
    return []


def _field_values(value, instance_type) -> tuple:
    if isinstance(instance_type, nb.types.ClassInstanceType):  # (a jitclass box's properties)
        return tuple(getattr(value, field) for field in instance_type.struct)
    return _reader(instance_type)(value)  # a structref proxy may have none


_reader = functools.lru_cache(maxsize=None)(reader_for)  # (compiled once per type)


def _instance_type(value):
    """The numba type of a boxed jitclass instance or structref proxy, else None."""
    t = getattr(type(value), "_numba_type_", None)
    if t is None and isinstance(value, nb.structref.StructRefProxy):
        t = value._type
    return t if is_numba_instance_type(t) else None


_MEMORY = (np.ndarray, np.void)  # what may share memory: arrays, records (np.void views)


def any_shared_memory(values: tuple) -> bool:
    """True if two of the arrays or records in `values` may share memory (the cheap test run
    first)."""
    arrays = [part for v in values for part in _parts(v)]
    return any(np.may_share_memory(a, c) for k, a in enumerate(arrays) for c in arrays[k + 1:])


def private_copies(args: tuple, written: frozenset) -> tuple:
    """Copies of the arrays and records (NumPy's `np.void`, which copies its bytes) at the
    indices in `written`, and of those held by tuples (namedtuples too) there."""
    return tuple(_private_copy(a) if i in written else a for i, a in enumerate(args))


def _private_copy(a):
    if isinstance(a, np.ndarray):
        return a.copy(order="K")  # (a Fortran-ordered array stays so: the sweep's types)
    if isinstance(a, np.void):
        return a.copy()
    if isinstance(a, tuple):
        items = [_private_copy(e) for e in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    return a


def copy_back(target, value) -> None:
    """Write the array or record `value` into `target` (a record has no `[...]`: its fields
    are written one by one, nested records whole); a tuple's entries one by one."""
    if isinstance(target, np.void):
        for name in target.dtype.names:
            target[name] = value[name]
    elif isinstance(target, tuple):
        for t, v in zip(target, value):
            if isinstance(t, (np.ndarray, np.void, tuple)):
                copy_back(t, v)
    else:
        target[...] = value


def aliasing_message(function_name: str, written: str, other: str) -> str:
    if written == other:  # two arrays of one tuple argument
        return (f"moonlite: two arrays in argument {written} of {function_name} share memory, "
                f"and {function_name} writes into {written}: a derivative follows each entry "
                "separately and would be wrong; pass copies")
    return (f"moonlite: arguments {written} and {other} of {function_name} share memory, and "
            f"{function_name} writes into {written}: a derivative follows each argument "
            f"separately and would be wrong; pass copies (e.g. {other}.copy())")



@contextlib.contextmanager
def deferred_interrupts():
    """Hold SIGINT back until the block ends, then raise KeyboardInterrupt (main thread only;
    elsewhere, and under a handler other than Python's default, a no-op)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    received = []
    signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if received:
        raise KeyboardInterrupt
