"""numpy functions that derived code calls through wrappers compiled once per machine.

numba compiles its implementation of a numpy function in every process, per argument types and
caller flags, and typing a call compiles it: `np.zeros_like` 0.1-0.14 s (every gradient
allocates shadows with it), `np.outer` 1.3 s (the adjoint of a matrix-vector product), `@`
0.2 s for each pair of layouts, a reshape 0.05 s per kind of shape (its size check, compiled
when lowered: three in a Hessian's driver). IR keeps the numpy function (rules and analyses know it by
identity); the typing of a call (`ir/typing.py`) and its lowering (`lower/emit.py`) use the
wrapper, compiled with `cache=True`: numba loads it from its cache after the first process,
with its bitcode, so LLVM still inlines it. Same arguments, same result type. The generated
drivers of `hessian`, `jacfwd`, ... call them by name (`DRIVER_NAMES`): numba types a driver
before moonlite does.

The wrappers are written out one by one: numba's disk cache finds a function by its source file
and line, so wrappers made in a loop would share one cache entry.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import _numba as nb


@nb.njit(cache=True)
def cached_zeros_like(a):
    return np.zeros_like(a)


@nb.njit(cache=True)
def cached_empty_like(a):
    return np.empty_like(a)


@nb.njit(cache=True)
def cached_zeros(shape, dtype):
    return np.zeros(shape, dtype)


@nb.njit(cache=True)
def cached_ascontiguousarray(a):
    return np.ascontiguousarray(a)


@nb.njit(cache=True)
def cached_reshape(a, shape):
    return np.reshape(a, shape)


@nb.njit(cache=True)
def cached_copy(a):
    return np.copy(a)


@nb.njit(cache=True)
def cached_outer(a, b):
    return np.outer(a, b)


@nb.njit(cache=True)
def cached_matmul(a, b):
    return a @ b


@nb.njit(cache=True)
def cached_dot(a, b):
    return np.dot(a, b)


# numpy function -> (the number of positional arguments the wrapper takes, the wrapper)
_WRAPPERS = {np.zeros_like: (1, cached_zeros_like), np.empty_like: (1, cached_empty_like),
             np.copy: (1, cached_copy), np.outer: (2, cached_outer),
             operator.matmul: (2, cached_matmul), np.dot: (2, cached_dot),
             np.zeros: (2, cached_zeros), np.ascontiguousarray: (1, cached_ascontiguousarray),
             np.reshape: (2, cached_reshape)}


def wrapper_for(callee, n_positional: int, has_keywords: bool):
    """The cached wrapper that stands in for `callee(*positional)`, or `callee` itself."""
    try:
        found = _WRAPPERS.get(callee)
    except TypeError:  # an unhashable callee (a bound method of an array, ...)
        return callee
    if found is None or has_keywords or found[0] != n_positional:
        return callee
    return found[1]


# what a generated driver's source may call by name (api_drivers.njit_driver)
DRIVER_NAMES = {"zeros": cached_zeros, "ascontiguousarray": cached_ascontiguousarray,
                "reshape": cached_reshape}
