"""Lists a kernel builds by appending (`ys = []; for ...: ys.append(v)`, list comprehensions)
become arrays (issue #20).

numba types such a list as a reflected list of scalars; moonlite IR has no lists. The importer
keeps a growing list as two IR values, a buffer array and a length, and every statement that
touches the list updates them: `append` grows the buffer when it is full (doubling, so appends
cost amortised O(1)) and writes the entry; reads see `buffer[:length]`. The AD passes then see
only array allocations, copies, reads and writes, which every mode already differentiates (the
buffer holds the derivatives of what was appended). A list of tuples of numbers (`pts.append((x,
y))`, namedtuples too) keeps one buffer per tuple entry, all of the one length: its entries are
values, not references, so a buffer holds what a list would (the entry read back is the tuple
rebuilt from the buffers at its position).

The buffer and length change inside loops and branches, but no numba variable names them, so the
importer keeps their SSA form itself: each block starts with the state its one predecessor ended
with, or with phis of the predecessors' states at a join (loop headers included), filled once
every block is imported; phis whose incoming values are all one value are removed, the others
nobody reads go with the dead code.

A list of numbers passed to an njit helper is passed as the array view of its entries
(`constructs.py: helper_call`); a list of tuples or of arrays goes to the helper's column form,
given the list's buffers and length (`list_helpers.py`). A copy (`ys.copy()`, `list(ys)`,
`ys[a:b:c]`, `sorted(ys)`; `list(x)` of a 1-D array) is a new list whose buffers are copies of
the heads; `ys.extend(zs)`, `ys += zs` and `ys + zs` write zs's entries after ys's. `sort()`
gathers the entries in the order numba's own quicksort gives them, by their values or by `key=`
(`list_orders.py`). Uses that need a real list are refused with a message naming them: passing
the list to a helper that calls a list method on it, changes its length or returns a list, or to
any other function, returning it, methods on a list of tuples that compare tuples (`remove`,
`index`, `count`, `sort()` without a key), a variable rebound to another list, a loop over a
list (or over enumerate or zip of it) that changes its length. `min` and `max` of a list of
tuples pick an entry by Python's tuple order (`list_orders.lexicographic_picker`). A list of
arrays keeps its entries' numbers in one flat buffer, with each entry's start and shape
(`array_lists.py`: entries of different shapes, read as views)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _numba as nb
from ..ir.core import Value
from ..ir.types import (ArrayType, BoolType, IntType, SliceType, TupleType, from_numba, int64,
                        none)
from .array_lists import ArrayLists, appendable_array, array_list_buffer_types
from .iterators import IndexSource, check_unpack_length, range_length
from .list_plans import ListAnalysis
from .list_runtime import (check_room, count_of, grown, index_of, insert_position,
                           last_position, list_position, position_of, repeated, reserved)
from .list_orders import (ascending_order, descending_order, keyed_order,
                          lexicographic_picker)
from .rewrites import array_from_tuple
from .statics import ListLiteral, RangeArgs, StaticObject

nbt = nb.types
ir = nb.ir

_POSITIONS = ArrayType(int64, 1, "C")  # where entries go (an order)

# Python's calls that read a list as numba does an array of its entries
_READS = {np.array: "copy", np.asarray: "copy", sum: "sum", len: "len", min: "min", max: "max"}


@dataclass(eq=False)
class GrowingList:
    """A list the kernel appends to: its element type and the block that builds it. Its state
    where the import stands is (buffers, length): one buffer for a list of numbers, one per
    tuple entry for a list of tuples; flat, places and used for a list of arrays."""

    element: object  # moonlite type: a scalar, or a tuple of scalars
    label: int  # numba label of the block holding the `build_list`
    plan: object = None  # the LoopPlan of its appends, if they have one
    reserved: bool = False  # room for the plan's loop reserved
    named: object = None  # the numba namedtuple type of its entries, if they are namedtuples

    @property
    def holds_tuples(self) -> bool:
        return isinstance(self.element, TupleType)

    @property
    def columns(self) -> tuple:
        """The scalar type each buffer holds."""
        return self.element.elements if self.holds_tuples else (self.element,)

    @property
    def holds_arrays(self) -> bool:
        return isinstance(self.element, ArrayType)

    @property
    def buffer_types(self) -> tuple:
        if self.holds_arrays:  # flat, places, used (array_lists.py)
            return array_list_buffer_types(self.element)
        return tuple(ArrayType(c, 1, "C") for c in self.columns)


def _is_number(t) -> bool:
    return isinstance(t, (nbt.Float, nbt.Integer, nbt.Boolean))


def _appendable(element) -> bool:
    """Numbers, or tuples (namedtuples too) of numbers."""
    return _is_number(element) or (isinstance(element, nbt.BaseTuple) and len(element) > 0
                                   and all(_is_number(t) for t in element))


@dataclass(eq=False)
class ListMethod:
    """`ys.append` and friends, consumed by the call."""

    target: GrowingList
    name: str


class GrowingLists(ArrayLists):
    """Mixin of `Importer`: the state of each growing list, block by block."""

    def _init_growing_lists(self) -> None:
        self._init_array_lists()
        self.list_analysis = ListAnalysis(self.fir.blocks, self.typemap, self.returns_list)
        self.appended = self.list_analysis.growing
        self.started_loops: dict = {}  # alias-class root of an iterator -> its CountedLoop
        self.list_state: dict = {}  # GrowingList -> (buffer, length) where the import stands
        self.list_end_states: dict = {}  # numba label -> that dict at the block's end
        self.list_phis: list = []  # (label, GrowingList, buffer phi, length phi)
        self.pending_list_phis: list = []  # (numba phi, the GrowingList it was bound to)
        self.lists_built: list = []  # every GrowingList, in the order the import made them
        cfg = self.list_analysis.cfg
        self._entry_label = cfg.entry_point()
        for lst in self.given_lists:  # the list parameters of a column form
            lst.label = self._entry_label
            self.lists_built.append(lst)
        self._numba_preds = {label: [p for p, _ in cfg.predecessors(label)]
                             for label in self.fir.blocks}
        self._numba_doms = cfg.dominators()

    def _enter_block_lists(self, label) -> None:
        """The state of every list built in a block dominating `label`, as the block starts.
        A column form's list parameters keep the state they are given (the helper may not
        change them), except in the list-changing form, where they flow as lists built in the
        entry block do (`list_helpers.py`)."""
        self.list_state = {}
        preds = self._numba_preds.get(label, [])
        kept = () if self.changes_lists else self.given_lists
        for lst in self.lists_built:
            if lst.label == label or lst.label not in self._numba_doms[label] or lst in kept:
                continue
            if len(preds) == 1 and preds[0] in self.list_end_states:
                state = self.list_end_states[preds[0]].get(lst)
                if state is not None:
                    self.list_state[lst] = state
                continue
            buffers = tuple(self.b.phi(t, hint="list") for t in lst.buffer_types)
            length = self.b.phi(int64, hint="len")
            self.list_phis.append((label, lst, buffers, length))
            self.list_state[lst] = (tuple(phi.result for phi in buffers), length.result)
        if kept or label == self._entry_label:
            self.list_state.update(self.given_lists)  # (kept as they are: see below)

    def _leave_block_lists(self, label) -> None:
        self.list_end_states[label] = dict(self.list_state)

    def _fill_list_phis(self, preds: dict, label_of: dict) -> None:
        for label, lst, buffers, length in self.list_phis:
            block = self.blocks[label]
            for pred in preds[block]:
                state = self.list_end_states.get(label_of.get(pred), {}).get(lst)
                if state is None:
                    state = (tuple(self._undef(t) for t in lst.buffer_types),
                             self._undef(int64))
                for phi, buffer in zip(buffers, state[0]):
                    phi.add_incoming(pred, buffer)
                length.add_incoming(pred, state[1])

    def list_phi(self, expr, target) -> GrowingList:
        """numba's phi of a list variable: the one growing list every incoming value names
        (checked once all blocks are imported: `_check_list_phis`)."""
        bound = {id(b): b for b in (self.bindings.get(v.name) for v in expr.incoming_values
                                    if isinstance(v, ir.Var)) if b is not None}
        lists = [b for b in bound.values() if isinstance(b, GrowingList)]
        if len(lists) != 1 or len(bound) != 1:
            self._refuse_rebound_list()
        self.pending_list_phis.append((expr, lists[0]))
        return lists[0]

    def _check_list_phis(self) -> None:
        for expr, lst in self.pending_list_phis:
            for v in expr.incoming_values:
                if isinstance(v, ir.Var) and self.bindings.get(v.name) is not lst:
                    self._refuse_rebound_list()

    def _refuse_rebound_list(self):
        self.unsupported("a list variable bound to different lists on different paths "
                         "(a list, or a list rebuilt in a loop or a branch)",
                         "give each list its own name, or fill a preallocated numpy array")

    def _remove_trivial_list_phis(self) -> None:
        """Drop the list phis whose incoming values are all one value (or the phi itself): at
        most joins the list is the same before and after, and a buffer phi left at a loop
        header would make the reverse pass tape the buffer at every iteration."""
        phis = [phi for _, _, buffers, length in self.list_phis for phi in (*buffers, length)]
        same: dict = {}

        def resolve(v):
            while v in same:
                v = same[v]
            return v

        changed = True
        while changed:
            changed = False
            for phi in phis:
                incoming = {resolve(v) for v in phi.operands} - {phi.result}
                if phi.result not in same and len(incoming) == 1:
                    same[phi.result] = incoming.pop()
                    changed = True
        if not same:
            return
        for op in list(self.b.function.ops()):
            op.operands = tuple(resolve(v) for v in op.operands)
        for phi in phis:
            if phi.result in same:
                phi.block.ops.remove(phi)

    # --- building and appending ------------------------------------------------------------------

    def _build_growing_list(self, expr, target) -> GrowingList:
        element = self.typemap[target.name].dtype
        if appendable_array(element):
            lst = self._new_list(element)
            self.list_state[lst] = self.empty_array_list(lst)
            for var in expr.items:
                self.append_entry(lst, self.value(var))
            return lst
        if not _appendable(element):
            self.unsupported(f"appending to a list of {element}",
                             "append numbers, tuples of numbers or arrays of numbers (a "
                             "1-D array typed Fortran-ordered: append its copy), or fill a "
                             "preallocated numpy array")
        lst = self._new_list(element, self.list_analysis.plans.get(target.name))
        room = self.b.const(max(len(expr.items), 4), int64)
        buffers = tuple(self.b.call(np.empty, [room, self.dtype_ref(c.to_numba())], None, t)
                        for c, t in zip(lst.columns, lst.buffer_types))
        for k, var in enumerate(expr.items):
            for buffer, entry in zip(buffers, self._entry_columns(lst, self.value(var))):
                self.b.setitem(buffer, self.b.const(k, int64), entry)
        self.list_state[lst] = (buffers, self.b.const(len(expr.items), int64))
        loop = self.started_loops.get(lst.plan.iterator) if lst.plan else None
        if loop is not None:  # a comprehension: numba calls getiter before build_list
            self._reserve(lst, loop)
        return lst

    def loop_started(self, iterator_name: str, loop) -> None:
        """A for loop's iterator is made: reserve room in the lists it appends to."""
        root = self.list_analysis.root(iterator_name)
        self.started_loops[root] = loop
        for lst in list(self.list_state):
            if lst.plan is not None and lst.plan.iterator == root:
                self._reserve(lst, loop)

    def _reserve(self, lst: GrowingList, loop) -> None:
        buffers, length = self.list_state[lst]
        trips = self.b.call(range_length, [loop.start, loop.stop, loop.step], None, int64)
        extra = self.b.mul(trips, self.b.const(lst.plan.appends_per_iteration, int64))
        buffers = tuple(self.b.call(reserved, [buffer, length, extra], None, buffer.type)
                        for buffer in buffers)
        self.list_state[lst] = (buffers, length)
        lst.reserved = True

    def repeated_list(self, expr, target) -> GrowingList:
        """`ys * n` (or `n * ys`) of a list literal or a list built by append, of numbers or
        tuples of numbers: a new list holding ys's entries n times over (none for n <= 0),
        each buffer `repeated` (`[v] * n`: `np.full(n, v)`). A list of arrays repeated would
        hold one array n times, which moonlite's rows (copies) cannot be."""
        lhs, rhs = self.lookup(expr.lhs), self.lookup(expr.rhs)
        source, count = (lhs, expr.rhs) if isinstance(lhs, (ListLiteral, GrowingList)) \
            else (rhs, expr.lhs)
        element = self.typemap[target.name].dtype
        if not isinstance(source, (ListLiteral, GrowingList)) or not _appendable(element):
            self.unsupported("repeating a list other than of numbers or tuples of numbers",
                             "fill a numpy array (np.full, np.tile)")
        lst = self._new_list(element)
        n = self.b.call(max, [self._coerce(self.value(count), int64), self.b.const(0, int64)],
                        None, int64)
        if isinstance(source, ListLiteral) and len(source.items) == 1 and _is_number(element):
            value = self._coerce(source.items[0], lst.element)
            self.list_state[lst] = ((self.b.call(np.full, [n, value], None,
                                                 lst.buffer_types[0]),), n)
            return lst
        heads, length = self._repeated_heads(lst, source)
        buffers = tuple(self.b.call(repeated, [head, n], None, head.type) for head in heads)
        self.list_state[lst] = (buffers, self.b.mul(length, n))
        return lst

    def _repeated_heads(self, lst: GrowingList, source) -> tuple:
        """The entries a repetition repeats, one array per buffer, and their count."""
        if isinstance(source, GrowingList):
            buffers, length = self._state(source)
            return tuple(self._head(buffer, length) for buffer in buffers), length
        items = [item for item in source.items]
        count = self.b.const(len(items), int64)
        heads = tuple(self.b.call(np.empty, [count, self.dtype_ref(c.to_numba())], None, t)
                      for c, t in zip(lst.columns, lst.buffer_types))
        for k, item in enumerate(items):
            for head, entry in zip(heads, self._entry_columns(lst, item)):
                self.b.setitem(head, self.b.const(k, int64), entry)
        return heads, count

    def _new_list(self, element, plan=None) -> GrowingList:
        named = element if isinstance(element, nbt.BaseNamedTuple) else None
        lst = GrowingList(from_numba(element), self._label, plan, named=named)
        self.lists_built.append(lst)
        return lst

    def _entry_columns(self, lst: GrowingList, value: Value) -> list:
        """What an entry puts in each buffer: the number, or each entry of the tuple."""
        if not lst.holds_tuples:
            return [self._coerce(value, lst.element)]
        return [self._coerce(self.b.tuple_getitem(value, j), c)
                for j, c in enumerate(lst.columns)]

    def _entry_at(self, b, lst: GrowingList, buffers: tuple, position: Value) -> Value:
        """The entry at `position` (checked), as the list holds it: a number, the tuple of
        the buffers' entries there, or an array (`array_lists.py`)."""
        if lst.holds_arrays:
            return self.array_entry_at(b, lst, buffers, position)
        columns = [b.getitem(buffer, position, c) for buffer, c in zip(buffers, lst.columns)]
        if not lst.holds_tuples:
            return columns[0]
        return b.build_tuple(columns, named=lst.named)

    def dtype_ref(self, element) -> Value:
        """`np.float64` (...) as an argument of `np.empty`, for a numba scalar type."""
        return self.b.global_ref(np.dtype(str(element)).type,
                                 from_numba(nbt.NumberClass(element)))

    def _state(self, lst: GrowingList) -> tuple:
        state = self.list_state.get(lst)
        if state is None:
            self.unsupported("a list read where it may not have been built (built in a loop or "
                             "a branch, read after it)", "build the list before the loop")
        return state

    def _list_method_call(self, method: ListMethod, expr, target):
        lst, args = method.target, expr.args
        if lst.holds_arrays and method.name in ("sort", "remove", "index", "count"):
            self.refuse_array_list(f"and then {method.name}() called on it (it compares arrays)")
        if method.name == "sort" and not args and not expr.vararg:
            options = self._sort_options(expr.kws)
            if options is not None:
                self._sort(lst, *options)
                return self.b.const(None, none)
        if expr.kws or expr.vararg:
            args = None
        elif method.name == "append" and len(args) == 1:
            return self._append(lst, self.value(args[0]))
        elif method.name == "pop" and not args:
            return self._pop(lst)
        elif method.name == "pop" and len(args) == 1:
            return self._pop_at(lst, self._entry_position(lst, self.value(args[0])))
        elif method.name == "insert" and len(args) == 2:
            return self._insert(lst, self.value(args[0]), self.value(args[1]))
        elif method.name == "remove" and len(args) == 1:
            return self._remove(lst, self.value(args[0]))
        elif method.name in ("index", "count") and len(args) == 1:
            return self._search(lst, method.name, self.value(args[0]))
        elif method.name == "clear" and not args:
            buffers, _ = self._state(lst)
            self.list_state[lst] = (buffers, self.b.const(0, int64))
            return self.b.const(None, none)
        elif method.name == "extend" and len(args) == 1:
            self.extend_list(lst, self.lookup(args[0]), "list.extend()")
            return self.b.const(None, none)
        elif method.name == "reverse" and not args and lst.holds_arrays:
            self.reverse_entries(lst)
            return self.b.const(None, none)
        elif method.name == "reverse" and not args:
            buffers, length = self._state(lst)
            last = self.b.sub(length, self.b.const(1, int64))
            backwards = self.b.call(np.arange, [last, self.b.const(-1, int64),
                                                self.b.const(-1, int64)], None, _POSITIONS)
            self._gather(lst, backwards)
            return self.b.const(None, none)
        elif method.name == "copy" and not args:
            return self._copied(lst)
        self.unsupported(f"list.{method.name}() on a list the kernel builds",
                         "append(), pop(), pop(i), insert(i, v), remove(v), index(v), "
                         "count(v), clear(), extend([...]), reverse(), copy() and sort() "
                         "(key= an njit function, reverse= a constant) are supported: fill a "
                         "numpy array instead")

    def _sort_options(self, kws) -> "tuple | None":
        """`sort()`'s keywords as (key, descending): key an njit function or None, reverse a
        constant; None when they are anything else."""
        key, descending = None, False
        for name, var in kws:
            bound = self.lookup(var)
            if name == "key" and isinstance(bound, StaticObject) \
                    and nb.is_njit_dispatcher(bound.obj):
                key = bound.obj
            elif name == "key" and isinstance(bound, Value) and bound.type == none:
                key = None
            elif name == "reverse":
                found = self.fir.get_definition(var)
                if not isinstance(found, ir.Const) or not isinstance(found.value, (bool, int)):
                    return None  # (an ir.Expr raises KeyError, not AttributeError, for `.value`)
                descending = bool(found.value)
            else:
                return None
        return key, descending

    def _sort(self, lst: GrowingList, key, descending: bool) -> None:
        """`ys.sort(key=key, reverse=descending)`: the entries gathered in the order numba's own
        sort gives them (`list_orders.py`) and written back over the buffers' heads, array
        writes like any other."""
        if lst.holds_arrays:
            self.refuse_array_list("sorted (it compares arrays)")
        buffers, length = self._state(lst)
        heads = [self._head(buffer, length) for buffer in buffers]
        if key is None:
            if lst.holds_tuples:
                self._refuse_tuple_list("sorted without a key (its entries compare as tuples)")
            order_of = descending_order if descending else ascending_order
        else:
            order_of = keyed_order(key, self._numba_element(lst), descending)
            if order_of is None:
                self.unsupported(f"sorting by the key {key.__name__}(), which does not return "
                                 f"a number", "sort by a key returning a number")
        self._gather(lst, self.b.call(order_of, heads, None, _POSITIONS))

    def _gather(self, lst: GrowingList, order: Value) -> None:
        """The list's entries rewritten in place in the order of the positions `order`."""
        buffers, length = self._state(lst)
        none_ = self.b.const(None, none)
        for buffer, column in zip(buffers, lst.columns):
            moved = self.b.getitem(self._head(buffer, length), order, ArrayType(column, 1, "C"))
            self.b.setitem(buffer, self._slice(none_, length), moved)

    def _numba_element(self, lst: GrowingList):
        return lst.named if lst.named is not None else lst.element.to_numba()

    def _copied(self, lst: GrowingList, part: "Value | None" = None) -> GrowingList:
        """A new list holding `lst`'s entries (`ys.copy()`, `list(ys)`), or those the slice
        `part` selects (`ys[a:b:c]`, sliced as NumPy slices, which is as Python slices a list):
        copies of the buffers' heads."""
        if lst.holds_arrays:
            return self.copied_array_list(lst, part)
        buffers, length = self._state(lst)
        copies = []
        for buffer in buffers:
            entries = self._head(buffer, length)
            if part is not None:
                entries = self.b.getitem(entries, part)
            copies.append(self.b.call(np.copy, [entries], None, buffer.type))
        copy = self._new_list(self._numba_element(lst))
        size = length if part is None else self.b.call(len, [copies[0]], type=int64)
        self.list_state[copy] = (tuple(copies), size)
        return copy

    def extend_list(self, lst: GrowingList, source, what: str) -> None:
        """`ys.extend(zs)` and `ys += zs` (`what`) with zs a list the kernel builds (ys itself
        too) holding entries of ys's type, or a 1-D array of them for a list of numbers: the
        buffers' room reserved, zs's entries written after ys's. A list literal or a tuple of
        entries is appended entry by entry."""
        if lst.holds_arrays:
            return self.extend_array_list(lst, source, what)
        if isinstance(source, ListLiteral) or isinstance(source, Value) \
                and isinstance(source.type, TupleType) and not lst.holds_tuples:
            items = source.items if isinstance(source, ListLiteral) else [
                self.b.tuple_getitem(source, k) for k in range(len(source.type))]
            for item in items:
                self._append(lst, item)
            return
        columns, count = self._entries_of(source, lst, what)
        buffers, length = self._state(lst)
        longer = self.b.add(length, count)
        buffers = tuple(self.b.call(reserved, [buffer, length, count], None, buffer.type)
                        for buffer in buffers)
        for buffer, entries in zip(buffers, columns):
            self.b.setitem(buffer, self._slice(length, longer), entries)
        self.list_state[lst] = (buffers, longer)

    def _entries_of(self, source, lst: GrowingList, what: str) -> tuple:
        """(the entries of `source` as one array per buffer of `lst`, their count)."""
        if isinstance(source, GrowingList) and source.element == lst.element:
            buffers, length = self._state(source)
            heads = [self._head(buffer, length) for buffer in buffers]
            if source is lst:  # (its own entries: read before the room is made)
                heads = [self.b.call(np.copy, [h], None, h.type) for h in heads]
            return heads, length
        if isinstance(source, Value) and not lst.holds_tuples \
                and source.type == ArrayType(lst.element, 1, source.type.layout):
            return [source], self.b.call(len, [source], type=int64)
        self.unsupported(f"{what} of a list of {lst.element} with "
                         f"{getattr(source, 'type', 'another kind of list')}",
                         "extend it with a list the kernel builds holding the same type of "
                         "entries, or a 1-D array of them")

    def joined_lists(self, first, second) -> GrowingList:
        """`ys + zs` of two lists the kernel builds: a copy of ys extended with zs."""
        joined = self._copied(first)
        self.extend_list(joined, second, "joining with +")
        return joined

    def _copying_call(self, fn, expr):
        """`list(...)`, `sorted(...)` (key= and reverse= as `sort`) of a list the kernel builds,
        a 1-D array, a `range` or a tuple of numbers: a new list; None for anything else."""
        source = self.lookup(expr.args[0])
        if isinstance(source, GrowingList):
            copy = self._copied(source)
        else:
            entries = self._entries_array(source)
            if entries is None:
                return None
            copy = self._new_list(entries.type.dtype.to_numba())
            self.list_state[copy] = ((entries,), self.b.call(len, [entries], type=int64))
        if fn is sorted:
            options = self._sort_options(expr.kws)
            if options is None:
                self.unsupported("sorted() with keywords other than key= (an njit function) "
                                 "and reverse= (a constant)", "sort by an njit key function")
            self._sort(copy, *options)
        elif expr.kws:
            return None
        return copy

    def _entries_array(self, source) -> "Value | None":
        """A new 1-D array of the numbers `source` holds: a copy of a 1-D array, `np.arange` of
        a range of int64, a tuple of numbers of one type written into an array; else None."""
        if isinstance(source, RangeArgs):
            bounds = [source.start, source.stop, source.step]
            if all(v.type == int64 for v in bounds):
                return self.b.call(np.arange, bounds, None, ArrayType(int64, 1, "C"))
            return None
        if not isinstance(source, Value):
            return None
        t = source.type
        if isinstance(t, ArrayType) and t.ndim == 1 and t.dtype.is_scalar:
            return self.b.call(np.copy, [source], None, ArrayType(t.dtype, 1, "C"))
        if isinstance(t, TupleType) and len(t) > 0 and len(set(t.elements)) == 1 \
                and t.elements[0].is_scalar:
            return array_from_tuple(self.b, source, ArrayType(t.elements[0], 1, "C"))
        return None

    def _pop(self, lst: GrowingList) -> Value:
        """`ys.pop()`: the last entry, the length one less (IndexError on an empty list)."""
        buffers, length = self._state(lst)
        last = self.b.call(last_position, [length], None, int64)
        self.list_state[lst] = (buffers, last)
        return self._entry_at(self.b, lst, buffers, last)

    def _pop_at(self, lst: GrowingList, position: Value) -> Value:
        """`ys.pop(i)` (`position`: i checked): the entry there, then the gap closed."""
        buffers, _ = self._state(lst)
        entry = self._entry_at(self.b, lst, buffers, position)
        self._close_gap(lst, position)
        return entry

    def _close_gap(self, lst: GrowingList, position: Value) -> None:
        """The entries after `position` moved one place down (array copies and writes, which
        every mode differentiates), the length one less."""
        if lst.holds_arrays:
            return self.close_entry_gap(lst, position)
        buffers, length = self._state(lst)
        after = self.b.add(position, self.b.const(1, int64))
        last = self.b.sub(length, self.b.const(1, int64))
        for buffer in buffers:
            moved = self.b.call(np.copy, [self._part(buffer, after, length)], None, buffer.type)
            self.b.setitem(buffer, self._slice(position, last), moved)
        self.list_state[lst] = (buffers, last)

    def _insert(self, lst: GrowingList, index: Value, value: Value):
        """`ys.insert(i, v)`: the entries from i on moved one place up, v written at i (i from
        the end if negative, clamped to the list, as Python does)."""
        if not isinstance(index.type, IntType):
            self.unsupported(f"list.insert() at a {index.type} position",
                             "insert at an integer position")
        if lst.holds_arrays:
            self.insert_entry(lst, index, value)
            return self.b.const(None, none)
        buffers, length = self._state(lst)
        position = self.b.call(insert_position, [self._coerce(index, int64), length], None,
                               int64)
        buffers = tuple(self.b.call(grown, [buffer, length], None, buffer.type)
                        for buffer in buffers)
        after = self.b.add(position, self.b.const(1, int64))
        longer = self.b.add(length, self.b.const(1, int64))
        for buffer, entry in zip(buffers, self._entry_columns(lst, value)):
            moved = self.b.call(np.copy, [self._part(buffer, position, length)], None,
                                buffer.type)
            self.b.setitem(buffer, self._slice(after, longer), moved)
            self.b.setitem(buffer, position, entry)
        self.list_state[lst] = (buffers, longer)
        return self.b.const(None, none)

    def _remove(self, lst: GrowingList, value: Value):
        """`ys.remove(v)` of a list of numbers: `pop` at the first entry equal to v."""
        if lst.holds_tuples:
            self._refuse_tuple_list("searched by remove() (its entries compare as tuples)")
        buffers, length = self._state(lst)
        # (compared as numba compares them: an int list entry equals a float 2.0)
        found = self.b.call(position_of, [self._head(buffers[0], length), value], None, int64)
        self._close_gap(lst, found)  # (the entry removed is not read)
        return self.b.const(None, none)

    def _search(self, lst: GrowingList, name: str, value: Value) -> Value:
        """`ys.index(v)` (ValueError when missing) and `ys.count(v)` of a list of numbers."""
        if lst.holds_tuples:
            self._refuse_tuple_list(f"searched by {name}() (its entries compare as tuples)")
        buffers, length = self._state(lst)
        search = index_of if name == "index" else count_of
        return self.b.call(search, [self._head(buffers[0], length), value], None, int64)

    def _slice(self, start: Value, stop: Value) -> Value:
        return self.b.build_slice(start, stop, self.b.const(None, none))

    def _part(self, buffer: Value, start: Value, stop: Value) -> Value:
        return self.b.getitem(buffer, self._slice(start, stop), buffer.type)

    def _append(self, lst: GrowingList, value: Value):
        if lst.holds_arrays:
            self.append_entry(lst, value)
            return self.b.const(None, none)
        buffers, length = self._state(lst)
        columns = self._entry_columns(lst, value)
        if lst.reserved and self._label in lst.plan.body:
            # one check: the buffers are allocated, reserved and grown together, to one size
            self.b.call(check_room, [buffers[0], length], None, none)
        else:
            buffers = tuple(self.b.call(grown, [buffer, length], None, buffer.type)
                            for buffer in buffers)
        for buffer, entry in zip(buffers, columns):
            self.b.setitem(buffer, length, entry)
        self.list_state[lst] = (buffers, self.b.add(length, self.b.const(1, int64)))
        return self.b.const(None, none)

    # --- reads ------------------------------------------------------------------------------------

    def list_entries(self, lst: GrowingList, use: str) -> Value:
        """`buffer[:length]`: the entries of a list of numbers as an array view (`use` names
        what reads it, for the refusal of a list of tuples, which has no such view)."""
        buffers, length = self._state(lst)
        if lst.holds_tuples:
            self._refuse_tuple_list(use)
        if lst.holds_arrays:
            self.refuse_array_list(use)
        return self._head(buffers[0], length)

    def _head(self, buffer: Value, length: Value) -> Value:
        none_ = self.b.const(None, none)
        return self.b.getitem(buffer, self.b.build_slice(none_, length, none_), buffer.type)

    def _refuse_tuple_list(self, use: str):
        self.unsupported(f"a list of tuples built by append {use}",
                         "read its entries by index or in a for loop, or fill a preallocated "
                         "2-D numpy array")

    def list_source(self, lst: GrowingList):
        """What a for loop (or zip, enumerate) walks: the entries of a list of numbers as an
        array view, a list of tuples as the tuples rebuilt at each index."""
        if lst.holds_arrays:
            return self.array_list_source(lst)
        if not lst.holds_tuples:
            return self.list_entries(lst, "walked")
        buffers, length = self._state(lst)
        return IndexSource(lambda b: length,
                           lambda b, k: self._entry_at(b, lst, buffers, k))

    def unpack_list(self, lst: GrowingList, count: int) -> Value:
        """`a, b = ys`: the tuple of the entries (ValueError if there are not `count`)."""
        buffers, length = self._state(lst)
        self.b.call(check_unpack_length, [length, self.b.const(count, int64)])
        return self.b.build_tuple([self._entry_at(self.b, lst, buffers, self.b.const(k, int64))
                                   for k in range(count)])

    def _entry_position(self, lst: GrowingList, index: Value) -> Value:
        if not isinstance(index.type, IntType):
            self.unsupported(f"indexing a list with {index.type}", "index it with an integer")
        _, length = self._state(lst)
        return self.b.call(list_position, [self._coerce(index, int64), length], None, int64)

    def list_getitem(self, lst: GrowingList, index: Value):
        if isinstance(index.type, SliceType):  # ys[a:b]: a new list
            return self._copied(lst, index)
        buffers, _ = self._state(lst)
        return self._entry_at(self.b, lst, buffers, self._entry_position(lst, index))

    def list_setitem(self, lst: GrowingList, index: Value, value: Value) -> None:
        position = self._entry_position(lst, index)
        if lst.holds_arrays:
            return self.replace_entry(lst, position, value)
        buffers, _ = self._state(lst)
        for buffer, entry in zip(buffers, self._entry_columns(lst, value)):
            self.b.setitem(buffer, position, entry)

    def call_reading_a_list(self, fn, expr, target):
        """`np.array(ys)`, `sum(ys)`, `len(ys)`, `min(ys)`, `max(ys)` of a growing list, or None
        if the call is no such read."""
        if (fn is list or fn is sorted) and len(expr.args) == 1 and expr.vararg is None:
            copied = self._copying_call(fn, expr)
            if copied is not None:
                return copied
        if len(expr.args) != 1 or expr.kws or expr.vararg is not None:
            return None
        lst = self.lookup(expr.args[0])
        kind = next((k for f, k in _READS.items() if f is fn), None) \
            if isinstance(lst, GrowingList) else None
        if kind is None:
            return None
        result_type = self.type_of(target)
        if kind == "len":
            return self._state(lst)[1]
        if lst.holds_arrays:
            self.refuse_array_list(f"given to {getattr(fn, '__name__', fn)}()")
        if lst.holds_tuples:
            return self._read_tuple_list(lst, kind, fn, result_type)
        entries = self.list_entries(lst, "read")
        if kind == "copy":
            return self.b.call(np.copy, [entries], None, result_type)
        reduce = {"sum": np.sum, "min": np.min, "max": np.max}[kind]
        reduced = int64 if kind == "sum" and isinstance(lst.element, BoolType) else lst.element
        return self._coerce(self.b.call(reduce, [entries], None, reduced), result_type)

    def _read_tuple_list(self, lst: GrowingList, kind: str, fn, result_type) -> Value:
        """`min(pts)`, `max(pts)`: the entry a lexicographic comparison picks (its position is
        an int, so the derivatives follow the entry picked); `np.asarray(pts)` of a list of
        tuples of one type: the 2-D array whose columns are the buffers (numba's own `np.array`
        of such a list does not compile)."""
        if kind in ("min", "max"):
            buffers, length = self._state(lst)
            pick = lexicographic_picker(len(buffers), kind)
            position = self.b.call(pick, [length, *buffers], None, int64)
            return self._entry_at(self.b, lst, buffers, position)
        if kind != "copy" or len(set(lst.columns)) != 1:
            self._refuse_tuple_list(f"given to {getattr(fn, '__name__', fn)}()")
        buffers, length = self._state(lst)
        shape = self.b.build_tuple([length, self.b.const(len(buffers), int64)])
        out = self.b.call(np.empty, [shape, self.dtype_ref(lst.columns[0].to_numba())], None,
                          result_type)
        none_ = self.b.const(None, none)
        every_row = self.b.build_slice(none_, none_, none_)
        for j, buffer in enumerate(buffers):
            column = self.b.build_tuple([every_row, self.b.const(j, int64)])
            self.b.setitem(out, column, self._head(buffer, length))
        return out
