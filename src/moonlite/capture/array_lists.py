"""Lists of arrays built by append (`states.append(x.copy())`, issue #20): the entries' numbers
one after another in one buffer, with each entry's place and shape.

numba types a list of arrays by its entries' dtype, rank and layout only: the entries may differ
in shape (`nbrs.append(np.where(d[i] < rc)[0])`, `pieces.append(x[:i] * w)`, weight matrices of
each layer). moonlite keeps such a list, like a list of numbers (`lists.py`), as buffers and a
length threaded through the blocks: `flat` (1-D, the entries' numbers), `places` (per entry:
where it starts in `flat`, then its shape) and `used` (how much of `flat` is written). Entry k
is read as the view of `flat` at its start, of its shape (`rules/list_views.py`: a view in
every mode, its tangent and its shadow the same view of the buffer's). `append(v)`,
`insert(i, v)` and `ys[i] = v` write v's numbers at `used` (room made by
`array_list_runtime.room_for_numbers`) and record its place; `pop()`, `pop(i)`, `clear()` and
`reverse()` change only places and the length; `extend`, copies and slices copy the entries'
numbers. The AD passes see array allocations, copies, writes of slices, views and integer
bookkeeping, which every mode differentiates.

A place in `flat` is written once (what is written goes after `used`; a full `flat` is replaced
by a new one), so an entry read before keeps its numbers whatever the list does next, as a
Python list's array would. A list holds references and the buffer copies: the two still differ
when an array is written after it is put in the list (the list would see the write) or an entry
read from the list is written (the array appended would see it). `check_array_lists` proves
neither happens, on the captured IR, and refuses the kernel where it cannot: a write into a
view of an array appended (or inserted, or put in place of an entry) on a path from there that
does not allocate that array anew (a fresh `x` in each iteration of a loop may be written
before it is appended), and any write into `flat`'s entries. An njit function given such an
array counts as writing it unless its own IR never writes or returns it. The list itself may
be given to an njit helper, which then runs as its column form, given the buffers and the
length (`list_helpers.py`); the same check asks that form's IR. Other uses (`sort`, `remove`,
`index`, `count`, `sum`, `np.array`, passing the list to a function other than an njit one)
are refused by name.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir import ops
from ..ir.core import Argument, Value
from ..ir.readonly import never_written, use_kind, value_users, views_of
from ..ir.traits import Trait
from ..ir.types import ArrayType, OpaqueType, TupleType, boolean, int64, none
from ..rules.jitclasses import any_layout
from ..rules.list_views import list_entry
from .array_list_runtime import (closed_gap, copy_entries, gathered_numbers, gathered_places,
                                 live_size, placed, places_of_copies, reversed_entries,
                                 places_of_rows, room_for_numbers, used_after_room)
from .iterators import IndexSource
from .list_runtime import insert_position
from .statics import ListLiteral

nbt = nb.types

# Calls whose array result is a new array, never a view of an argument.
_FRESH_CALLS = (np.copy, np.array, np.empty, np.zeros, np.ones, np.full, np.empty_like,
                np.zeros_like, np.ones_like, np.full_like, np.arange, np.linspace, np.stack,
                np.concatenate, np.outer, np.dot, np.cumsum, np.cumprod, np.sort)
_FRESH_METHODS = ("copy", "flatten", "astype")
_POSITIONS = ArrayType(int64, 1, "C")
_PLACES = ArrayType(int64, 2, "C")


def appendable_array(element) -> bool:
    """An array of numbers of one dimension or more, typed C-contiguous, of any layout ("A":
    `ys.append(x[::2])`) or Fortran-ordered with two dimensions or more (`ys.append(inv(m))`):
    what a list of arrays may hold. Its entries are read as contiguous views of `flat`, typed
    as the list's entries (`any_layout`); an F list's entries are kept transposed, read as the
    transpose of a C view."""
    return isinstance(element, nbt.Array) \
        and (element.layout in ("C", "A") or element.layout == "F" and element.ndim > 1) \
        and element.ndim > 0 and isinstance(element.dtype, (nbt.Float, nbt.Integer, nbt.Boolean))


def array_list_buffer_types(element: ArrayType) -> tuple:
    """The types of a list of arrays' buffers: flat, places (start and shape per entry),
    used."""
    return (ArrayType(element.dtype, 1, "C"), _PLACES, int64)


class ArrayLists:
    """Mixin of `Importer`: lists of arrays (the `GrowingList` of `lists.py`, whose buffers are
    flat, places and used)."""

    def _init_array_lists(self) -> None:
        self.array_list_buffers: list = []  # every flat buffer made for a list of arrays
        self.array_literal_tuples: set = set()  # list literals of arrays given to helpers
        self.array_list_ops: set = set()  # ids of the ops that build and change them
        self.array_appends: list = []  # (the write of an array put in a list, that array)

    def empty_array_list(self, lst) -> tuple:
        """The state of an empty list of arrays (its buffers grow at the first append)."""
        b, zero = self.b, self.b.const(0, int64)
        flat_type, places_type, _ = lst.buffer_types
        flat = b.call(np.empty, [zero, self.dtype_ref(lst.element.dtype.to_numba())], None,
                      flat_type)
        self._own(flat)
        shape = b.build_tuple([zero, b.const(lst.element.ndim + 1, int64)])
        places = b.call(np.empty, [shape, self.dtype_ref(nbt.int64)], None, places_type)
        return (flat, places, zero), zero

    def array_entry_at(self, b, lst, buffers: tuple, position: Value) -> Value:
        """Entry `position` (checked): the view of `flat` at its start, of its shape
        (`rules/list_views.list_entry`: no bounds to normalise, so reads in a hot loop cost
        what reading a row costs)."""
        flat, places, _ = buffers
        start, *dims = [b.getitem(places, b.build_tuple([position, b.const(j, int64)]), int64)
                        for j in range(lst.element.ndim + 1)]
        element = lst.element
        contiguous = ArrayType(element.dtype, element.ndim, "C", element.readonly)
        if element.layout == "F":  # (its numbers kept as those of its C-ordered transpose)
            entry = b.call(list_entry, [flat, start, b.build_tuple(dims[::-1])], None,
                           contiguous)
            return b.getattr(entry, "T", element)
        entry = b.call(list_entry, [flat, start, b.build_tuple(dims)], None, contiguous)
        # (a list of arrays typed "A" reads them typed so: numba typed the code reading them)
        return entry if element == contiguous else b.call(any_layout, [entry], None, element)

    def array_list_source(self, lst):
        """What a for loop over a list of arrays walks: the entry at each index, read with the
        buffers as the loop's body starts (an entry replaced in the body may move them)."""
        _, length = self._state(lst)
        return IndexSource(lambda b: length,
                           lambda b, k: self.array_entry_at(b, lst, self._state(lst)[0], k))

    # --- changes ------------------------------------------------------------------------------

    def append_entry(self, lst, value: Value) -> None:
        _, length = self._state(lst)
        self._put_entry(lst, value, length, opens=True, shifts=False)

    def insert_entry(self, lst, index: Value, value: Value) -> None:
        """`ys.insert(i, v)`: v's numbers after the others, its place at i (i counted from the
        end if negative, clamped to the list, as Python does)."""
        _, length = self._state(lst)
        position = self.b.call(insert_position, [self._coerce(index, int64), length], None,
                               int64)
        self._put_entry(lst, value, position, opens=True, shifts=True)

    def replace_entry(self, lst, position: Value, value: Value) -> None:
        """`ys[i] = v` (`position`: i checked): v's numbers after the others, its place at i;
        the old entry's numbers stay where they are (an entry read before keeps them)."""
        if lst in self.given_lists:
            self.unsupported("replacing an entry of a list of arrays in a helper it is given "
                             f"to ({self.py_func.__name__}(): moonlite would write the new "
                             "entry where the caller does not look)",
                             "replace the entry in the kernel that builds the list, or let "
                             "the helper return the new array")
        self._put_entry(lst, value, position, opens=False, shifts=False)

    def _put_entry(self, lst, value: Value, position: Value, opens: bool, shifts: bool) -> None:
        """`value`'s numbers written after the others and recorded as entry `position`: a new
        entry there (`opens`; `shifts`: the entries from there on move one place up), or the
        entry there replaced."""
        self._check_entry_type(lst, value.type)
        b = self.b
        state = self._state(lst)
        # (an F entry: the numbers of its C-ordered transpose, a view)
        written = b.getattr(value, "T") if lst.element.layout == "F" else value
        bigger, at, stop, shape, size = self._append_numbers(state, value, written)
        (flat, places, used), length = state
        places = self._list_value(placed, [flat, places, used, length, size,
                                           b.const(1 if opens else 0, int64), position, at,
                                           shape, b.const(shifts, boolean)], places.type)
        if opens:
            length = b.add(length, b.const(1, int64))
        self.list_state[lst] = ((bigger, places, stop), length)

    def _append_numbers(self, state, array: Value, written: Value):
        """`written`'s numbers copied in C order after those the list's buffer holds (into a
        bigger buffer if they do not fit), recorded as a write of `array`'s: returns the
        buffer, where they start and stop, and `array`'s shape and size."""
        b = self.b
        (flat, places, used), length = state
        shape = b.getattr(array, "shape")
        size = _product(b, [b.tuple_getitem(shape, j) for j in range(array.type.ndim)])
        bigger, at = self._room(flat, places, used, length, size)
        if written.type.ndim == 1:
            numbers = written
        elif written.type.layout == "C":
            numbers = b.call(np.reshape, [written, b.build_tuple([size])], None, flat.type)
        else:  # (numba's ravel of an array not typed C copies it, in C order)
            numbers = b.call(np.ravel, [written], None, flat.type)
        stop = b.add(at, size)
        write = b.setitem(bigger, b.build_slice(at, stop, b.const(None, none)), numbers)
        self.array_list_ops.add(id(write))
        self.array_appends.append((write, array))
        return bigger, at, stop, shape, size

    def _check_entry_type(self, lst, t) -> None:
        # (a list typed "A" takes entries of every layout, a.T too: they are copied into the
        # buffer in C order, np.ravel, and read back as C views typed "A")
        if not (isinstance(t, ArrayType) and t.dtype == lst.element.dtype
                and t.ndim == lst.element.ndim
                and (t.layout == "C" and lst.element.layout != "F"
                     or lst.element.layout == "A" or t.layout == lst.element.layout == "F")):
            self.unsupported(f"putting {t} in a list of {lst.element}",
                             "append arrays of the list's dtype and dimension (a copy: "
                             "ys.append(x.copy()))")

    def _room(self, flat, places, used, length, extra) -> tuple:
        """(`flat` with room for `extra` more numbers, where they go): its live numbers moved
        into a new `flat` when it is full, which every mode differentiates. The places move
        with them in the call that records the new entries' places (`placed`)."""
        args = [flat, places, used, length, extra]
        bigger = self._list_value(room_for_numbers, args, flat.type)
        self._own(bigger)
        return bigger, self._list_value(used_after_room, args, int64)

    def _list_value(self, fn, args: list, result_type) -> Value:
        value = self.b.call(fn, args, None, result_type)
        self.array_list_ops.add(id(value.op))
        return value

    def _list_call(self, fn, args: list) -> None:
        self._list_value(fn, args, none)

    def close_entry_gap(self, lst, position: Value) -> None:
        """`pop(i)` once the entry is read: the places after it moved one down."""
        buffers, length = self._state(lst)
        self._list_call(closed_gap, [buffers[1], position, length])
        self.list_state[lst] = (buffers, self.b.sub(length, self.b.const(1, int64)))

    def reverse_entries(self, lst) -> None:
        buffers, length = self._state(lst)
        self._list_call(reversed_entries, [buffers[1], length])

    def extend_array_list(self, lst, source, what: str) -> None:
        """`ys.extend(zs)`, `ys += zs`: zs a list of arrays the kernel builds (ys itself too),
        whose entries' numbers are copied after ys's, or a list literal or tuple of arrays,
        appended one by one."""
        if isinstance(source, ListLiteral) or isinstance(source, Value) \
                and isinstance(source.type, TupleType):
            items = source.items if isinstance(source, ListLiteral) else [
                self.b.tuple_getitem(source, k) for k in range(len(source.type))]
            for item in items:
                self.append_entry(lst, item)
            return
        if isinstance(source, Value) and isinstance(source.type, ArrayType) \
                and source.type.ndim == lst.element.ndim + 1:
            return self._extend_with_rows(lst, source)
        if not (getattr(source, "holds_arrays", False) and source.element == lst.element):
            self.unsupported(f"{what} of a list of {lst.element} with "
                             f"{getattr(source, 'type', 'another kind of list')}",
                             "extend it with a list of arrays the kernel builds, a list "
                             "literal or a tuple of arrays of the same type")
        (flat, places, used), length = self._state(lst)
        (other, other_places, _), count = self._state(source)
        extra = self._list_value(live_size, [other_places, count], int64)
        bigger, at = self._room(flat, places, used, length, extra)
        # (zs may be ys: its numbers are read where they are, before `used` or in the old
        # `flat`, before its places move)
        self._list_call(copy_entries, [bigger, at, other, other_places, count])
        places = self._list_value(places_of_copies, [flat, places, used, length, extra, at,
                                                     other_places, count], places.type)
        self.list_state[lst] = ((bigger, places, self.b.add(at, extra)),
                                self.b.add(length, count))

    def _extend_with_rows(self, lst, rows: Value) -> None:
        """`ys.extend(M)`: M's rows appended, as views of M are in a Python list (so a write
        into M afterwards is refused, as after an append): M's numbers copied in C order
        after ys's, one place per row."""
        t = rows.type
        self._check_entry_type(lst, ArrayType(t.dtype, t.ndim - 1,
                                              "C" if t.layout == "C" else "A"))
        b = self.b
        state = self._state(lst)
        bigger, at, stop, shape, size = self._append_numbers(state, rows, rows)
        (flat, places, used), length = state
        places = self._list_value(places_of_rows, [flat, places, used, length, size, at, shape],
                                  places.type)
        count = b.tuple_getitem(shape, 0)
        self.list_state[lst] = ((bigger, places, stop), b.add(length, count))

    def copied_array_list(self, lst, part: "Value | None"):
        """A new list holding `lst`'s entries (`ys.copy()`, `list(ys)`), or those the slice
        `part` selects (`ys[a:b:c]`): their numbers copied into new buffers."""
        (flat, places, _), length = self._state(lst)
        positions = self.b.call(np.arange, [length], None, _POSITIONS)
        if part is not None:
            positions = self.b.getitem(positions, part)
        count = self.b.call(len, [positions], type=int64)
        copied = self._list_value(gathered_places, [places, positions], places.type)
        total = self._list_value(live_size, [copied, count], int64)
        numbers = self._list_value(gathered_numbers, [flat, places, positions, total],
                                   flat.type)
        self._own(numbers)
        copy = self._new_list(lst.element.to_numba())
        self.list_state[copy] = ((numbers, copied, total), count)
        return copy

    def _own(self, buffer: Value) -> None:
        self.array_list_buffers.append(buffer)
        self.array_list_ops.add(id(buffer.op))

    def refuse_array_list(self, use: str):
        self.unsupported(f"a list of arrays built by append {use}",
                         "append to it, read it (ys[i], for y in ys, len(ys)), change it "
                         "with pop, insert, ys[i] = v, extend, clear or reverse, or fill a "
                         "preallocated array with one more dimension")

    # --- the check that copies behave as references would ----------------------------------------

    def check_array_lists(self, fn) -> None:
        if not self.array_list_buffers:
            return
        users = value_users(fn)
        for op, position in _array_uses(users, self.array_list_buffers):
            if id(op) not in self.array_list_ops and self._writes(op, position):
                self.unsupported("writing into an entry of a list of arrays (moonlite keeps "
                                 "copies of the arrays appended in one buffer, which that "
                                 "write would not reach)",
                                 "write into a copy (y = ys[i].copy())", op.loc)
        for write, value in self.array_appends:
            for root in _roots(value):
                if isinstance(root, Argument) and self.list_params:
                    # the caller's array: whether the caller writes it later is not seen here
                    self.unsupported(f"appending an array {self.py_func.__name__}() is given "
                                     "to a list it is given (the list would hold that array, "
                                     "and see the caller's later writes into it; moonlite's "
                                     "list holds a copy made at the append)",
                                     "append a copy (ys.append(x.copy()))", write.loc)
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
        if position < 0:  # (a call making a new array of them: np.concatenate((ys[0], ys[1])))
            return not isinstance(op, ops.Call) or bool(op.traits() & (Trait.WRITES | Trait.VIEW))
        if use_kind(op, position) != "write":
            return False
        if isinstance(op, ops.Call) and nb.is_njit_dispatcher(op.callee) and not op.kwnames \
                and isinstance(op.operands[position].type, ArrayType):
            # (never_written counts a return of the array, or of a view of it, as a write: the
            # caller could write through the result; one given a tuple may write an array it
            # holds, and never_written asks arrays only)
            return not _callee_never_writes(op.callee, op.operands, position)
        return True


def _product(b, dims: list) -> Value:
    size = dims[0]
    for d in dims[1:]:
        size = b.mul(size, d)
    return size


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
                        if isinstance(user, ops.GetItem) and _may_hold_arrays(user.result.type):
                            pending.append(user.result)  # (any entry: a loop over the tuple)
                        elif isinstance(user, ops.BuildTuple):
                            continue  # a tuple of tuples: views_of follows it (readonly.py)
                        elif not isinstance(user, ops.TupleGetItem):
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
