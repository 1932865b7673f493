"""Global arrays: numba freezes them into a function when it compiles it; moonlite checks that a
derivative sees the same values.

`G = np.array(...)` read by an njit kernel is compiled in as a constant: mutating G (or binding
the name to another array) afterwards does not change what the compiled kernel computes. moonlite
captures the kernel later, from the current G, so a derivative would describe a function other
than the one `f(x)` computes. A numba compile listener records, for every function numba
compiles, a digest of each global or closure array its code names; capture compares the current
arrays with the record of the kernel's compilation and refuses a mismatch, naming the array and
what to do (`f.recompile()`, or pass the array as an argument). A kernel that reads global arrays
and was not compiled yet is compiled first, so its record exists.

A kernel compiled before moonlite was imported has no record: it cannot be checked.
"""

from __future__ import annotations

import hashlib
import types
import weakref

import numpy as np

from .. import _numba as nb
from ..errors import UnsupportedError

# dispatcher -> {name: digest of the array} at its latest compilation
_records: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def global_arrays(py_func) -> dict:
    """{name: array} for the global and closure arrays `py_func`'s code names."""
    names = names_read(py_func.__code__)
    found = {n: py_func.__globals__[n] for n in names if isinstance(py_func.__globals__.get(n),
                                                                    np.ndarray)}
    cells = zip(py_func.__code__.co_freevars, py_func.__closure__ or ())
    found.update({n: c.cell_contents for n, c in cells
                  if isinstance(cell_value(c), np.ndarray)})
    return found


def check_frozen_globals(f, argtypes: tuple) -> None:
    """Refuse to capture `f` if a global array it reads changed since numba compiled it."""
    arrays = global_arrays(f.py_func)
    if not arrays:
        return
    if f not in _records:
        if f.signatures:
            return  # compiled before moonlite was imported: nothing recorded to compare with
        try:
            f.compile(tuple(argtypes))  # freeze the arrays now, recording what numba froze
        except nb.numba_errors.NumbaError:
            return  # capture reports why numba cannot compile it
    recorded = _records.get(f, {})
    for name, array in arrays.items():
        then = recorded.get(name)
        if then is not None and then != _digest(array):
            raise UnsupportedError(
                f"the global array {name!r}, changed after numba compiled "
                f"{f.py_func.__qualname__} (numba froze its earlier values into the compiled "
                f"function, so the function and its derivative would disagree)",
                function=f.py_func.__qualname__, argtypes=tuple(str(t) for t in argtypes),
                hint=f"call {f.py_func.__name__}.recompile() after changing {name}, or pass "
                     f"{name} as an argument")


def _record(dispatcher) -> None:
    py_func = getattr(dispatcher, "py_func", None)
    if py_func is None or not hasattr(py_func, "__code__"):
        return
    arrays = global_arrays(py_func)
    if arrays:
        _records[dispatcher] = {n: _digest(a) for n, a in arrays.items()}


class _CompileListener(nb.event.Listener):
    def on_start(self, event):
        pass

    def on_end(self, event):
        dispatcher = (event.data or {}).get("dispatcher")
        if dispatcher is not None:
            _record(dispatcher)


def names_read(code) -> set:
    """The global names `code` and the code objects nested in it name."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= names_read(const)
    return names


def cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _digest(array: np.ndarray) -> tuple:
    data = np.ascontiguousarray(array).view(np.uint8)
    return (array.dtype.str, array.shape, hashlib.blake2b(data, digest_size=16).digest())


nb.event.register("numba:compile", _CompileListener())
