"""The Python objects names in printed IR stand for: what `parser.py` resolves callees,
globals and exception classes with. A name is looked up in the caller's namespace, then in
numpy/math/cmath/operator/builtins (numpy functions print without their submodule:
`np.solve` is np.linalg.solve), then in imported modules (`moonlite.rules.numpy_reductions.
add_to_diagonal`): importing moonlite imports every module whose helpers its passes call.
"""

from __future__ import annotations

import builtins
import cmath
import math
import operator
import sys
import types as pytypes

import numpy as np

MISSING = object()
_DEFAULT_SCOPE = {**vars(builtins), "np": np, "numpy": np, "math": math, "cmath": cmath,
                  "operator": operator}
# numpy's submodules whose functions print as `np.NAME` (np.linalg.solve as np.solve)
_NUMPY_SUBMODULES = (np.linalg, np.fft, np.random)


def _attribute_path(obj, parts: list):
    for part in parts:
        obj = getattr(obj, part, MISSING)
        if obj is MISSING:
            break
    return obj


class Resolver:
    """Finds the Python object a printed name stands for (see the module docstring)."""

    def __init__(self, namespace: dict):
        self.namespace = namespace

    def __call__(self, name: str, at):
        # `at`: the parser's position, whose .error(message) is the ParseError to raise
        obj = self.lookup(name)
        if obj is MISSING:
            raise at.error(f"unknown name {name!r}: pass the object as namespace={{{name!r}: "
                           f"...}} (namespace_of(fn) gives those of a function)")
        return obj

    def lookup(self, name: str):
        if name in self.namespace:
            return self.namespace[name]
        parts = name.split(".")
        for scope in (self.namespace, _DEFAULT_SCOPE):
            obj = _attribute_path(scope.get(parts[0], MISSING), parts[1:])
            if obj is not MISSING:
                return _numpy_function(obj, parts) if scope.get(parts[0]) is np else obj
        obj = _from_modules(parts)
        if obj is not MISSING:
            return _dispatcher_for(obj)
        if parts[0] in ("np", "numpy"):  # np.solve, np.RandomState.normal (bound methods)
            for module in _NUMPY_SUBMODULES:
                obj = getattr(module, parts[-1], MISSING)
                if obj is not MISSING:
                    return obj
        return self.namespace.get(parts[-1], MISSING)


def _numpy_function(obj, parts: list):
    """`np.fft` is how the printer names the function numpy.fft.fft."""
    if isinstance(obj, pytypes.ModuleType) and len(parts) > 1:
        return getattr(obj, parts[-1], obj)
    return obj


def _dispatcher_for(obj):
    """`check = numba.njit(_check_py)` leaves `_check_py` in its module too, and the printer
    names the dispatcher after it: the module's dispatcher of that function was the callee."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if not isinstance(obj, pytypes.FunctionType) or module is None:
        return obj
    return next((v for v in vars(module).values() if getattr(v, "py_func", None) is obj), obj)


def _from_modules(parts: list):
    """Attributes of the longest imported module the name starts with (importing `moonlite`
    imports every module whose helpers its passes call)."""
    for k in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:k]))
        obj = _attribute_path(module, parts[k:]) if module is not None else MISSING
        if obj is not MISSING:
            return obj
    return MISSING
