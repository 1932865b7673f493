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
from tests.helpers import assert_refused_in_both_modes, central_differences

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
    """A list literal of weight matrices given to a helper: the tuple of them (nothing changes
    the list: `ListAnalysis.tuples_for_helpers`)."""
    return _forward([W1, W2], x)


@numba.njit
def _net(layers, biases, x):
    h = x
    for k, (W, b) in enumerate(zip(layers, biases)):
        h = W @ h + b
        if k < len(layers) - 1:
            h = np.tanh(h)
    return h


@numba.njit
def mlp_loss(x, W1, W2, W3, b1, b2, b3, y):
    """An MLP whose layers differ in shape, given to a helper as list literals."""
    return np.sum((_net([W1, W2, W3], [b1, b2, b3], x) - y) ** 2)


@numba.njit
def mlp_in_the_kernel(x, W1, W2, W3):
    """The layers of an MLP in a list literal walked in the kernel (`for W in layers`, a tuple
    indexed at run time: reverse mode picks the entry's shadow at run time too)."""
    layers = [W1, W2, W3]
    h = x
    for k in range(len(layers)):
        h = np.tanh(layers[k] @ h)
    return np.sum(h)


@numba.njit
def _scale_each(ws, s):
    for w in ws:
        w *= s


@numba.njit
def scaled_through_the_list(x, s):
    """A helper writing the arrays of a list literal: the kernel sees the writes (a tuple holds
    references, as a list does)."""
    a = x.copy()
    b = x[:2] * 2.0
    _scale_each([a, b], s)
    return np.sum(a ** 2) + np.sum(b)


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


def test_layers_of_different_shapes_in_every_mode():
    """A list literal of arrays given to a helper is the tuple of its arrays, which may differ
    in shape (as the entries of a list of arrays built by append may)."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(4), rng.standard_normal(2)
    W = [rng.standard_normal(s) for s in ((5, 4), (3, 5), (2, 3))]
    b = [rng.standard_normal(n) for n in (5, 3, 2)]
    check_rule(mlp_loss, x, *W, *b, y, second_order=True, vjp=False)
    check_rule(mlp_in_the_kernel, x, *W, second_order=True)
    check_rule(two_layers, W[0], rng.standard_normal((4, 5)), x, second_order=True, vjp=False)
    check_rule(scaled_through_the_list, X, 0.7, second_order=True)


@numba.njit
def _appends_a_layer(layers, W):
    layers.append(W)
    return len(layers)


@numba.njit
def grows_a_literal_in_a_helper(W1, W2):
    return _appends_a_layer([W1, W2], W1) * np.sum(W1)


@numba.njit
def _appends_a_layer_copy(layers, W):
    layers.append(2.0 * W)
    return len(layers)


@numba.njit
def grows_a_literal_with_a_copy(W1, W2):
    layers = [W1, W2]
    n = _appends_a_layer_copy(layers, W1)
    return n * np.sum(layers[2] * layers[1])


def test_a_helper_growing_a_literal_of_arrays():
    """A helper appending to a list literal of arrays goes through its list-changing form
    (test_list_changing_helpers.py); one appending an array it is given (the list would hold
    that array itself) is refused by name."""
    W = np.ones((2, 2))
    with pytest.raises(moonlite.UnsupportedError, match=r"appending an array "
                                                        r"_appends_a_layer\(\) is given"):
        moonlite.grad(grows_a_literal_in_a_helper)(W, W)
    rng = np.random.default_rng(5)
    check_rule(grows_a_literal_with_a_copy, rng.standard_normal((2, 2)),
               rng.standard_normal((2, 2)))


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
    (given_to_a_recursive_helper, r"a recursive function, _recursive_sum\(\), given a list"),
    (array_entry_written_by_a_helper, "writing into an entry of a list of arrays"),
], ids=["recursive", "array_entry_written"])
def test_helpers_changing_what_the_caller_holds_are_refused(kernel, construct):
    assert_refused_in_both_modes(kernel, construct)


def test_a_list_grown_through_another_name_in_a_helper_it_is_handed_to():
    """Refused until the list-changing form: `_passes_it_on` hands the list to a helper that
    appends through another name (`more = points`), whose plain form changes a length."""
    x = np.array([0.4, -0.3, 0.9])
    value, g = moonlite.value_and_grad(grown_by_a_helper)(x)
    assert value == grown_by_a_helper(x)
    np.testing.assert_allclose(g, [3.0, 0.0, 0.0])  # x[0] * (2 + 1)
    check_rule(grown_by_a_helper, x, second_order=True, vjp=False)


@numba.njit
def _mlp_of_pairs(params, x):
    h = x
    for W, b in params:
        h = np.tanh(W @ h + b)
    return h


@numba.njit
def loss_of_layer_pairs(W1, b1, W2, b2, x):
    """A list literal of (weights, bias) pairs given to a helper: numba compiles the helper for
    the tuple of the pairs (as for a list literal of arrays)."""
    return np.sum(_mlp_of_pairs([(W1, b1), (W2, b2)], x) ** 2)


def test_a_literal_of_tuples_of_arrays_given_to_a_helper():
    """It was refused as "appending to a list of tuples of arrays", though nothing appends
    (a helper's hunt); reverse mode then refused the tuple of tuples, which it follows now."""
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((3, 2)), rng.standard_normal(3), rng.standard_normal((2, 3)),
            rng.standard_normal(2), rng.standard_normal(2))
    check_rule(loss_of_layer_pairs, *args, second_order=True)
    np.testing.assert_allclose(moonlite.jacfwd(loss_of_layer_pairs, argnums=4)(*args),
                               central_differences(loss_of_layer_pairs, args, 4), rtol=1e-6)
