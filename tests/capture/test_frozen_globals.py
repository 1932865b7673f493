"""Global arrays numba froze into a kernel: a derivative sees the same values, or is refused
(`capture/frozen_globals.py`)."""

from __future__ import annotations

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
