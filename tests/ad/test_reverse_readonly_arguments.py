"""Read-only array arguments (np.broadcast_to results, memory maps, arrays with
write=False) are differentiated like any other in reverse mode: they and their views get
shadows. Before, the rule returned no gradient for them and failed verification."""

import numba
import numpy as np

import moonlite
from moonlite.testing import check_rule


@numba.njit
def views_of_read_only(x, y):
    return np.sum(np.sin(x[1:]) * y[:-1]) + x[0] * np.sum(y.T)


@numba.njit
def tuple_of_read_only(t):
    a, b = t
    return np.sum(a * b[::-1])


def _read_only(a):
    a = a.copy()
    a.setflags(write=False)
    return a


def test_read_only_arguments_and_their_views():
    rng = np.random.default_rng(0)
    x, y = _read_only(rng.uniform(0.1, 1.0, 5)), _read_only(rng.uniform(0.1, 1.0, 5))
    check_rule(views_of_read_only, x, y, second_order=True)


def test_read_only_arrays_in_a_tuple_argument():
    rng = np.random.default_rng(1)
    a, b = _read_only(rng.uniform(size=4)), _read_only(rng.uniform(size=4))
    ga, gb = moonlite.grad(tuple_of_read_only)((a, b))
    np.testing.assert_allclose(ga, b[::-1])
    np.testing.assert_allclose(gb, a[::-1])
