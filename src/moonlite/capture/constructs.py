"""How the importer reads the containers and call forms of real kernels (issue #20): list
literals (read as the tuples of their items), arrays unpacked, `*args` parameters and `f(*t)`
calls, `a.flat` in loops, methods of jitclass instances, namedtuples built, `literal_unroll`
loops, lists built by append passed to njit helpers (as arrays, or to the helper's column
form: `list_helpers.py`). `Importer` inherits these; each
either gives ordinary IR that every AD mode already differentiates, or refuses the use it cannot
follow (a list literal passed on, a helper appending to a list it is given) with a message
naming it.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir import ops
from ..ir.core import Value
from ..ir.types import ArrayType, OpaqueType, TupleType, from_numba, int64
from ..ir.typing import TypingFailure, call_result_type
from ..errors import CaptureError, UnsupportedError
from . import array_lists, rewrites
from . import statics as st
from .iterators import check_unpack_length
from ..rules.jitclasses import is_numba_instance_type, maker_for
from .jitclasses import constructor_of, structref_fields
from .list_helpers import (ListArgument, RecursiveColumnForm, column_form, list_changing_form,
                           list_methods_called, list_returning_form, needs_column_form)
from .lists import GrowingList, _appendable

nbt = nb.types


class ConstructReads:
    """Mixin of `Importer` (it provides `b`, `lookup`, `value`, `type_of`, `unsupported`,
    `_coerce`, `_const_value`)."""

    def build_namedtuple(self, cls, expr, target) -> Value:
        """`Pair(a, second=b)`: a namedtuple of the entries in field order (keywords put in
        place), each converted to its field's type as numba does."""
        named = self.typemap[target.name]
        fields = list(named.fields)
        given = dict(zip(fields, self._positional(expr)))
        given.update({name: self.value(v) for name, v in expr.kws})
        if set(given) != set(fields):  # (fields left to their defaults: numba 0.68 mis-reads them)
            self.unsupported(f"building the namedtuple {cls.__name__} without every field",
                             "pass every field")
        items = [self._coerce(given[name], from_numba(t)) for name, t in zip(fields, named.types)]
        return self.b.build_tuple(items, named=nbt.unliteral(named))

    # `for v in literal_unroll(t)`: numba's rewrite (before typing) loops over range(len(t)),
    # and gives each type of entry a branch, taken when the index is `in` a tuple of that
    # type's positions, which reads the entry with `typed_getitem(t, dtype, index)`.

    def call_literal_unroll(self, expr, target):
        (value,) = [self.value(a) for a in expr.args]
        return value

    def contains_index(self, container: Value, item: Value) -> Value:
        """`item in (k0, k1, ...)` for an integer and a tuple of integers: a chain of `==`."""
        found = None
        for k in range(len(container.type)):
            equal = self.b.binary(ops.Eq, item, self.b.tuple_getitem(container, k))
            found = equal if found is None else self.b.select(found, found, equal)
        return found if found is not None else self.b.const(False)

    def ex_typed_getitem(self, expr, target):
        """The entry of type `dtype` at the loop's index: the one entry of that type, a select
        among several scalars of it, or, for several arrays or tuples of it
        (`literal_unroll((W1, b1, W2))`), the entry of the tuple of them at the place the index
        names, picked at run time (as `for W in layers` does)."""
        value, index = self.value(expr.value), self.value(expr.index)
        want = self.type_of(target)
        if not isinstance(value.type, TupleType):
            self.unsupported(f"typed_getitem on {value.type}", "report this kernel")
        positions = [k for k, t in enumerate(value.type.elements) if t == want]
        if len(positions) == 1:
            return self.b.tuple_getitem(value, positions[0])
        if not positions:
            self.unsupported(f"literal_unroll over a tuple with no {want} entry",
                             "report this kernel")
        if not want.is_scalar:
            return self._entry_of_type_at(value, positions, index, want)
        entry = self.b.tuple_getitem(value, positions[-1])
        for k in reversed(positions[:-1]):
            hit = self.b.binary(ops.Eq, index, self.b.const(k, index.type))
            entry = self.b.select(hit, self.b.tuple_getitem(value, k), entry)
        return entry

    def _entry_of_type_at(self, value: Value, positions: list, index: Value, want) -> Value:
        """`value[index]`, `index` one of `positions` (the entries of type `want`): the tuple
        of those entries indexed at run time by the place of `index` among them."""
        same = self.b.build_tuple([self.b.tuple_getitem(value, k) for k in positions])
        place = self.b.const(len(positions) - 1, index.type)
        for j, k in reversed(list(enumerate(positions[:-1]))):
            hit = self.b.binary(ops.Eq, index, self.b.const(k, index.type))
            place = self.b.select(hit, self.b.const(j, index.type), place)
        return self.b.getitem(same, place, type=want)

    def ex_build_list(self, expr, target):
        if target.name in self.appended:
            return self._build_growing_list(expr, target)
        element = self.typemap[target.name].dtype
        items = []
        for var in expr.items:
            bound = self.lookup(var)
            items.append(bound if isinstance(bound, st.ListLiteral)
                         else self._coerce(self.value(var), from_numba(element)))
        return st.ListLiteral(items)

    def _list_as_tuple(self, literal: st.ListLiteral) -> Value:
        return self.b.build_tuple([self._list_as_tuple(item) if isinstance(item, st.ListLiteral)
                                   else item for item in literal.items])

    def _list_entry(self, literal: st.ListLiteral, index):
        if not isinstance(index, int) or not -len(literal.items) <= index < len(literal.items):
            self.unsupported(f"indexing a list literal of {len(literal.items)} entries with "
                             f"{index!r}", "index it with an integer in range")
        return literal.items[index]

    def ex_exhaust_iter(self, expr, target):
        """`a, b = v`: a tuple as it is, an array's or a list's entries, a list of tuples'."""
        bound = self.lookup(expr.value)
        if isinstance(bound, GrowingList) and (bound.holds_tuples or bound.holds_arrays):
            return self.unpack_list(bound, expr.count)
        value = (self._list_as_tuple(bound) if isinstance(bound, st.ListLiteral)
                 else self.list_entries(bound, "unpacked") if isinstance(bound, GrowingList)
                 else self.value(expr.value))
        if isinstance(value.type, ArrayType) and value.type.ndim > 0:
            return self._unpack_array(value, expr.count, target)
        if not isinstance(value.type, TupleType):
            self.unsupported(f"unpacking a value of type {value.type}",
                             "unpack tuples and arrays only")
        return value

    def _unpack_array(self, value: Value, count: int, target) -> Value:
        """`a, b = x` for an array x: its length checked (numba raises ValueError too), then a
        tuple of x[0], x[1], ... (entries, or rows of a 2-D array), read as any getitem."""
        self.b.call(check_unpack_length, [self.b.call(len, [value], type=int64),
                                          self.b.const(count, int64)])
        rows = self.type_of(target).elements
        return self.b.build_tuple([self.b.getitem(value, self.b.const(k, int64), rows[k])
                                   for k in range(count)])

    def _jitclass_method_call(self, method: st.BoundMethod, expr, target):
        """`obj.method(...)` of a jitclass instance is a call of the method's njit function with
        `obj` first (numba compiles it so; a static method without it): AD passes then see an
        njit callee like any other."""
        return self._instance_method_call(*jitclass_method(method), method, expr, target)

    def overloaded_method(self, method: st.BoundMethod, expr):
        """The njit function numba compiles for `obj.method(...)` when the method of a structref
        or jitclass instance comes from `@overload_method` (how structref methods are
        written), else None. Called as a jitclass method is, so a method writing fields of
        the instance is read through like one."""
        t = method.receiver.type
        if not (isinstance(t, OpaqueType) and is_numba_instance_type(t.numba_type)) \
                or expr.vararg:
            return None
        args = [self.typemap[v.name] for v in expr.args]
        kws = {name: self.typemap[v.name] for name, v in expr.kws}
        return nb.overload_method_impl(self.typemap[expr.func.name], (t.numba_type, *args), kws)

    def _instance_method_call(self, fn, takes_self: bool, method: st.BoundMethod, expr,
                              target):
        args = ([method.receiver] if takes_self else []) + self._positional(expr)
        kws = {name: self.value(v) for name, v in expr.kws}
        if kws:
            folded = rewrites.fold_keywords(fn, args, kws, self._const_value)
            if folded is None:
                self.unsupported(f"the method .{method.name}() called with keywords it cannot "
                                 "take by position", "pass the arguments by position")
            args = folded
        return self.b.call(fn, args, None, self.type_of(target))

    def jitclass_construction(self, expr, target):
        """`Box(a, b)` as `make(fields(a, b))` (jitclasses.py), or None to keep numba's own
        constructor (an `__init__` that does more than set fields)."""
        instance = self.typemap[target.name]
        if isinstance(instance, nbt.StructRef):
            return self._structref_construction(expr, target, instance)
        ctor = constructor_of(instance) if isinstance(instance, nbt.ClassInstanceType) else None
        if ctor is None:
            return None
        args = self._positional(expr)
        kws = {name: self.value(v) for name, v in expr.kws}
        if kws:
            args = rewrites.fold_keywords(ctor.fields, args, kws, self._const_value)
            if args is None:
                return None
        try:
            fields_type = call_result_type(ctor.fields, [a.type for a in args])
        except TypingFailure:
            return None  # e.g. an array field read before it is set
        fields = self._as_declared(self.b.call(ctor.fields, args, None, fields_type), instance)
        return self.b.call(ctor.make, [fields], None, from_numba(instance))

    def _as_declared(self, fields, instance):
        """The fields tuple with each number converted to its field's declared type, as
        `make` (and numba's own setattr) would convert it: `Box(1)` and `Box(x)` then build
        from tuples of one type, so a phi choosing between them reads through them
        (`ad/instances.py`). Unchanged when every entry has its field's type already."""
        declared = [from_numba(t) for t in instance.struct.values()]
        entries = [self.b.tuple_getitem(fields, k) for k in range(len(declared))]
        if all(e.type == t or not (e.type.is_scalar and t.is_scalar)
               for e, t in zip(entries, declared)):
            return fields
        return self.b.build_tuple([self._coerce(e, t) if e.type.is_scalar and t.is_scalar
                                   else e for e, t in zip(entries, declared)])

    def _structref_construction(self, expr, target, instance):
        """`State(x, v)` of a `structref.define_proxy` class as `make((x, v))`, the arguments
        converted to the fields' types; None for another constructor."""
        params = structref_fields(self.typemap.get(expr.func.name))
        if params is None or expr.vararg is not None or expr.kws:
            return None  # keywords are rare: numba's own call
        args = self._positional(expr)
        if len(args) != len(params) or tuple(instance.field_dict) != params:
            return None  # numba types only full calls
        ctor = maker_for(instance)
        fields = [self._coerce(a, from_numba(t))
                  for a, t in zip(args, instance.field_dict.values())]
        return self.b.call(ctor.make, [self.b.build_tuple(fields)], None, from_numba(instance))

    def _positional(self, expr) -> list:
        """A call's positional arguments, with a `*t` spread (`f(a, *t)`: t a tuple)."""
        if self._spreads_a_list(expr):  # min([a, b]) is min(a, b)
            return list(self.lookup(expr.args[0]).items)
        args = [self._argument(expr, a, k) for k, a in enumerate(expr.args)]
        if expr.vararg is None:
            return args
        spread = self.value(expr.vararg)
        if not isinstance(spread.type, TupleType):
            self.unsupported(f"a call spreading a {spread.type} with *", "spread a tuple, or "
                             "pass the entries explicitly")
        return args + [self.b.tuple_getitem(spread, k) for k in range(len(spread.type))]

    def _spreads_a_list(self, expr) -> bool:
        if len(expr.args) != 1 or expr.kws or expr.vararg is not None:
            return False
        callee, bound = self.lookup(expr.func), self.lookup(expr.args[0])
        return (isinstance(callee, st.StaticObject) and (callee.obj is min or callee.obj is max)
                and isinstance(bound, st.ListLiteral) and len(bound.items) >= 2
                and all(isinstance(i, Value) and i.type.is_scalar for i in bound.items))

    def _argument(self, expr, var, param) -> Value:
        """A call's argument (`param`: its position, or its keyword); a list literal as the
        tuple of its items where the callee treats the two alike, a list built by append as
        its entries where the callee is an njit helper."""
        bound = self.lookup(var)
        callee = self.lookup(expr.func)
        if isinstance(bound, GrowingList) and isinstance(callee, st.StaticObject) \
                and nb.is_njit_dispatcher(callee.obj):
            return self._list_for_helper(bound, callee.obj, param, var)
        if not isinstance(bound, st.ListLiteral):
            return self.value(var)
        if isinstance(callee, st.StaticObject) and nb.is_njit_dispatcher(callee.obj) \
                and self.list_analysis.root(var.name) in self.list_analysis.tuples_for_helpers:
            return self._array_literal_for_helper(bound, callee.obj)
        if not (isinstance(callee, st.StaticObject)
                and any(callee.obj is f for f in READS_A_LIST_AS_A_TUPLE)):
            self.value(var)  # refused, naming the construct
        return self._list_as_tuple(bound)

    def _array_literal_for_helper(self, literal: st.ListLiteral, helper) -> Value:
        """A list literal of arrays nothing changes, given to njit `helper`: the tuple of its
        arrays (`list_plans.ListAnalysis.tuples_for_helpers`), for which numba compiles the
        helper again. A tuple holds references as the list does, so the helper may write its
        arrays (a list of arrays built by append holds copies: writes into its entries are
        refused), and its arrays may differ in shape (the layers of an MLP)."""
        items = self._list_as_tuple(literal)
        if len({t for t in items.type.elements}) != 1:
            self.unsupported(f"a list literal of arrays of different types given to "
                             f"{helper.__name__}()", "give the helper a tuple of them")
        self.array_literal_tuples.add(items)
        return items

    def _check_helper_takes_tuples(self, fn, args: list) -> None:
        """numba compiles `fn` for the tuples list literals of arrays became, or the call is
        refused by name (the helper changes the list: `append`, ...)."""
        try:
            array_lists.capture_callee(fn, tuple(a.type.to_numba() for a in args))
        except CaptureError:
            self.unsupported(f"a list literal of arrays given to {fn.__name__}(), which numba "
                             "cannot compile for the tuple of them (moonlite passes a list "
                             "literal of arrays nothing changes as a tuple; a helper calling "
                             "list methods on it needs a list)",
                             "let the helper read the list only (len, ys[i], for), or append "
                             "in the kernel")

    def _list_for_helper(self, lst: GrowingList, helper, param, var) -> ListArgument:
        """A list built by append, passed to an njit helper (`helper_call`, once the call's
        other arguments are known, decides how; a helper calling list methods on it,
        `list_changing_call`)."""
        changed = bool(list_methods_called(helper.py_func, param))
        return ListArgument(lst, self.typemap[var.name], changed)

    def _column_arguments(self, args: list) -> tuple:
        """(numba's types of a call's arguments, the lists as lists; the arguments with each
        list spread into its buffers and length), for a helper's column forms."""
        argtypes = _column_argtypes(args)
        flat = []
        for a in args:
            if isinstance(a, ListArgument):
                buffers, length = self._state(a.lst)
                flat.extend([*buffers, length])
            else:
                flat.append(a)
        return argtypes, flat

    def helper_call(self, fn, args: list, kws: dict) -> tuple:
        """The callee and arguments of a call of njit `fn` given lists built by append
        (`ListArgument`s): lists of numbers as the array views of their entries (numba
        compiles `fn` for those arrays, which read and write as the lists do); with a list of
        tuples or of arrays among them, `fn`'s column form given every list's buffers and
        length (`list_helpers.py`)."""
        if any(isinstance(a, ListArgument) for a in kws.values()):
            self.unsupported(f"a list built by append passed by keyword to {fn.__name__}(), "
                             "whose keywords moonlite cannot put in position",
                             "pass the list by position")
        if any(a in self.array_literal_tuples for a in args if isinstance(a, Value)):
            self._check_helper_takes_tuples(fn, args)
        if not any(isinstance(a, ListArgument) for a in args):
            return fn, args
        if not needs_column_form(args):
            return fn, [self.list_entries(a.lst, f"passed to {fn.__name__}()")
                        if isinstance(a, ListArgument) else a for a in args]
        argtypes, flat = self._column_arguments(args)
        try:
            return column_form(fn, argtypes), flat
        except RecursiveColumnForm:
            self.unsupported(f"a recursive function, {fn.__name__}(), given a list of tuples "
                             "or of arrays", "walk the list in a loop, or pass the helper a "
                             "preallocated array")

    def hands_a_list_on(self, fn, args: list, kws: dict) -> bool:
        """Whether njit `fn`, given lists it calls no list method on, changes one by handing it
        on to a helper that does: its plain form fails (numba cannot compile it for a list of
        numbers' array view; a column form changes a length), and the list-changing form,
        whose body sees those calls, is asked instead."""
        lists = [a for a in args if isinstance(a, ListArgument)]
        if not lists or kws or any(a.changed for a in lists):
            return False
        if needs_column_form(args):
            try:
                column_form(fn, _column_argtypes(args))  # (a probe: no list state read)
            except RecursiveColumnForm:
                return False
            except UnsupportedError as exc:
                return getattr(exc, "list_changed", False)
            return False
        viewed = tuple(nbt.Array(a.numba_type.dtype, 1, "C") if isinstance(a, ListArgument)
                       else a.type.to_numba() for a in args)
        try:
            array_lists.capture_callee(fn, viewed)
        except CaptureError:
            return True
        return False

    def list_changing_call(self, fn, args: list, kws: dict, result_type) -> Value:
        """A call of njit `fn` that calls list methods on lists built by append it is given:
        its list-changing form (`list_helpers.py`), given every list's buffers and length,
        returns the result and the lists' new buffers and lengths, which the lists take."""
        if kws:
            self.unsupported(f"keyword arguments to {fn.__name__}(), which changes a list it is "
                             "given, that moonlite cannot put in position",
                             "pass the helper's arguments by position")
        lists = [a.lst for a in args if isinstance(a, ListArgument)]
        if len(set(lists)) != len(lists):
            self.unsupported(f"one list given twice to {fn.__name__}(), which changes it",
                             "give the helper the list once")
        argtypes, flat = self._column_arguments(args)
        try:
            form = list_changing_form(fn, argtypes)
        except RecursiveColumnForm:
            self.unsupported(f"a recursive function, {fn.__name__}(), changing a list it is "
                             "given", "walk the list in a loop")
        returned = self.b.call(form, flat, None, form.ir.return_type)
        self.array_list_ops.add(id(returned.op))  # (the form checked its own writes)
        first_state = len(returned.type.elements) - len(lists)
        for k, lst in enumerate(lists):
            state = self.b.tuple_getitem(returned, first_state + k)
            n = len(state.type.elements) - 1
            buffers = tuple(self.b.tuple_getitem(state, i) for i in range(n))
            if lst.holds_arrays:
                self._own(buffers[0])  # the entries' numbers: writes into them are checked
            self.list_state[lst] = (buffers, self.b.tuple_getitem(state, n))
        if first_state == 0:
            return self._const_value(None)
        return self._coerce(self.b.tuple_getitem(returned, 0), result_type)

    def list_from_helper(self, fn, args: list, kws: dict, target) -> GrowingList:
        """`ys = helper(...)`, a list the njit helper builds and returns: its list-returning
        form returns the list's buffers and length (`list_helpers.py`), kept here as a list
        this function built."""
        list_type = self.typemap[target.name]
        if not _appendable(list_type.dtype):
            self.unsupported(f"a list of {list_type.dtype} returned by {fn.__name__}() (a list "
                             "of arrays holds references the caller could write through)",
                             "return an array with one more dimension, or build the list in "
                             "the caller")
        if kws or any(isinstance(a, ListArgument) for a in args):
            self.unsupported(f"a list returned by {fn.__name__}(), given a list or keywords "
                             "moonlite cannot put in position", "pass the helper's "
                             "arguments by position, and give it arrays rather than lists")
        try:
            form = list_returning_form(fn, tuple(a.type.to_numba() for a in args))
        except RecursiveColumnForm:
            self.unsupported(f"a recursive function, {fn.__name__}(), returning a list",
                             "build the list in a loop")
        lst = self._new_list(list_type.dtype)
        columns = lst.buffer_types
        state = self.b.call(form, args, None, TupleType((*columns, int64)))
        self.list_state[lst] = (tuple(self.b.tuple_getitem(state, k)
                                      for k in range(len(columns))),
                                self.b.tuple_getitem(state, len(columns)))
        return lst

    def returned_list_state(self, bound) -> Value:
        """What the list-returning form returns: the returned list's buffers and length."""
        if not isinstance(bound, GrowingList) or bound in self.given_lists:
            self.unsupported(f"{self.py_func.__name__}() returning a list it does not build",
                             "build the list in the function that returns it")
        buffers, length = self._state(bound)
        return self.b.build_tuple([*buffers, length])

    def refuse_list_returned(self, fn, expr, target) -> None:
        """A helper given a list built by append must not return a list (it would be the
        array the list became)."""
        if not (nb.is_njit_dispatcher(fn) and _mentions_list(self.typemap[target.name])):
            return
        if any(isinstance(self.lookup(a), GrowingList) for a in expr.args):
            self.unsupported(f"a list built by append passed to {fn.__name__}(), which returns "
                             f"a list", "let the helper return a number or an array, and "
                             "append in the kernel")

    def _iterable(self, bound):
        """What a for loop walks: a list literal as the tuple of its items, `a.flat` as
        `np.ravel(a)` (C order, as `.flat`)."""
        if isinstance(bound, st.ListLiteral):
            return self._list_as_tuple(bound)
        if isinstance(bound, st.FlatIterator):  # (of a C array, a view: as `.flat` reads)
            t = bound.array.type
            flat_type = ArrayType(t.dtype, 1, "C", t.readonly)
            return rewrites.contiguous_view(self.b, np.ravel, bound.array, flat_type) \
                or self.b.call(np.ravel, [bound.array], type=flat_type)
        if isinstance(bound, GrowingList):
            return self.list_source(bound)
        if isinstance(bound, st.LazyElement) and bound.value is not None:
            return bound.value  # a row an outer loop walks (`for row in A: for v in row`)
        return bound

    def call_empty_inferred(self, expr, target):
        """The array numba's rewrite of `np.array([g(v) for v in it])` fills (its shape from
        `length_of_iterator`): np.empty of the type numba inferred."""
        t = self.type_of(target)
        element = t.dtype.to_numba()
        if not isinstance(element, (nb.types.Number, nb.types.Boolean)):  # (a tuple: 2-D)
            self.unsupported(f"np.array of a list comprehension of {element}",
                             "fill a 2-D array in a loop (`pts = np.empty((n, 2))`, "
                             "`pts[i, 0] = ...`)")
        (shape,) = [self.value(a) for a in expr.args]
        return self.b.call(np.empty, [shape, self.dtype_ref(element)], None, t)

    def call_tuple(self, expr, target):
        """`tuple(t)` of a tuple is t (Python wraps the tuple of `f(*t)` so); of a list literal,
        its items."""
        bound = self.lookup(expr.args[0]) if len(expr.args) == 1 and not expr.kws else None
        if isinstance(bound, st.ListLiteral):
            return self._list_as_tuple(bound)
        if isinstance(bound, Value) and isinstance(bound.type, TupleType):
            return bound
        self.unsupported("tuple() of anything but a tuple or a list literal",
                         "build the tuple from its entries")


class StarArgs:
    """The parameters a `*args` tuple was spread into (see `Importer._new_function`)."""

    def __init__(self, values: list):
        self.values = values


def is_star_args(t) -> bool:
    return isinstance(t, (nbt.StarArgTuple, nbt.StarArgUniTuple))


def jitclass_method(method: st.BoundMethod):
    """(the njit function of a jitclass instance's method, whether it takes the instance), or
    None if the receiver is no jitclass instance or has no such method."""
    t = method.receiver.type
    if not (isinstance(t, OpaqueType) and isinstance(t.numba_type, nbt.ClassInstanceType)):
        return None
    if method.name in t.numba_type.jit_methods:
        return t.numba_type.jit_methods[method.name], True
    static = getattr(t.numba_type, "jit_static_methods", {})
    return (static[method.name], False) if method.name in static else None


# callees numba gives the same result for a list as for a tuple of the same items
READS_A_LIST_AS_A_TUPLE = (np.array, np.asarray, sum, len, min, max)


def _column_argtypes(args: list) -> tuple:
    """numba's types of a call's arguments, the lists as lists (a column form's key)."""
    return tuple(a.numba_type if isinstance(a, ListArgument) else a.type.to_numba()
                 for a in args)


def _mentions_list(t) -> bool:
    if isinstance(t, nbt.BaseTuple):
        return any(_mentions_list(e) for e in t.types)
    return isinstance(t, (nbt.List, nbt.ListType))
