"""Lists of arrays built by append (`states.append(x.copy())`, issue #20), as an array of rows.

A growing list of arrays of one type (numba types the list by its entries' dtype, rank and
layout) is kept as a buffer of one more dimension whose rows are the entries, with a length,
like a list of numbers (`lists.py`): `append` grows the buffer when it is full (`grown_rows`,
which also fixes the entries' shape at the first append and raises ValueError when a later
entry differs) and writes the entry as a row; `ys[i]`, `for y in ys`, `enumerate`, `zip` and
unpacking read rows (views), `len(ys)` is the length. The AD passes see array allocations,
copies, row writes and views, which every mode differentiates.

A list holds references, the buffer copies: the two differ only when an array is written
after it is appended (the list would see the write) or an entry read from the list is written
(the array appended would see it). `check_array_lists` proves neither happens, on the captured
IR, and refuses the kernel where it cannot: a write into a view of an appended array on a path
from the append that does not allocate that array anew (a fresh `x` in each iteration of a
loop may be written before it is appended), and any write into the rows. An njit function
given such an array counts as writing it unless its own IR never writes or returns it. The list
itself may be given to an njit helper, which then runs as its column form, given the buffer and
the length (`list_helpers.py`); the same check asks that form's IR. Every other list operation on
a list of arrays (methods but `append`, `ys[i] = v`, copies, joins, `sum`, passing the list to a
function other than an njit one) is refused by name.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir import ops
from ..ir.core import Argument, Value
from ..ir.readonly import never_written, use_kind, value_users, views_of
from ..ir.traits import Trait
from ..ir.types import ArrayType, OpaqueType, TupleType, int64

nbt = nb.types


def _same_row_shape_py(buffer, entry):
    for d in range(entry.ndim):
        if buffer.shape[d + 1] != entry.shape[d]:
            return False
    return True


def _grown_rows_py(buffer, length, entry):
    same = same_row_shape(buffer, entry)
    if length > 0 and not same:
        raise ValueError("moonlite: the arrays appended to a list differ in shape (moonlite "
                         "keeps a list of arrays as one array of rows: append arrays of one "
                         "shape, or fill preallocated arrays)")
    if length < buffer.shape[0] and same:
        return buffer
    bigger = np.empty((2 * length + 4,) + entry.shape, buffer.dtype)
    if length > 0:
        bigger[:length] = buffer[:length]
    return bigger


same_row_shape = nb.njit(cache=True)(_same_row_shape_py)
# The buffer with room for one more row shaped like `entry` (itself while there is room).
grown_rows = nb.njit(cache=True)(_grown_rows_py)

# Calls whose array result is a new array, never a view of an argument.
_FRESH_CALLS = (np.copy, np.array, np.empty, np.zeros, np.ones, np.full, np.empty_like,
                np.zeros_like, np.ones_like, np.full_like, np.arange, np.linspace, np.stack,
                np.concatenate, np.outer, np.dot, np.cumsum, np.cumprod, np.sort)
_FRESH_METHODS = ("copy", "flatten", "astype")


def appendable_array(element) -> bool:
    """A C-contiguous array of numbers: what a list of arrays may hold (rows of a C buffer
    are C-contiguous; an entry of layout "A" would be typed otherwise than its row)."""
    return isinstance(element, nbt.Array) and element.layout == "C" \
        and isinstance(element.dtype, (nbt.Float, nbt.Integer, nbt.Boolean))


class ArrayLists:
    """Mixin of `Importer`: lists of arrays (the `GrowingList` of `lists.py` with rows)."""

    def _init_array_lists(self) -> None:
        self.array_list_buffers: list = []  # every buffer value made for a list of arrays
        self.array_literal_tuples: set = set()  # list literals of arrays given to helpers
        self.array_list_ops: set = set()  # ids of the ops that build and append them
        self.array_appends: list = []  # (the row write of an append, the array appended)

    def empty_rows(self, lst) -> Value:
        """An empty buffer of the list's rank (its entries' shape comes with the first)."""
        buffer_type = lst.buffer_types[0]
        shape = self.b.build_tuple([self.b.const(0, int64)] * buffer_type.ndim)
        dtype = self.dtype_ref(lst.element.dtype.to_numba())
        buffer = self.b.call(np.empty, [shape, dtype], None, buffer_type)
        self._own(buffer)
        return buffer

    def append_row(self, lst, value: Value) -> None:
        buffers, length = self._state(lst)
        buffer = self.b.call(grown_rows, [buffers[0], length, value], None, buffers[0].type)
        self._own(buffer)
        write = self.b.setitem(buffer, length, value)
        self.array_list_ops.add(id(write))
        self.array_appends.append((write, value))
        self.list_state[lst] = ((buffer,), self.b.add(length, self.b.const(1, int64)))

    def _own(self, buffer: Value) -> None:
        self.array_list_buffers.append(buffer)
        self.array_list_ops.add(id(buffer.op))

    def refuse_array_list(self, use: str):
        self.unsupported(f"a list of arrays built by append {use}",
                         "append to it and read it (ys[i], for y in ys, len(ys)), or fill a "
                         "preallocated array with one more dimension")

    # --- the check that copies behave as references would ----------------------------------------

    def check_array_lists(self, fn) -> None:
        if not self.array_list_buffers:
            return
        users = value_users(fn)
        for op, position in _array_uses(users, self.array_list_buffers):
            if id(op) not in self.array_list_ops and self._writes(op, position):
                self.unsupported("writing into an entry of a list of arrays (moonlite keeps "
                                 "the entries as rows of one array, copies of the arrays "
                                 "appended, which that write would not reach)",
                                 "write into a copy (y = ys[i].copy())", op.loc)
        for write, value in self.array_appends:
            for root in _roots(value):
                self._check_unwritten_after(users, write, root)

    def _check_unwritten_after(self, users: dict, append, root: Value) -> None:
        again = None if isinstance(root, Argument) else root.op
        for op, position in _array_uses(users, [root]):
            if op is append or id(op) in self.array_list_ops or not self._writes(op, position):
                continue
            if _may_run_after(append, op, again):
                self.unsupported("writing into an array after appending it to a list (the "
                                 "list holds that array, so it would see the write; "
                                 "moonlite's list holds a copy made at the append)",
                                 "append a copy (ys.append(x.copy())) or write before "
                                 "appending", op.loc)

    def _writes(self, op, position: int) -> bool:
        """Whether `op` may write into (or keep) the array it reads at `position` (-1: a tuple
        holding it): a return keeps nothing, an njit function is asked its IR."""
        if isinstance(op, ops.Return):
            return False
        if position < 0:
            return True
        if use_kind(op, position) != "write":
            return False
        if isinstance(op, ops.Call) and nb.is_njit_dispatcher(op.callee) and not op.kwnames \
                and isinstance(op.operands[position].type, ArrayType):
            # (never_written counts a return of the array, or of a view of it, as a write: the
            # caller could write through the result; one given a tuple may write an array it
            # holds, and never_written asks arrays only)
            return not _callee_never_writes(op.callee, op.operands, position)
        return True


def _array_uses(users: dict, roots):
    """(op, operand position) of the uses of the arrays `roots` (or of the tuples holding
    them), followed through views and through tuples taken apart again (`(k, row)` of
    `enumerate`); a tuple built here and used otherwise is a use at position -1."""
    seen, pending = set(), list(roots)
    while pending:
        reached = [v for v in views_of(users, pending) if v not in seen]
        seen.update(reached)
        pending = []
        for value in reached:
            for op, position in users.get(value, ()):
                if isinstance(op, ops.BuildTuple):
                    for user, _ in users.get(op.result, ()):
                        if not isinstance(user, ops.TupleGetItem):
                            yield user, -1
                        elif user.index == position:
                            pending.append(user.result)
                elif isinstance(op, (ops.TupleGetItem, ops.Phi, ops.Select)) \
                        and _may_hold_arrays(op.result.type):
                    pending.append(op.result)  # (any entry of a tuple that holds the array)
                elif use_kind(op, position) != "view" or op.result is None:
                    yield op, position


# `capture_types` of the package, which imports the importer, which imports this module: set
# by the package once it is defined
capture_callee = None


def _may_hold_arrays(t) -> bool:
    if isinstance(t, TupleType):
        return any(_may_hold_arrays(e) for e in t.elements)
    return isinstance(t, (ArrayType, OpaqueType))


def _callee_never_writes(callee, operands, position: int) -> bool:
    try:
        ir = capture_callee(callee, tuple(v.type.to_numba() for v in operands))
    except Exception:  # a callee moonlite cannot read: it may write
        return False
    return position < len(ir.args) and never_written(ir, ir.args[position])


def _roots(value: Value) -> set:
    """The arrays whose memory `value` may view: itself when it is made fresh, else what the
    views, phis and calls it comes from view (a call may return a view of an argument); an
    entry of a tuple not built here stands for the tuple."""
    roots, seen, work = set(), set(), [value]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        op = getattr(v, "op", None)
        if isinstance(op, ops.TupleGetItem):  # the entry of a tuple built here, or the tuple
            built = getattr(op.tuple, "op", None)
            work.append(built.operands[op.index] if isinstance(built, ops.BuildTuple)
                        else op.tuple)
            continue
        if op is None or _fresh(op):
            roots.add(v)
            continue
        sources = [o for o in op.operands if _may_hold_arrays(o.type)]
        if isinstance(op, (ops.Call, ops.MethodCall)) or not sources:
            roots.add(v)  # (what a call returns may be new, or a view of its arguments)
        work.extend(sources)
    return roots


def _fresh(op) -> bool:
    if isinstance(op, ops.Phi):
        return False
    if isinstance(op, ops.MethodCall):
        return op.method in _FRESH_METHODS
    if isinstance(op, ops.Call):
        traits = op.traits()
        return any(op.callee is f for f in _FRESH_CALLS) \
            or bool(traits & (Trait.ALLOCATES | Trait.ELEMENTWISE))
    return not op.traits() & Trait.VIEW  # arithmetic on arrays makes new arrays


def _may_run_after(first, later, again) -> bool:
    """Whether op `later` may run after op `first` with the array `first` saw: on a path from
    `first` that does not run `again` (the op making that array anew) before `later`."""
    block = first.block
    if later.block is block and block.ops.index(later) > block.ops.index(first):
        return True
    stop = again.block if again is not None else None
    seen, work = set(), list(block.successors())
    while work:
        b = work.pop()
        if b in seen:
            continue
        seen.add(b)
        if b is later.block:
            fresh = b is stop and b.ops.index(again) < b.ops.index(later)
            if not fresh:
                return True
        if b is stop:
            continue
        work.extend(b.successors())
    return False
