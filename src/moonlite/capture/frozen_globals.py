"""Global arrays (and numbers, strings, tuples, njit functions): numba freezes them into a
function when it compiles it; moonlite checks that a derivative sees the same values.

`G = np.array(...)` read by an njit kernel is compiled in as a constant: mutating G (or binding
the name to another array) afterwards does not change what the compiled kernel computes. moonlite
captures the kernel later, from the current G, so a derivative would describe a function other
than the one `f(x)` computes. A numba compile listener records, for every function numba
compiles and each signature it compiles it for, a digest of each frozen value its code reads:
globals and closure values, module attributes (`cfgmod.TABLE`), parameter defaults
(`def f(x, W=W0)`), the njit functions it calls by a global name (rebinding `act = other`
leaves the compiled kernel calling the old one) and what the helpers numba inlines
(`inline='always'`) read. Capture compares the current values with the record of the kernel's
compilation for those argument types and refuses a mismatch, naming the value and what to do
(`f.recompile()`, or pass it as an argument). A kernel that reads frozen values and was not
compiled for those types yet is compiled first, so that its record exists and `f(x)` later
computes what the derivative describes.

Not checkable: a kernel compiled before moonlite was imported, or loaded from numba's disk cache
(`cache=True`): numba reports no compile, so nothing is on record.
"""

from __future__ import annotations

import dis
import hashlib
import types
import weakref

import numpy as np

from .. import _numba as nb
from ..errors import UnsupportedError

# dispatcher -> {argument types: {name: digest of the value}} at its compilations
_records: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def frozen_values(py_func, omitted=None, _seen=None) -> dict:
    """{name: value} for what numba freezes into `py_func` when it compiles it: the global and
    closure values its code reads that are arrays, numbers, strings, tuples or namedtuples
    holding them (`CFG = (w, 0.5)`), or njit functions; a module's attribute (`cfgmod.TABLE`)
    is named by its path, a parameter's default as `the default of W`, and what an njit helper
    numba inlines (`inline='always'`) reads as `project: W`. `omitted`: the parameters whose
    default numba compiled in (None: every parameter's)."""
    seen = set() if _seen is None else _seen
    seen.add(id(py_func))
    found = {}
    for path in global_paths(py_func.__code__):
        name, value = _resolve(py_func.__globals__, path)
        if name is not None and _frozen(value):
            found[name] = value
    cells = zip(py_func.__code__.co_freevars, py_func.__closure__ or ())
    found.update({n: cell_value(c) for n, c in cells if _frozen(cell_value(c))})
    found.update(_defaults(py_func, omitted))
    for name, value in list(found.items()):
        inner = getattr(value, "py_func", None)
        if _inlined_by_numba(value) and id(inner) not in seen:
            found.update({f"{name}: {n}": v
                          for n, v in frozen_values(inner, None, seen).items()})
    return found


_DEFAULT = "the default of "  # how a parameter's default is named among the frozen values


def _defaults(py_func, omitted) -> dict:
    """The frozen values among the parameter defaults (numba compiles an omitted argument in
    as its default's value)."""
    code, defaults = py_func.__code__, py_func.__defaults__ or ()
    names = code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]
    return {_DEFAULT + n: v for n, v in zip(names, defaults)
            if _frozen(v) and (omitted is None or n in omitted)}


def _inlined_by_numba(value) -> bool:
    return _is_njit(value) and value.targetoptions.get("inline", "never") != "never"


def _is_njit(value) -> bool:
    """A user's njit function (moonlite's own dispatchers, which its drivers call, are not
    rebound by anyone: their identity is no frozen value to check)."""
    return isinstance(value, nb.Dispatcher) and \
        not type(value).__module__.startswith("moonlite.")


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


_FROZEN_SCALARS = (bool, int, float, complex, str, np.generic)


def _frozen(value) -> bool:
    """A value numba compiles in as a constant, whose change a derivative would see."""
    return isinstance(value, (np.ndarray, *_FROZEN_SCALARS)) or _is_njit(value) or (
        isinstance(value, tuple) and any(_frozen(v) for v in value))


def check_frozen_globals(f, argtypes: tuple) -> None:
    """Refuse to capture `f` for `argtypes` if a value numba froze into it changed since numba
    compiled it for those types."""
    if _moonlites_own(f.py_func):
        return  # moonlite's own drivers and helpers: nothing they read is rebound
    values = frozen_values(f.py_func)
    if not values:
        return
    key = _compile_key(f, argtypes)
    records = _records.get(f, {})
    # (njit functions alone: their identity is checked once f has a record; compiling f
    # first for them alone would compile the derived rules a driver calls out of turn)
    needs_record = not all(map(_is_njit, values.values()))
    if key not in records and not _compiled_for(f, key) and needs_record:
        try:
            f.compile(key)  # freeze the values now, recording what numba froze
        except nb.numba_errors.NumbaError:
            return  # capture reports why numba cannot compile it
        records = _records.get(f, {})
    # compiled for these types under another key (or before moonlite was imported): every
    # record is compared, which errs towards refusing. A default is compared with every
    # record that compiled it in: moonlite passes it as an argument, where `f(x)` runs the
    # signature that omits it.
    exact = key in records
    for recorded_key, recorded in records.items():
        mine = not exact or recorded_key == key
        for name, value in values.items():
            then = recorded.get(name)
            if then is not None and then != _digest(value) and (
                    mine or name.startswith(_DEFAULT)):
                _refuse_changed(f, name, value, argtypes)


def _moonlites_own(py_func) -> bool:
    """A helper of moonlite's, or a driver it generated (`api_drivers.njit_driver`)."""
    return (py_func.__module__ or "").startswith("moonlite.") or \
        py_func.__code__.co_filename.startswith("<moonlite ")


def _compile_key(f, argtypes: tuple) -> tuple:
    """The types numba compiles `f` for when called with arguments of `argtypes`: omitted
    parameters as `Omitted(default)`, as numba's own call from Python gives them."""
    try:
        return tuple(f._compiler.fold_argument_types(tuple(argtypes), {})[1])
    except Exception:  # (capture reports a call numba cannot bind)
        return tuple(argtypes)


def _compiled_for(f, key: tuple) -> bool:
    return key in f.overloads


def _refuse_changed(f, name: str, value, argtypes: tuple):
    raise UnsupportedError(
        f"{_described(name, value)}, changed after numba compiled {f.py_func.__qualname__} "
        f"(numba froze its earlier value into the compiled function, so the function and its "
        f"derivative would disagree)",
        function=f.py_func.__qualname__, argtypes=tuple(str(t) for t in argtypes),
        hint=f"call {f.py_func.__name__}.recompile() after changing it, or pass it as an "
             f"argument")


def _described(name: str, value) -> str:
    """`the global array 'W'`, `the default array of parameter 'W'`, `the global array 'W'
    that project reads (numba inlines it)`."""
    if name.startswith(_DEFAULT):
        return f"the default {_what(value)} of parameter {name[len(_DEFAULT):]!r}"
    *helpers, own = name.split(": ")
    inlined = f" that {helpers[-1]} reads (numba inlines it)" if helpers else ""
    return f"the global {_what(value)} {own!r}{inlined}"


def _what(value) -> str:
    return ("array" if isinstance(value, np.ndarray) else
            "tuple" if isinstance(value, tuple) else
            "njit function" if _is_njit(value) else "value")


def _record(dispatcher, argtypes) -> None:
    py_func = getattr(dispatcher, "py_func", None)
    if py_func is None or not hasattr(py_func, "__code__") or argtypes is None:
        return
    code = py_func.__code__
    omitted = {code.co_varnames[i] for i, t in enumerate(argtypes)
               if isinstance(t, nb.types.Omitted) and i < code.co_argcount}
    values = frozen_values(py_func, omitted)
    if values:
        _records.setdefault(dispatcher, {})[tuple(argtypes)] = {
            n: _digest(v) for n, v in values.items()}


class _CompileListener(nb.event.Listener):
    def on_start(self, event):
        pass

    def on_end(self, event):
        data = event.data or {}
        if data.get("dispatcher") is not None:
            _record(data["dispatcher"], data.get("args"))


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
    if _is_njit(value):  # which function numba compiled the call of
        return ("njit", id(value))
    if not isinstance(value, np.ndarray):  # (a class, a Python function: numba's business)
        return (type(value).__name__,)
    data = np.ascontiguousarray(value).view(np.uint8)
    return (value.dtype.str, value.shape, hashlib.blake2b(data, digest_size=16).digest())


nb.event.register("numba:compile", _CompileListener())
