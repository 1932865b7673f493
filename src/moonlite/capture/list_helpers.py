"""njit helpers given a list of tuples or of arrays built by append, and njit helpers returning
a list they build (issue #20).

A list of numbers passed to an njit helper goes as the array view of its entries: numba compiles
the helper for that array, which reads and writes like the list (`constructs.py`). A list of
tuples has no such view (one buffer per tuple entry), and a list of arrays passed as its buffer
of rows would be typed by numba as an array of one more dimension, not as a list. Such a call
goes instead to a *column form* of the helper: the helper's body captured for numba's own
typing of the call (the list parameter typed as the list it is), with each list parameter
replaced by its buffers and its length (`Importer(list_params=True)`), so that inside the helper
the list is the same `GrowingList` of buffers the caller keeps. The helper reads entries, walks
the list, writes entries (`pts[i] = (a, b)`, into the caller's buffers, seen by the caller as a
list's writes are) and passes the list on to other helpers.

A helper calling list methods on a list it is given (`pts.append(p)`, `stack.pop()`, `ys.sort()`)
is called through its *list-changing form* (`Importer(changes_lists=True)`): the column form
returning, beside its result, each list parameter's buffers and length as the helper leaves
them (a grown list has new buffers); the caller keeps them as its list's new state
(`ConstructReads.list_changing_call`). Methods the helper calls on the parameter itself are
seen in its bytecode (`list_methods_called`); a helper handing the list on to another that
changes it is found when its plain form fails (`ConstructReads.hands_a_list_on`).

The column form is moonlite IR lowered to a numba dispatcher that keeps that IR, so the caller
calls it like any njit function and every AD mode reads its IR (as for a derived rule). One
column form is made per helper and argument types.

A helper that builds a list of numbers or of tuples of numbers and returns it (a neighbour
list: `for j in near(pos, i)`) is called through its *list-returning form*
(`Importer(returns_list=True)`): the same capture, with the returned list's buffers and length
returned in its place; the caller keeps them as a list it built itself, which it may read,
walk, append to or pass on. Lists of arrays returned are refused: their entries are references
to arrays the caller could write, which the caller's copies would not see.
"""

from __future__ import annotations

import dis
import weakref
from dataclasses import dataclass

from .. import _numba as nb

nbt = nb.types

# Set by the capture package: the column form's IR, `capture_with_list_columns(f, argtypes)`
# (with `returns_list=True`, the form returning the list it builds).
capture_columns = None
# Set by the driver (which may import the lowering): moonlite IR -> a numba dispatcher that
# keeps it, compiled at its first call.
compile_ir = None

_column_forms: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_list_returning_forms: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_list_changing_forms: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

LIST_METHODS = frozenset(("append", "extend", "insert", "pop", "remove", "clear", "sort",
                          "reverse", "copy", "index", "count"))
RESIZERS = frozenset(("append", "extend", "insert", "pop", "remove", "clear"))


@dataclass(eq=False)
class ListArgument:
    """A list built by append given to an njit helper: the list, and numba's type of it."""

    lst: object  # GrowingList
    numba_type: object
    changed: bool = False  # the helper calls list methods on it (its list-changing form)


def needs_column_form(args: list) -> bool:
    """Whether a call's arguments hold a list the helper cannot see as one array."""
    return any(isinstance(a, ListArgument) and (a.lst.holds_tuples or a.lst.holds_arrays)
               for a in args)


class RecursiveColumnForm(Exception):
    """A helper given a list calls itself with it: its column form would need itself."""


_being_made = object()


def column_form(helper, argtypes: tuple):
    """The dispatcher running `helper` with its list parameters given as buffers and lengths
    (`argtypes`: numba's types of the call's arguments, the lists as lists)."""
    return _form(_column_forms, helper, argtypes, returns_list=False)


def list_returning_form(helper, argtypes: tuple):
    """The dispatcher running `helper`, which builds a list of numbers or tuples of numbers
    and returns it, returning instead that list's buffers and length: the caller keeps them
    as a list of its own (`ConstructReads.list_from_helper`). Entries are values, so the
    caller's list holds what the helper's would."""
    return _form(_list_returning_forms, helper, argtypes, returns_list=True)


def list_changing_form(helper, argtypes: tuple):
    """The dispatcher running `helper` with its list parameters given as buffers and lengths,
    returning `(result, (buffers, length) of each list parameter)` (the result left out when
    the helper returns None): the lists as the helper leaves them."""
    return _form(_list_changing_forms, helper, argtypes, changes_lists=True)


def _form(made: "weakref.WeakKeyDictionary", helper, argtypes: tuple, returns_list=False,
          changes_lists=False):
    """One form per helper and argument types, kept in `made`; RecursiveColumnForm if the
    helper's own form is needed while it is being made."""
    forms = made.setdefault(helper, {})
    form = forms.get(argtypes)
    if form is _being_made:
        raise RecursiveColumnForm()
    if form is None:
        forms[argtypes] = _being_made
        try:
            form = forms[argtypes] = compile_ir(capture_columns(
                helper, argtypes, returns_list=returns_list, changes_lists=changes_lists))
        finally:
            if forms.get(argtypes) is _being_made:
                del forms[argtypes]
    return form


def is_list_parameter(t) -> bool:
    return isinstance(t, nbt.List)


def list_methods_called(py_func, param) -> frozenset:
    """The list methods `py_func` calls on its parameter `param` (a position or a name). Read
    from the bytecode: the parameter loaded, then the method looked up."""
    code = py_func.__code__
    if isinstance(param, int):
        if param >= code.co_argcount:
            return frozenset()
        param = code.co_varnames[param]
    instructions = list(dis.get_instructions(py_func))
    return frozenset(attr.argval for load, attr in zip(instructions, instructions[1:])
                     if load.opname == "LOAD_FAST" and load.argval == param
                     and attr.opname in ("LOAD_METHOD", "LOAD_ATTR")
                     and attr.argval in LIST_METHODS)
