"""Lists sorted (issue #20; capture/list_orders.py): `sorted(ys)`, and `sort` and `sorted`
with `key=` an njit function and `reverse=`. Values are compared with numba's own run
of the kernel (ties, -0.0 and nan included: numba's quicksort decides where they land), and
derivatives with finite differences."""

from collections import namedtuple

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule
from tests.helpers import assert_refused_in_both_modes

Hit = namedtuple("Hit", ["cost", "weight"])


@numba.njit
def median_absolute_deviation(x):
    """A robust scale: the median of |x - median(x)|, both medians of sorted() copies."""
    values = [v for v in x]
    ordered = sorted(values)
    n = len(ordered)
    centre = 0.5 * (ordered[(n - 1) // 2] + ordered[n // 2])
    spread = sorted([abs(v - centre) for v in values])
    return 0.5 * (spread[(n - 1) // 2] + spread[n // 2]) + 0.01 * values[0]


@numba.njit
def _magnitude(v):
    return abs(v)


@numba.njit
def largest_in_magnitude(x, k):
    """The k entries largest in magnitude, weighted by rank: `sort(key=, reverse=True)`."""
    values = [np.sin(v) for v in x]
    values.sort(key=_magnitude, reverse=True)
    s = 0.0
    for i in range(k):
        s += values[i] * (k - i)
    return s


@numba.njit
def _cost(hit):
    return hit.cost


@numba.njit
def cheapest_hits(x, k):
    """Namedtuple hits sorted by cost with `sorted(key=)`; the k cheapest weights summed."""
    hits = []
    for i in range(x.shape[0]):
        hits.append(Hit(x[i] * x[i], np.exp(-x[i]) * (i + 1)))
    best = sorted(hits, key=_cost)
    s = 0.0
    for hit in best[:k]:
        s += hit.weight
    return s


@numba.njit
def _second(pair):
    return pair[1]


@numba.njit
def pairs_by_second_entry(x):
    pairs = [(v, np.cos(v)) for v in x]
    pairs.sort(key=_second)
    return pairs[0][0] * 2.0 + pairs[-1][0] - pairs[1][1]


X = np.array([0.3, -0.8, 1.7, 0.2, -2.0, 0.9, 1.1])


@pytest.mark.parametrize("kernel, args, second_order", [
    (median_absolute_deviation, (X,), True),
    (largest_in_magnitude, (X, 3), False),
    (cheapest_hits, (X, 3), True),
    (pairs_by_second_entry, (X,), False),
])
def test_copied_sliced_and_sorted_lists(kernel, args, second_order):
    assert moonlite.value_and_grad(kernel)(*args)[0] == kernel(*args)
    fixed = tuple(range(1, len(args)))
    check_rule(kernel, *args, fixed=fixed, second_order=second_order)


def test_the_gradient_follows_the_entry_each_rank_holds():
    x = np.array([0.3, -1.2, 0.5])
    # sin: 0.2955, -0.932, 0.479; by magnitude, descending: x[1], x[2], x[0]
    cos = np.cos(x)
    expected = [1.0 * cos[0], 3.0 * cos[1], 2.0 * cos[2]]
    np.testing.assert_allclose(moonlite.grad(largest_in_magnitude)(x, 3), expected)


@numba.njit
def _rounded(v):
    return np.floor(v)


@numba.njit
def ties_zeros_and_nans(x):
    """Keys that tie (floor), and entries numba's quicksort orders its own way (-0.0, nan)."""
    by_floor = sorted([v for v in x], key=_rounded)
    plain = sorted([v * 1.0 for v in x])
    down = sorted([v * 1.0 for v in x], reverse=True)
    s = 0.0
    for i in range(len(by_floor)):
        s += (by_floor[i] + 2.0 * plain[i] + 3.0 * down[i]) * (i + 1)
    return s


@pytest.mark.parametrize("x", [
    np.array([1.2, 1.7, 1.1, -0.3, 1.9, 1.5, -0.6, 1.3, 1.05, 1.8, 1.4, 0.2, 1.6]),
    np.array([0.0, -0.0, 0.5, -0.0, 0.0, 0.25]),
    np.array([0.5, np.nan, 0.2, 0.9, np.nan, -0.1]),
])
def test_the_order_is_numbas_for_ties_signed_zeros_and_nans(x):
    value, _ = moonlite.value_and_grad(ties_zeros_and_nans)(x)
    np.testing.assert_equal(value, ties_zeros_and_nans(x))
    if len(np.unique(x)) == len(x) and not np.isnan(x).any():  # (equal entries swap places)
        check_rule(ties_zeros_and_nans, x)


@numba.njit
def _as_pair(v):
    return (v, v)


@numba.njit
def sorts_by_a_tuple_key(x):
    values = [v for v in x]
    values.sort(key=_as_pair)
    return values[0]


@numba.njit
def sorts_pairs_without_a_key(x):
    pairs = [(v, 2.0 * v) for v in x]
    return sorted(pairs)[0][1]


@pytest.mark.parametrize("kernel, construct", [
    (sorts_by_a_tuple_key, r"sorting by the key _as_pair\(\), which does not return a number"),
    (sorts_pairs_without_a_key, r"a list of tuples built by append sorted without a key"),
])
def test_orders_moonlite_cannot_follow_are_refused(kernel, construct):
    assert_refused_in_both_modes(kernel, construct)
