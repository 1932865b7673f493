"""What a derived function's code depends on: the key of the on-disk cache (`lower/disk_cache.py`).

`derivation_key(f, recipe)` describes, as a picklable tuple of plain values, everything that
changes the code moonlite derives from njit function `f`:

- `f`'s bytecode, constants and closure, and the value of every global it names (numbers,
  strings, arrays by content, tuples of them, namedtuple classes by their fields and
  defaults, numpy/math/numba functions and types by name),
  recursively for every njit function it can reach through them (its callees);
- the options `f` was compiled with, and the derivation's own (`recipe`: the API, argnums, ...);
- every rule users registered (`custom_jvp`, `custom_vjp`, `nondifferentiable`), debug mode;
- the versions of moonlite (a hash of its own source files), numba, llvmlite and numpy.

The cache adds the argument types and numba's description of the CPU. A function that names
something the key cannot describe (an object of a user class, a module other than numpy, math,
cmath, operator and numba: its attributes could change unseen) gets no key and is never cached:
a missed cache entry costs a compile, a stale one would be a wrong derivative.
"""

from __future__ import annotations

import functools
import hashlib
import os
import types

import numpy as np

from . import _numba as nb
from .capture.frozen_globals import cell_value, names_read

_STABLE_MODULES = ("numpy", "math", "cmath", "operator", "numba", "builtins", "moonlite")


class Uncachable(Exception):
    """The function depends on something the key cannot describe."""


def derivation_key(f, recipe: tuple):
    """The key of what `recipe` derives from `f`, or None if `f` cannot be cached."""
    from .debug import debug_enabled
    try:
        return (recipe, function_key(f), custom_rules_key(), debug_enabled(), versions_key(),
                nb.optimisation_level())
    except Uncachable:
        return None


def function_key(f, seen=None) -> tuple:
    """Bytecode, constants, closure, globals read and options of njit function `f`."""
    seen = set() if seen is None else seen
    py = getattr(f, "py_func", None)
    if py is None:
        raise Uncachable(f"{f!r} is not a Python function")
    if id(f) in seen:
        return ("recursive", py.__module__, py.__qualname__)
    seen.add(id(f))
    code = py.__code__
    names = names_read(code)
    glob = py.__globals__
    read = tuple((name, value_key(glob[name], seen)) for name in sorted(names) if name in glob)
    closure = tuple(value_key(cell_value(c), seen) for c in (py.__closure__ or ()))
    defaults = tuple(value_key(d, seen) for d in (py.__defaults__ or ()))
    options = tuple(sorted((k, repr(v)) for k, v in getattr(f, "targetoptions", {}).items()))
    return (py.__module__, py.__qualname__, _code_key(code), read, closure, defaults, options)


def _code_key(code) -> tuple:
    consts = tuple(_code_key(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_argcount,
            code.co_kwonlyargcount, code.co_flags)


def value_key(v, seen: set) -> tuple:
    """A description of global or closure value `v` that changes when the code it gives
    numba would."""
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return (type(v).__name__, repr(v))
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, hashlib.sha256(np.ascontiguousarray(v)
                                                              .tobytes()).hexdigest())
    if isinstance(v, np.generic):
        return ("numpy scalar", v.dtype.str, repr(v))
    if isinstance(v, (tuple, list, frozenset)):
        items = sorted(v, key=repr) if isinstance(v, frozenset) else v
        return (type(v).__name__, tuple(value_key(x, seen) for x in items))
    if isinstance(v, nb.Dispatcher):
        recipe = getattr(v, "recipe", None)
        if getattr(v, "ir_for", None) is not None:  # a derived dispatcher: by its recipe
            if recipe is None:
                raise Uncachable(f"{v!r} has no recipe")
            return ("derived", getattr(recipe[0], "__qualname__", ""),
                    tuple(value_key(a, seen) for a in recipe[1]))
        return ("njit", function_key(v, seen))
    if isinstance(v, types.ModuleType):
        if v.__name__.split(".")[0] in _STABLE_MODULES:
            return ("module", v.__name__)
        raise Uncachable(f"module {v.__name__}")
    if isinstance(v, nb.types.Type):
        return ("numba type", str(v))
    if isinstance(v, type) and issubclass(v, tuple) and hasattr(v, "_fields"):
        # a namedtuple class: numba's code depends on its fields and defaults alone
        defaults = tuple(value_key(d, seen) for d in getattr(v, "_field_defaults", {}).values())
        return ("namedtuple", v.__module__, v.__qualname__, tuple(v._fields), defaults)
    if callable(v):  # functions and classes of numpy, math, numba: by name
        module = getattr(v, "__module__", None) or type(v).__module__ or ""
        name = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
        if name and module.split(".")[0] in _STABLE_MODULES:
            return ("named", module, name)
        if isinstance(v, type) and issubclass(v, BaseException) and module == "builtins":
            return ("exception class", name)
    raise Uncachable(f"a value of type {type(v).__name__}")


def custom_rules_key() -> tuple:
    """Every rule users registered, by the functions it is made of."""
    from .rules.custom import CUSTOM_RULES
    rows = []
    for f, rule in list(CUSTOM_RULES.items()):
        parts = [_callable_key(f)]
        for field in ("jvp", "fwd", "bwd"):
            g = getattr(rule, field, None)
            parts.append(None if g is None else _callable_key(g))
        parts.append(bool(getattr(rule, "nondifferentiable", False)))
        rows.append(tuple(parts))
    return tuple(sorted(rows, key=repr))


def _callable_key(g) -> tuple:
    if isinstance(g, nb.Dispatcher):
        return function_key(g)
    return value_key(g, set())


@functools.lru_cache(maxsize=None)
def versions_key() -> tuple:
    """moonlite's own source (any edit of it, not only a release, may change derived code),
    and the versions of what compiles it."""
    root = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as fh:
                    digest.update(fh.read())
    return (digest.hexdigest(), *nb.COMPILER_VERSIONS, np.__version__)
