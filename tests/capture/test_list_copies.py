"""Lists copied, sliced, extended and joined (issue #20; capture/lists.py): `ys.copy()`,
`list(ys)`, `list(...)` of an array, a range or a tuple, `ys[a:b:c]`, `ys.extend(zs)` of a list or an array,
`ys + zs`, `ys += zs`. Values are compared with numba's run of the kernel, derivatives with
finite differences."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule
from tests.helpers import assert_refused_in_both_modes


@numba.njit
def snapshot_and_grow(x):
    """A copy taken before more appends: the two lists part ways."""
    trail = [v * v for v in x]
    before = trail.copy()
    trail.append(trail[-1] * 3.0)
    later = list(trail)
    later.pop(0)
    return sum(before) * 2.0 + later[-1] - len(later) * before[0]


@numba.njit
def window_slices(x):
    ys = [np.tanh(v) for v in x]
    tail = ys[-3:]
    evens = ys[::2]
    backwards = ys[::-1]
    middle = ys[1:-1]
    return tail[0] * 3.0 + sum(evens) + backwards[0] * backwards[1] + middle[-1] \
        + len(ys[5:]) * 0.5


@numba.njit
def array_to_list_edited(x):
    ys = list(x)
    ys.insert(1, x[2] * 2.0)
    ys.pop()
    ordered = sorted(x, reverse=True)
    return ys[1] * ys[2] + ordered[0] - ordered[-1] * 0.5


@numba.njit
def extended_by_lists_and_arrays(x):
    squares = [v * v for v in x]
    positive = [np.sin(v) for v in x if v > 0.0]
    squares.extend(positive)
    squares.extend(x[1:3])
    squares.extend(squares)  # its own entries, read before it grows
    return squares[-1] * 2.0 + squares[len(x)] + len(squares) * 0.1 + sum(squares)


@numba.njit
def joined(x):
    squares = [v * v for v in x]
    sines = [np.sin(v) for v in x]
    both = squares + sines
    squares += sines
    squares += squares
    return both[len(x)] * 3.0 + squares[-1] + sum(squares) + len(squares) * 0.5


@numba.njit
def pairs_accumulated(x):
    """`acc += [a, b]` in a loop, as a running log of values and their squares."""
    acc = [0.0]
    for v in x:
        acc += [v, v * v]
    acc.extend((x[0], x[1] * 2.0))
    return sum(acc) + acc[-3] * acc[1]


@numba.njit
def points_joined(x):
    near = [(v, 2.0 * v) for v in x if abs(v) < 0.8]
    far = [(v, v * v) for v in x if abs(v) >= 0.8]
    everything = near + far
    s = 0.0
    for a, b in everything:
        s += a * b
    return s + everything[-1][1]


@numba.njit
def from_a_range_and_a_tuple(x):
    """`list(range(n))` (positions, reversed) and `sorted()` of a tuple: new lists."""
    order = list(range(x.shape[0]))
    order.reverse()
    s = 0.0
    for k, i in enumerate(order):
        s += x[i] * (k + 1)
    middle = sorted((x[0], x[1] * 2.0, x[2]))[1]
    return s + middle * list(range(1, 9, 3))[-1]


X = np.array([0.3, -0.9, 0.7, 0.4, 1.3])


@pytest.mark.parametrize("kernel, second_order", [
    (snapshot_and_grow, True),
    (window_slices, False),
    (array_to_list_edited, False),
    (extended_by_lists_and_arrays, True),
    (joined, False),
    (pairs_accumulated, True),
    (points_joined, False),
    (from_a_range_and_a_tuple, False),
])
def test_copied_sliced_extended_and_joined_lists(kernel, second_order):
    assert moonlite.value_and_grad(kernel)(X)[0] == kernel(X)
    check_rule(kernel, X, second_order=second_order)


@numba.njit
def extends_floats_with_ints(x):
    ys = [v for v in x]
    ys.extend(np.arange(3))
    return sum(ys)


@numba.njit
def extends_while_walking(x):
    ys = list(x)
    for v in ys:
        if len(ys) < 6:
            ys += [v]
    return sum(ys)


@pytest.mark.parametrize("kernel, construct", [
    (extends_floats_with_ints, r"list.extend\(\) of a list of float64 with array\(int64"),
    (extends_while_walking, r"a for loop over a list that changes the same list's length"),
])
def test_extensions_moonlite_cannot_follow_are_refused(kernel, construct):
    assert_refused_in_both_modes(kernel, construct)
