"""Calls of numpy functions that derived code makes through wrappers compiled once per machine
(`ir/cached_calls.py`): the same results as numpy's, substituted only for the call forms they
take, and what a first derivative call compiles with them."""

import numba
import numba.core.registry
import numpy as np
from numba.core import event

import moonlite
from moonlite.ir.cached_calls import (DRIVER_NAMES, cached_ascontiguousarray, cached_copy,
                                      cached_dot, cached_empty_like, cached_matmul,
                                      cached_outer, cached_reshape, cached_zeros,
                                      cached_zeros_like, wrapper_for)
from moonlite.ir.typing import call_result_type
from moonlite.ir.types import from_numba

RNG = np.random.default_rng(7)
M = RNG.standard_normal((3, 4))
V3, V4 = RNG.standard_normal(3), RNG.standard_normal(4)


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_wrappers_compute_what_numpy_computes_for_every_layout():
    for a in (M, np.asfortranarray(M), M[:, ::2]):  # C, F and strided ('A') layouts
        _same(cached_zeros_like(a), np.zeros_like(a))
        assert cached_empty_like(a).shape == a.shape
        _same(cached_copy(a), np.copy(a))
        _same(cached_ascontiguousarray(a), np.ascontiguousarray(a))
        assert cached_ascontiguousarray(a).flags.c_contiguous
    _same(cached_outer(V3, V4), np.outer(V3, V4))
    _same(cached_matmul(M, V4), M @ V4)
    _same(cached_matmul(V3, M), V3 @ M)
    _same(cached_matmul(M.T, M), M.T @ M)
    _same(cached_dot(M, V4), np.dot(M, V4))
    _same(cached_zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))
    _same(cached_reshape(M, (4, 3)), np.reshape(M, (4, 3)))
    _same(cached_reshape(M, (-1,)), np.reshape(M, (-1,)))
    assert np.shares_memory(cached_reshape(M, (-1,)), M)  # a view, as numpy's
    assert DRIVER_NAMES == {"zeros": cached_zeros, "ascontiguousarray": cached_ascontiguousarray,
                            "reshape": cached_reshape}


def test_a_wrapper_stands_in_only_for_the_call_form_it_takes():
    assert wrapper_for(np.outer, 2, False) is cached_outer
    assert wrapper_for(np.outer, 2, True) is np.outer  # np.outer(a, b, out=...)
    assert wrapper_for(np.zeros, 1, False) is np.zeros  # np.zeros(n): dtype left to numpy
    assert wrapper_for(np.zeros_like, 2, False) is np.zeros_like  # a dtype given
    assert wrapper_for(np.sin, 1, False) is np.sin
    unhashable = M.sum  # a bound method of an array: no hash, never wrapped
    assert wrapper_for(unhashable, 0, False) is unhashable


def _numba_result_type(fn, *args):
    ctx = numba.core.registry.cpu_target.typing_context
    sig = ctx.resolve_function_type(ctx.resolve_value_type(fn), tuple(map(numba.typeof, args)), {})
    return from_numba(sig.return_type)


def test_the_builder_types_a_wrapped_call_as_numba_types_the_numpy_call():
    f = np.asfortranarray(M)
    assert call_result_type(np.zeros_like, (from_numba(numba.typeof(f)),)) == \
        _numba_result_type(np.zeros_like, f)
    v3, v4 = from_numba(numba.typeof(V3)), from_numba(numba.typeof(V4))
    assert call_result_type(np.outer, (v3, v4)) == _numba_result_type(np.outer, V3, V4)


@numba.njit
def _scores(w, a, x):
    # a matrix-vector product (its adjoints: an outer product, a vector-matrix product) and
    # numpy reductions of a 3-d array, as a user writes them
    r = a @ w
    m = np.max(x)
    return np.sum(r * r) + m + np.log(np.sum(np.exp(x - m)))


def _numba_implementations_compiled_outside_cached_functions(fn, *args) -> list:
    """qualnames of numba's own functions compiled while `fn(*args)` runs, other than those
    compiled inside a function numba caches on disk (compiled once per machine)."""
    with event.install_recorder("numba:compile") as rec:
        fn(*args)
    stack, found = [], []
    for _, ev in rec.buffer:
        disp = ev.data["dispatcher"]
        if ev.is_start:
            module = getattr(disp.py_func, "__module__", "") or ""
            cached = type(disp._cache).__name__ != "NullCache"
            if module.startswith("numba.") and not any(stack):
                found.append(disp.py_func.__qualname__)
            stack.append(cached)
        else:
            stack.pop()
    return found


def test_a_first_gradient_compiles_no_numpy_implementation_the_primal_or_a_wrapper_has():
    # capture once typed the kernel under the derived function's flags (numba's error model
    # "numpy", inherited from the enclosing compile) and the derived code used that model:
    # numba compiled np.max, np.sum and np.outer again in every process
    w, a, x = V4.copy(), M.copy(), RNG.standard_normal((2, 3, 2))
    primal = _scores(w, a, x)
    g = moonlite.grad(_scores, argnums=(0, 1, 2))
    assert _numba_implementations_compiled_outside_cached_functions(g, w, a, x) == []
    gw, ga, gx = g(w, a, x)
    r = a @ w
    np.testing.assert_allclose(gw, 2 * r @ a)
    np.testing.assert_allclose(ga, 2 * np.outer(r, w))
    e = np.exp(x - x.max())
    soft = e / e.sum()
    np.testing.assert_allclose(gx, soft, atol=1e-12)  # d max is a subgradient: flat max
    assert np.isfinite(primal)
