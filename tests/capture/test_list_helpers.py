"""Lists of tuples and of arrays built by append, passed to njit helpers
(capture/list_helpers.py): each helper runs as its column form, given the list's buffers and
length. Checked in every mode against finite differences to second order by
`moonlite.testing.check_rule`; a helper changing the list's length, or writing an entry of a
list of arrays, is refused."""

from collections import namedtuple

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule
from tests.helpers import assert_refused_in_both_modes

Event = namedtuple("Event", ["time", "index", "weight"])


@numba.njit
def _pair_energy(pairs, x, eps=1.0):
    """A soft pair potential summed over a neighbour list of (i, j) index pairs."""
    e = 0.0
    for i, j in pairs:
        d = x[i] - x[j]
        e += eps * np.exp(-d * d)
    return e


@numba.njit
def neighbour_energy(x, cutoff):
    """A neighbour list built by a cut-off, as molecular-dynamics kernels build it."""
    pairs = []
    n = x.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            if abs(x[i] - x[j]) < cutoff:
                pairs.append((i, j))
    return _pair_energy(pairs, x, eps=0.5) + _pair_energy(pairs, x)


@numba.njit
def _discounted(events, rate):
    total = 0.0
    for k in range(len(events)):
        total += events[k].weight * np.exp(-rate * events[k].time)
    return total


@numba.njit
def _last_weight(events):
    return _discounted(events[-1:], 0.0) + events[-1].weight  # (a slice is a new list)


@numba.njit
def event_value(x, rate):
    """Namedtuple events, read by field in a helper and in the helper's helper."""
    events = []
    t = 0.0
    for i in range(x.shape[0]):
        t += x[i] * x[i]
        if x[i] > -0.6:
            events.append(Event(t, i, np.sin(x[i])))
    return _discounted(events, rate) + _last_weight(events)


@numba.njit
def _rescale(points, a):
    """Writes the entries it is given: the caller's list sees them."""
    for k in range(len(points)):
        px, py = points[k]
        points[k] = (a * px, py + a)


@numba.njit
def _moment(points):
    s = 0.0
    for k, (px, py) in enumerate(points):
        s += (k + 1.0) * px * np.cos(py)
    return s


@numba.njit
def rescaled_moment(x):
    points = []
    for i in range(x.shape[0] - 1):
        points.append((x[i], x[i + 1] ** 2))
    _rescale(points, x[0])
    return _moment(points) + points[0][0]


@numba.njit
def _weighted_sum(values, points, x):
    s = 0.0
    for k in range(len(points)):
        s += values[k] * points[k][0] * x[k]
    return s


@numba.njit
def numbers_and_pairs(x):
    """A list of numbers and a list of (float, int) tuples given to one helper."""
    values = []
    points = []
    for v in x:
        values.append(v * v)
        points.append((np.sin(v), 1))
    return _weighted_sum(values, points, x)


@numba.njit
def _snapshot_norms(states):
    out = np.empty(len(states))
    for k in range(len(states)):
        out[k] = np.sum(states[k] * states[k])
    return out


@numba.njit
def _final_energy(states, k):
    return np.sum(np.sin(k * states[-1])) + 0.5 * np.sum(states[0] ** 2)


@numba.njit
def trajectory_norms(x0, k):
    """Snapshots of an integrator appended as arrays, given to helpers that return an array
    and a number."""
    x = x0.copy()
    states = []
    for _ in range(4):
        x = x + 0.1 * np.sin(k * x)
        states.append(x)
    return _snapshot_norms(states) * _final_energy(states, k)


@numba.njit
def _forward(layers, h):
    for W in layers:
        h = np.tanh(W @ h)
    return np.sum(h)


@numba.njit
def two_layers(W1, W2, x):
    """A list literal of weight matrices given to a helper (kept as a list of arrays)."""
    return _forward([W1, W2], x)


@numba.njit
def _polygon_area(vertices):
    s = 0.0
    n = len(vertices)
    for k in range(n):
        x0, y0 = vertices[k]
        x1, y1 = vertices[(k + 1) % n]
        s += x0 * y1 - x1 * y0
    return 0.5 * s


@numba.njit
def triangle_area(x):
    """A list literal of vertex tuples given to a helper (the shoelace formula)."""
    return _polygon_area([(x[0], x[1]), (x[2], x[3]), (x[4], -x[0])])


@numba.njit
def _mean(values):
    return sum(values) / len(values)


@numba.njit
def mean_of_a_literal(x):
    """A list literal of numbers given to a helper (as the array of its entries)."""
    return _mean([x[0] * x[1], np.sin(x[2]), 2.0])


X = np.array([0.3, -0.5, 0.8, 0.1, -0.2])
_RNG = np.random.default_rng(3)


@pytest.mark.parametrize("kernel, args", [
    (neighbour_energy, (X, 0.65)),  # (no distance near the cut-off: the pairs stay)
    (event_value, (X, 0.4)),
    (rescaled_moment, (X,)),
    (numbers_and_pairs, (X,)),
    (two_layers, (_RNG.standard_normal((3, 3)), _RNG.standard_normal((3, 3)), X[:3].copy())),
    (triangle_area, (X,)),
    (mean_of_a_literal, (X,)),
], ids=["neighbours", "events", "written", "mixed", "layers", "polygon", "numbers"])
def test_helpers_given_lists_in_every_mode(kernel, args):
    check_rule(kernel, *args, second_order=True)


def test_a_helper_given_a_list_of_arrays_returns_an_array():
    check_rule(trajectory_norms, X, 1.3)


def test_layers_of_different_shapes_raise_a_clear_error():
    """The list of arrays is one array of rows: entries of different shapes cannot be rows of
    it, which is a run-time ValueError, never a wrong value."""
    W1, W2, x = np.ones((4, 3)), np.ones((4, 4)), np.ones(3)
    with pytest.raises(ValueError, match="the arrays appended to a list differ in shape"):
        moonlite.grad(two_layers)(W1, W2, x)


@numba.njit
def _grows_an_alias(points):
    more = points
    more.append((1.0, 2.0))
    return len(more)


@numba.njit
def _passes_it_on(points):
    return _grows_an_alias(points)


@numba.njit
def grown_by_a_helper(x):
    points = [(x[0], x[1])]
    points.append((x[1], x[2]))
    return points[0][0] * _passes_it_on(points)


@numba.njit
def _writes_an_entry(states):
    states[0][1] = 5.0
    return np.sum(states[0])


@numba.njit
def array_entry_written_by_a_helper(x):
    states = []
    states.append(x * 2.0)
    return _writes_an_entry(states)


@numba.njit
def _recursive_sum(points, n):
    if n == 0:
        return 0.0
    return points[n - 1][0] * points[n - 1][1] + _recursive_sum(points, n - 1)


@numba.njit
def given_to_a_recursive_helper(x):
    points = []
    for i in range(x.shape[0] - 1):
        points.append((x[i], x[i + 1]))
    return _recursive_sum(points, len(points))


@pytest.mark.parametrize("kernel, construct", [
    (grown_by_a_helper, r"a list given to _grows_an_alias\(\) changed in length there"),
    (given_to_a_recursive_helper, r"a recursive function, _recursive_sum\(\), given a list"),
    (array_entry_written_by_a_helper, "writing into an entry of a list of arrays"),
], ids=["grown", "array_entry_written", "recursive"])
def test_helpers_changing_what_the_caller_holds_are_refused(kernel, construct):
    assert_refused_in_both_modes(kernel, construct)
