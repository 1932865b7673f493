"""np.take, np.delete, np.repeat and np.append of float arrays (capture/calls.py:
`moved_numbers`): numba's function called on the places of the entries, the numbers gathered
from the places it returns. They were refused in reverse mode ("no reverse rule is
registered") though `y[idx]` worked (found by a helper's hunt on real kernels). Each kernel is
checked in every mode to second order against finite differences (moonlite.testing)."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule


@numba.njit
def gathered_by_take(y, idx):
    s = np.take(y, -1) * 2.0 + np.sum(np.take(y, idx) ** 2)
    return s + np.sum(y.take(np.array([[5, 0], [1, 1]])) ** 3)


@numba.njit
def deleted(y, k):
    return np.sum(np.delete(y, k) ** 2) + np.sum(np.delete(y, np.array([0, 2])) ** 3)


@numba.njit
def repeated(y):
    return np.sum(np.repeat(y, 2) ** 2) + np.sum(y.repeat(np.array([1, 0, 2, 1, 1, 1])) ** 3)


@numba.njit
def appended(y, z):
    s = np.sum(np.append(y, z) ** 3) + np.sum(np.append(z, y[1, 2]) ** 2)
    return s + np.sum(np.append(z, y.T) * y[0, 1])


@numba.njit
def moving_average_of_padded(x, w):
    """A user's padding and gathering, as written: the series padded with its last value,
    the window's entries taken by index."""
    padded = np.append(x, np.repeat(x[-1:], w - 1))
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = np.mean(np.take(padded, np.arange(i, i + w)))
    return np.sum(out ** 2)


Y = np.array([[0.5, -1.0, 2.0], [0.3, 0.7, -0.4]])


# second order (hvp: forward over reverse) where it adds a path: the gathers' own rules are
# the same in every kernel here
@pytest.mark.parametrize("kernel, args, second_order", [
    (gathered_by_take, (Y, np.array([2, 0, 2])), True),
    (gathered_by_take, (Y.T, np.array([1, -2])), False),  # F: entries in C order of Y.T
    (deleted, (Y, 1), True),
    (deleted, (Y[0], -1), False),
    (repeated, (Y,), False),
    (appended, (Y, np.array([0.2, 1.5])), True),
    (moving_average_of_padded, (np.linspace(0.1, 1.0, 7), 3), True),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) else None)
def test_moved_numbers_in_every_mode(kernel, args, second_order):
    check_rule(kernel, *args, second_order=second_order)


def test_float32_in_every_mode():  # (float32 differences: a looser tolerance)
    check_rule(gathered_by_take, Y.astype(np.float32), np.array([3]), rtol=1e-3)


def test_an_index_out_of_range_raises_as_numba_does():
    with pytest.raises(IndexError):
        gathered_by_take(Y, np.array([6]))
    with pytest.raises(IndexError):
        moonlite.grad(gathered_by_take)(Y, np.array([6]))
