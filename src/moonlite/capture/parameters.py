"""A captured function's parameters (`Importer._new_function`), and how its body reads them
(`on_arg`): numba's parameters less omitted defaults, a `*args` tuple spread into one parameter
per entry, and, in a helper's column form (`list_helpers.py`), a list parameter given as its
buffers and its length. A record parameter is read as `record_view(r)[0]`, an entry of a
structured array of one entry viewing it (`rules/records.py`), so its fields are read and
written as entries' are, in every mode."""

from __future__ import annotations

from .. import _numba as nb
from ..ir.builder import Builder
from ..ir.types import ArrayType, TupleType, from_numba, int64
from ..rules.records import record_view
from .constructs import StarArgs, is_star_args
from .list_helpers import is_list_parameter
from .lists import GrowingList

nbt = nb.types


def _is_none(t) -> bool:
    return isinstance(t, (nbt.NoneType, nbt.Omitted)) or t is nbt.none


class Parameters:
    """Mixin of `Importer` (it provides `py_func`, `fir`, `typed`, `list_params`, `b`,
    `list_state`, `_loc`, `_const_value`, `unsupported`)."""

    def _new_function(self) -> Builder:
        """The function's parameters: numba's, less omitted defaults, with a `*args` tuple
        spread into one parameter per entry. numba folds the values a call passes for `*args`
        into one tuple argument, but calls pass them one by one; spread, the parameters match
        the call sites (for inlining, derived rules and numba alike), and the body gets the
        tuple back from them (`on_arg`). With `list_params`, a list parameter is its buffers
        and its length (`list_helpers.py`), and the body gets the list back from them."""
        names, types_ = [], []
        given = {i: self.given_list(t) for i, t in enumerate(self.typed.argtypes)
                 if self.list_params and is_list_parameter(t)}
        for i, (name, t) in enumerate(zip(self.fir.arg_names, self.typed.argtypes)):
            if is_star_args(t):
                names.extend(f"{name}_{k}" for k in range(len(t.types)))
                types_.extend(from_numba(e) for e in t.types)
            elif i in given:
                buffers = given[i].buffer_types
                names.extend([f"{name}_{k}" for k in range(len(buffers))] + [f"{name}_len"])
                types_.extend([*buffers, int64])
            elif not isinstance(t, nbt.Omitted):
                names.append(name)
                types_.append(from_numba(t))
        loc = self._loc(self.fir.loc)
        b = Builder.new_function(self.py_func.__name__, types_, names, self._return_type(given),
                                 py_func=self.py_func, loc=loc, boundscheck=self.boundscheck)
        self._arg_values = {}
        self.given_lists = {}  # GrowingList parameter -> (buffer arguments, length argument)
        it = iter(b.function.args)
        for i, t in enumerate(self.typed.argtypes):
            if is_star_args(t):
                self._arg_values[i] = StarArgs([next(it) for _ in t.types])
            elif i in given:
                buffers = tuple(next(it) for _ in given[i].buffer_types)
                self.given_lists[given[i]] = (buffers, next(it))
                self._arg_values[i] = given[i]
            else:
                self._arg_values[i] = t if isinstance(t, nbt.Omitted) else next(it)
        return b

    def _return_type(self, given: dict):
        """numba's return type; for the form returning a list (`returns_list`), the list's
        buffers and length (its entries checked by the caller: `list_from_helper`); for the
        list-changing form, the result (unless None) and each list parameter's buffers and
        length (`list_changing_call`)."""
        t = self.typed.return_type
        if self.changes_lists:
            states = [TupleType((*lst.buffer_types, int64)) for lst in given.values()]
            return TupleType(tuple(states) if _is_none(t) else (from_numba(t), *states))
        if not self.returns_list:
            return from_numba(t)
        return TupleType((*GrowingList(from_numba(t.dtype), None).buffer_types, int64))

    def result_and_list_states(self, returned):
        """What the list-changing form returns (`_return_type`): the result, unless None, and
        the list parameters' buffers and lengths where the return stands."""
        states = [self.b.build_tuple([*buffers, length])
                  for buffers, length in (self._state(lst) for lst in self.given_lists)]
        if _is_none(self.typed.return_type):
            return self.b.build_tuple(states)
        result = self._coerce(self.value(returned), self.b.function.return_type.elements[0])
        return self.b.build_tuple([result, *states])

    def on_arg(self, value, target):
        bound = self._arg_values[value.index]
        if isinstance(bound, nbt.Omitted):
            return self._const_value(bound.value)
        if isinstance(bound, StarArgs):
            return self.b.build_tuple(bound.values)
        if isinstance(self.typed.argtypes[value.index], nbt.Record):
            return self._record_as_entry(bound)
        return bound

    def _record_as_entry(self, record):
        holder = self.b.call(record_view, [record], type=ArrayType(record.type, 1, "C"))
        return self.b.getitem(holder, self.b.const(0, int64), type=record.type)

    def given_list(self, t) -> GrowingList:
        """A list parameter of a helper's column form (`list_helpers.py`): given as its
        buffers and its length, which the helper must leave as they are."""
        named = t.dtype if isinstance(t.dtype, nbt.BaseNamedTuple) else None
        return GrowingList(from_numba(t.dtype), None, named=named)

    def check_given_lists_kept(self) -> None:
        """A helper changing the length of a list it is given (append, pop, extend, +=, ...)
        would change a length the caller does not see."""
        for lst, state in self.given_lists.items():
            if self.list_state.get(lst, state) != state:
                refusal = self.refusal(f"a list given to {self.py_func.__name__}() changed in "
                                       "length there", "append in the kernel, and pass the "
                                       "helper the finished list")
                refusal.list_changed = True  # (the caller then asks the list-changing form)
                raise refusal

