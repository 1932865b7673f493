"""Global arrays (and numbers, strings, tuples): numba freezes them into a function when it
compiles it; moonlite checks that a derivative sees the same values.

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

import dis
import hashlib
import types
import weakref

import numpy as np

from .. import _numba as nb
from ..errors import UnsupportedError

# dispatcher -> {name: digest of the array} at its latest compilation
_records: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def global_arrays(py_func) -> dict:
    """{name: value} for the global and closure values `py_func`'s code reads that numba
    freezes into the compiled function: arrays, numbers, strings, and tuples or namedtuples
    holding them (`CFG = (w, 0.5)`); a module's attribute (`cfgmod.TABLE`) is named by its
    path."""
    found = {}
    for path in global_paths(py_func.__code__):
        name, value = _resolve(py_func.__globals__, path)
        if name is not None and _frozen(value):
            found[name] = value
    cells = zip(py_func.__code__.co_freevars, py_func.__closure__ or ())
    found.update({n: c.cell_contents for n, c in cells if _frozen(cell_value(c))})
    return found


def global_paths(code) -> set:
    """The global names `code` (and the code nested in it) loads, each with the attribute names
    read straight off it (`cfgmod.TABLE` is ('cfgmod', 'TABLE')); attribute names read off
    anything else (`A.T`, `p.W`) are not globals."""
    paths, chain = set(), None
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_GLOBAL":
            chain = [ins.argval]
        elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and chain is not None:
            chain.append(ins.argval)
        else:
            chain = None
            continue
        paths.add(tuple(chain))  # (each prefix: `mod.TABLE.T` reads `mod.TABLE`)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            paths |= global_paths(const)
    return paths


def _resolve(namespace: dict, path: tuple):
    """(the dotted name, the value) a global path reads, following attributes of modules only
    (an array's `.T` is not part of the global); (None, None) if the name is unbound."""
    if path[0] not in namespace:
        return None, None
    value, used = namespace[path[0]], [path[0]]
    for attr in path[1:]:
        if not isinstance(value, types.ModuleType) or not hasattr(value, attr):
            break
        value = getattr(value, attr)
        used.append(attr)
    return ".".join(used), value


def _holds_array(value) -> bool:
    return isinstance(value, np.ndarray) or (
        isinstance(value, tuple) and any(map(_holds_array, value)))


_FROZEN_SCALARS = (bool, int, float, complex, str, np.generic)


def _frozen(value) -> bool:
    """A value numba compiles in as a constant, whose change a derivative would see."""
    return isinstance(value, (np.ndarray, *_FROZEN_SCALARS)) or (
        isinstance(value, tuple) and any(_frozen(v) for v in value))


def check_frozen_globals(f, argtypes: tuple) -> None:
    """Refuse to capture `f` if a global value it reads changed since numba compiled it."""
    arrays = global_arrays(f.py_func)
    if not arrays:
        return
    if f not in _records:
        if f.signatures:
            return  # compiled before moonlite was imported: nothing recorded to compare with
        if not any(map(_holds_array, arrays.values())):
            return  # numbers alone: not worth a compile (their change is no in-place write)
        try:
            f.compile(tuple(argtypes))  # freeze the arrays now, recording what numba froze
        except nb.numba_errors.NumbaError:
            return  # capture reports why numba cannot compile it
    recorded = _records.get(f, {})
    for name, array in arrays.items():
        then = recorded.get(name)
        if then is not None and then != _digest(array):
            raise UnsupportedError(
                f"the global {_what(array)} {name!r}, changed after numba compiled "
                f"{f.py_func.__qualname__} (numba froze its earlier values into the compiled "
                f"function, so the function and its derivative would disagree)",
                function=f.py_func.__qualname__, argtypes=tuple(str(t) for t in argtypes),
                hint=f"call {f.py_func.__name__}.recompile() after changing {name}, or pass "
                     f"{name} as an argument")


def _what(value) -> str:
    return ("array" if isinstance(value, np.ndarray) else
            "tuple" if isinstance(value, tuple) else "value")


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


def _digest(value) -> tuple:
    """What numba froze of a global: an array's bytes, a tuple's entries, a number's value."""
    if isinstance(value, tuple):
        return (type(value).__name__, tuple(_digest(v) for v in value))
    if isinstance(value, _FROZEN_SCALARS):
        return (type(value).__name__, repr(value))
    if not isinstance(value, np.ndarray):  # (a function, a class: numba's own business)
        return (type(value).__name__,)
    data = np.ascontiguousarray(value).view(np.uint8)
    return (value.dtype.str, value.shape, hashlib.blake2b(data, digest_size=16).digest())


nb.event.register("numba:compile", _CompileListener())
