"""The driver's caches (`driver.py`): one derived function per function and options, kept by
the function itself, and never a stale derivative after a recompile or a new rule."""

import gc
import weakref

import numba
import numpy as np
import pytest

import moonlite
from moonlite import driver

SCALE = 2.0


@numba.njit
def scaled_square(x):
    return SCALE * np.sum(x * x)


X = np.array([1.0, -2.0, 0.5])


def test_the_same_options_give_the_same_derived_function():
    @numba.njit
    def f(x, y):
        return np.sum(x * y)

    assert moonlite.grad(f) is moonlite.grad(f)
    assert moonlite.grad(f, argnums=(0, 1)) is moonlite.grad(f, argnums=(0, 1))
    assert moonlite.grad(f, argnums=1) is not moonlite.grad(f)
    assert moonlite.value_and_grad(f) is moonlite.value_and_grad(f)
    assert moonlite.value_and_grad(f) is not moonlite.grad(f)
    assert moonlite.hessian(f) is moonlite.hessian(f)


def test_the_fast_path_still_refuses_bad_argnums():
    @numba.njit
    def f(x, y):
        return np.sum(x * y)

    moonlite.grad(f, argnums=1)  # cached under argnums=1; True == 1 must not find it
    for bad in (True, (True,), [1]):
        with pytest.raises(moonlite.ArgumentError, match="argnums"):
            moonlite.grad(f, argnums=bad)
    moonlite.hessian(f, argnums=1)
    with pytest.raises(moonlite.ArgumentError, match="argnums"):
        moonlite.hessian(f, argnums=True)


def test_derived_functions_go_with_their_function():
    def make():
        @numba.njit
        def f(x):
            return np.sum(np.sin(x))
        return f

    f = make()
    g = moonlite.grad(f)
    np.testing.assert_allclose(g(X), np.cos(X))
    moonlite.jvp(f, (X,), (X,))
    dead_f, dead_g = weakref.ref(f), weakref.ref(g)
    del f, g
    gc.collect()
    assert dead_f() is None and dead_g() is None


def test_a_recompiled_kernel_gets_fresh_derivatives_even_from_held_functions():
    global SCALE
    g, h = moonlite.grad(scaled_square), moonlite.hessian(scaled_square)
    try:
        np.testing.assert_allclose(g(X), 2 * SCALE * X)
        assert scaled_square(X) == pytest.approx(2.0 * np.sum(X * X))
        SCALE = 3.0  # numba froze 2.0 into the compiled kernel, and so did moonlite
        assert scaled_square(X) == pytest.approx(2.0 * np.sum(X * X))
        scaled_square.recompile()
        assert scaled_square(X) == pytest.approx(3.0 * np.sum(X * X))
        np.testing.assert_allclose(g(X), 6.0 * X)  # the dispatcher held since before
        np.testing.assert_allclose(moonlite.grad(scaled_square)(X), 6.0 * X)
        np.testing.assert_allclose(h(X), 6.0 * np.eye(3))
        out, dout = moonlite.jvp(scaled_square, (X,), (np.ones(3),))
        assert dout == pytest.approx(6.0 * np.sum(X))
        hv = moonlite.hvp(scaled_square, (X,), (np.ones(3),))[0]
        np.testing.assert_allclose(hv, np.full(3, 6.0))
    finally:
        SCALE = 2.0
        scaled_square.recompile()
    np.testing.assert_allclose(g(X), 4.0 * X)


def test_a_rule_registered_later_reaches_functions_already_derived():
    @numba.njit
    def bucket(x):
        return np.floor(x) + x * x

    @numba.njit
    def f(x):
        return np.sum(bucket(x)) + np.sum(x)

    g = moonlite.grad(f)
    np.testing.assert_allclose(g(X), 2 * X + 1)
    moonlite.nondifferentiable(bucket)
    np.testing.assert_allclose(g(X), np.ones(3))
    np.testing.assert_allclose(moonlite.jvp(f, (X,), (np.ones(3),))[1], 3.0)


def test_clearing_the_cache_forgets_every_rule():
    @numba.njit
    def f(x):
        return np.sum(x * x * x)

    moonlite.grad(f)(X)
    assert driver.cached_rule_count() > 0
    driver.clear_cache()
    assert driver.cached_rule_count() == 0
    np.testing.assert_allclose(moonlite.grad(f)(X), 3 * X * X)
