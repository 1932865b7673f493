"""Global arrays numba froze into a kernel: a derivative sees the same values, or is refused
(`capture/frozen_globals.py`)."""

from __future__ import annotations

import types

import numba
import numpy as np
import pytest

import moonlite
from moonlite.errors import UnsupportedError

WEIGHTS = np.array([1.0, 2.0, 3.0])
OTHER = np.array([1.0, 1.0, 1.0])


@numba.njit
def weighted(x):
    return np.sum(WEIGHTS * x * x)


@numba.njit
def other_weighted(x):
    return np.sum(OTHER * x)


def test_a_global_changed_after_compilation_is_refused_in_every_mode():
    x = np.ones(3)
    assert weighted(x) == 6.0  # compiled: numba froze WEIGHTS
    WEIGHTS[:] = 10.0
    try:
        for run in (lambda: moonlite.grad(weighted)(x), lambda: moonlite.jvp(weighted, (x,), (x,)),
                    lambda: moonlite.vjp(weighted, x), lambda: moonlite.hvp(weighted, (x,), (x,))):
            with pytest.raises(UnsupportedError, match="(?s)WEIGHTS.*recompile"):
                run()
        weighted.recompile()  # what the error says to do
        assert weighted(x) == 30.0
        np.testing.assert_array_equal(moonlite.grad(weighted)(x), 20.0 * x)
    finally:
        WEIGHTS[:] = [1.0, 2.0, 3.0]
        weighted.recompile()


def test_an_unchanged_global_is_fine_and_a_kernel_not_yet_compiled_is_compiled_first():
    assert not other_weighted.signatures
    np.testing.assert_array_equal(moonlite.grad(other_weighted)(np.ones(3)), OTHER)
    assert other_weighted.signatures  # compiled now: its frozen values are on record


def test_closure_arrays_are_checked_too():
    table = np.array([2.0, 3.0])

    @numba.njit
    def closes_over(x):
        return np.sum(table * x)

    x = np.ones(2)
    closes_over(x)
    table[0] = 7.0
    with pytest.raises(UnsupportedError, match="table"):
        moonlite.grad(closes_over)(x)


# What a helper's hunt found given no derivative's refusal: a global tuple holding an array,
# a module's array read as an attribute, a number rebound; and attribute names (`A.T`, `p.W`)
# taken for globals of that name.
CONFIG = (np.array([1.0, 2.0, 3.0]), 0.5)
SCALE = 0.5
settings = types.ModuleType("settings")  # as `import settings` of a user's module
settings.TABLE = np.array([1.0, 2.0, 3.0])
T = np.linspace(0.0, 1.0, 5)  # a time grid, unrelated to `A.T` below


@numba.njit
def configured(x):
    w, c = CONFIG
    return np.sum(w * x * x) + c


@numba.njit
def from_settings(x):
    return np.sum(settings.TABLE * x * x)


@numba.njit
def scaled(x):
    return np.sum(x * x) * SCALE


@numba.njit
def quadratic_form(A, x):
    return x @ A.T @ x


@pytest.mark.parametrize("kernel,change,name", [
    (configured, lambda: CONFIG[0].__setitem__(slice(None), 10.0), "CONFIG"),
    (from_settings, lambda: settings.TABLE.__setitem__(slice(None), 10.0), "settings.TABLE"),
    (scaled, lambda: globals().__setitem__("SCALE", 0.7), "SCALE"),
])
def test_frozen_tuples_module_arrays_and_numbers_are_checked(kernel, change, name):
    """They gave the derivative of the new values, and a value other than f(x), silently."""
    x = np.ones(3)
    before = kernel(x)
    saved = (CONFIG[0].copy(), settings.TABLE.copy(), SCALE)
    change()
    try:
        assert kernel(x) == before  # numba keeps what it froze
        for run in (lambda: moonlite.grad(kernel)(x),
                    lambda: moonlite.jvp(kernel, (x,), (x,))):
            with pytest.raises(UnsupportedError, match=f"(?s)global .*'{name}'.*recompile"):
                run()
    finally:
        CONFIG[0][:], settings.TABLE[:] = saved[0], saved[1]
        globals()["SCALE"] = saved[2]


def test_attribute_names_are_not_globals():
    global T
    A, x = np.array([[1.0, 2.0], [0.5, 3.0]]), np.array([1.0, -1.0])
    quadratic_form(A, x)
    saved, T = T, np.linspace(0.0, 2.0, 5)  # rebinding the unrelated T
    try:
        np.testing.assert_allclose(moonlite.grad(quadratic_form)(A, x), np.outer(x, x))
    finally:
        T = saved


def test_a_module_array_read_as_an_attribute_is_a_constant_in_every_mode():
    """Forward mode refused it ("a differentiable global value"), reverse mode took it: numba
    types `settings.TABLE` as a writable array, where a global named in the kernel is read
    only."""
    from moonlite.testing import check_rule
    check_rule(from_settings, np.array([0.3, -1.2, 0.8]), second_order=True)
