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


# More ways a frozen value changed unseen, each a silently wrong derivative before (a helper's
# hunt): the value read only by a helper numba inlines, a kernel compiled for a second signature
# after the change (one record per kernel then), a global njit function rebound, a parameter's
# default array written in place, and a number rebound before the kernel's first call.
PROJECTION = np.array([[1.0, 0.5], [0.0, -1.0]])
DEFAULT_W = np.array([0.5, -1.0])
K = 2.0


@numba.njit(inline="always")
def _project(x):
    return PROJECTION @ x


@numba.njit
def through_an_inlined_helper(x):
    return np.sum(np.sin(_project(x)))


@numba.njit
def _sine(x):
    return np.sin(x)


@numba.njit
def _cosine(x):
    return np.cos(3.0 * x)


activation = _sine


@numba.njit
def activated(x):
    return np.sum(activation(x))


@numba.njit
def with_a_default(x, W=DEFAULT_W):
    return np.sum(np.sin(W * x))


@numba.njit
def twice_compiled(x):
    return np.sum(np.sin(DEFAULT_W * x))


@numba.njit
def scaled_by_k(x):
    return np.sum(K * x ** 2)


def _rebind(name, value):
    def change():
        globals()[name] = value
    return change


@pytest.mark.parametrize("kernel,change,described", [
    (through_an_inlined_helper, lambda: PROJECTION.__setitem__((0, 0), 3.0),
     "global array 'PROJECTION' that _project reads"),
    (activated, _rebind("activation", _cosine), "global njit function 'activation'"),
    (with_a_default, lambda: DEFAULT_W.__setitem__(0, 4.0), "default array of parameter 'W'"),
])
def test_values_frozen_through_helpers_functions_and_defaults_are_checked(
        kernel, change, described):
    x = np.array([0.3, -0.7])
    before = kernel(x)
    saved = (PROJECTION.copy(), DEFAULT_W.copy(), activation)
    change()
    try:
        assert kernel(x) == before  # numba keeps what it froze
        with pytest.raises(UnsupportedError, match=f"(?s){described}.*recompile"):
            moonlite.grad(kernel)(x)
        kernel.recompile()  # what the error says to do: then the derivative is of the new values
        np.testing.assert_allclose(moonlite.grad(kernel)(x), _fd_gradient(kernel, x), rtol=1e-6)
    finally:
        PROJECTION[:], DEFAULT_W[:] = saved[0], saved[1]
        globals()["activation"] = saved[2]
        kernel.recompile()


def test_each_signature_keeps_its_own_record():
    x = np.array([0.3, -0.7])
    twice_compiled(x)  # C-contiguous, with the first values
    saved = DEFAULT_W.copy()
    DEFAULT_W[:] += 5.0
    try:
        twice_compiled(np.ones(4)[::2])  # a strided signature, with the new values
        with pytest.raises(UnsupportedError, match="(?s)'DEFAULT_W'.*recompile"):
            moonlite.grad(twice_compiled)(x)
        g = moonlite.grad(twice_compiled)(np.array([0.3, 1.0, -0.7, 2.0])[::2])  # up to date
        np.testing.assert_allclose(g, DEFAULT_W * np.cos(DEFAULT_W * x), rtol=1e-12)
    finally:
        DEFAULT_W[:] = saved
        twice_compiled.recompile()


def test_a_kernel_reading_a_number_is_compiled_before_its_first_derivative():
    """Else the number rebound before the kernel's first call was compiled into the kernel
    while the derivative kept the old one."""
    global K
    x = np.array([0.3, -0.7])
    assert not scaled_by_k.signatures
    np.testing.assert_allclose(moonlite.grad(scaled_by_k)(x), 4.0 * x)
    assert scaled_by_k.signatures  # compiled with K = 2, as the derivative was taken
    K = 7.0
    try:
        assert scaled_by_k(x) == 2.0 * np.sum(x ** 2)  # numba keeps K = 2, and so does grad
        np.testing.assert_allclose(moonlite.grad(scaled_by_k)(x + 1.0), 4.0 * (x + 1.0))
        scaled_by_k.recompile()  # now both take K = 7
        np.testing.assert_allclose(moonlite.grad(scaled_by_k)(x), 14.0 * x)
    finally:
        K = 2.0
        scaled_by_k.recompile()


def _fd_gradient(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.shape[0])])
