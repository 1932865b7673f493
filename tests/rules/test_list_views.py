"""`list_entry` (rules/list_views.py), the view of a flat buffer that entries of lists of arrays
are read as: its values, and every mode against finite differences, for reads through it and
writes through it (its tangent and its shadow are the same view of the buffer's)."""

import numba
import numpy as np

from moonlite.rules.list_views import list_entry
from moonlite.testing import check_rule

FLAT = np.array([0.3, -0.5, 0.8, 1.1, -0.2, 0.7, 0.4, -0.9])


def test_list_entry_is_the_view_numpy_gives():
    entry = list_entry(FLAT, 2, (2, 3))
    np.testing.assert_array_equal(entry, FLAT[2:8].reshape(2, 3))
    entry[1, 0] = 9.0  # a view: the buffer sees the write
    assert FLAT[5] == 9.0
    FLAT[5] = 0.7
    assert list_entry(FLAT, 3, (0,)).shape == (0,)


@numba.njit
def read_through_entries(flat):
    a = list_entry(flat, 2, (2, 3))
    b = list_entry(flat, 0, (4,))
    return np.sum(a @ np.sin(b[:3])) + b[1] * a[1, 2]


@numba.njit
def written_through_an_entry(flat):
    buffer = flat * 1.0
    v = list_entry(buffer, 1, (3,))
    v *= buffer[0]
    return np.sum(buffer ** 2) + np.sum(v)


def test_list_entry_in_every_mode():
    for kernel in (read_through_entries, written_through_an_entry):
        check_rule(kernel, FLAT.copy(), second_order=True)
