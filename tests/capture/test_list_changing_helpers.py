"""njit helpers that call list methods on a list they are given (`pts.append(p)`, `stack.pop()`,
`ys.sort()`): their list-changing form returns the lists as the helper leaves them, which the
caller keeps (`capture/list_helpers.py`). Kernels written as users write them (a neighbour list
filled by a helper, an event recorder, a trajectory of states, a stack), each checked in every
mode against finite differences, and against numba's own result."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule


@numba.njit
def _add_close_pairs(pairs, pos, i, cutoff):
    for j in range(i + 1, pos.shape[0]):
        d = pos[i] - pos[j]
        r = np.sqrt(np.sum(d * d))
        if r < cutoff:
            pairs.append((j, r))


@numba.njit
def neighbour_energy(pos, cutoff):
    """A Lennard-Jones-like energy over a neighbour list a helper fills, pair by pair."""
    e = 0.0
    for i in range(pos.shape[0]):
        pairs = [(0, 0.0)]
        pairs.pop()
        _add_close_pairs(pairs, pos, i, cutoff)
        for j, r in pairs:
            e += (1.0 / r) ** 6 - 2.0 * (1.0 / r) ** 3 + 0.1 * j
    return e


@numba.njit
def _record_crossing(times, t, prev, cur, level):
    if (prev - level) * (cur - level) < 0.0:
        # the crossing time by linear interpolation
        times.append(t - (cur - level) / (cur - prev))


@numba.njit
def mean_crossing_time(signal, level):
    """Times a signal crosses a level, recorded by a helper; their mean."""
    times = [0.0]
    times.clear()
    for t in range(1, signal.size):
        _record_crossing(times, float(t), signal[t - 1], signal[t], level)
    return sum(times) / max(len(times), 1)


@numba.njit
def _step_and_record(trajectory, x, v, dt):
    x += dt * v
    v -= dt * np.sin(x)
    trajectory.append(x.copy())


@numba.njit
def trajectory_energy(x0, v0, dt, n):
    """Pendulums stepped by a helper that appends each state to the trajectory it is given."""
    x, v = x0.copy(), v0.copy()
    trajectory = [x0.copy()]
    for _ in range(n):
        _step_and_record(trajectory, x, v, dt)
    s = 0.0
    for k in range(len(trajectory)):
        s += np.sum(np.cos(trajectory[k])) * (k + 1)
    return s


@numba.njit
def _push(stack, value):
    stack.append(value)


@numba.njit
def _pop_and_combine(stack):
    b = stack.pop()
    a = stack.pop()
    stack.append(a * b + np.sin(a - b))
    return len(stack)


@numba.njit
def stack_reduction(x):
    """A stack machine: push every entry, then combine the top two until one is left."""
    stack = [0.0]
    stack.pop()
    for v in x:
        _push(stack, v)
    while _pop_and_combine(stack) > 1:
        pass
    return stack[0]


@numba.njit
def _sorted_in_place(ys):
    ys.sort()


@numba.njit
def trimmed_mean(x, k):
    """Entries sorted by a helper (in place), the k smallest and largest dropped."""
    ys = [v * v for v in x]
    _sorted_in_place(ys)
    s = 0.0
    for i in range(k, len(ys) - k):
        s += ys[i]
    return s / (len(ys) - 2 * k)


@numba.njit
def _append_twice(ys, v):
    ys.append(v)
    _push(ys, 2.0 * v)  # a changing helper calling another one


@numba.njit
def nested_helpers(x):
    ys = [1.0]
    for v in x:
        _append_twice(ys, np.tanh(v))
    return np.sum(np.array(ys) ** 2) + ys[-1]


def _draws():
    rng = np.random.default_rng(7)
    return rng


@pytest.mark.parametrize("name", ["neighbour_energy", "mean_crossing_time", "stack_reduction",
                                  "trimmed_mean", "nested_helpers", "trajectory_energy"])
def test_a_helper_changing_a_list_in_every_mode(name):
    rng = _draws()
    if name == "neighbour_energy":
        pos = rng.uniform(0.0, 2.0, (6, 2))
        f, args, order2 = neighbour_energy, (pos, 1.2), True
    elif name == "mean_crossing_time":
        f, args, order2 = mean_crossing_time, (np.sin(np.linspace(0.1, 9.0, 25)), 0.3), True
    elif name == "stack_reduction":
        f, args, order2 = stack_reduction, (rng.uniform(-1.0, 1.0, 5),), True
    elif name == "trimmed_mean":
        f, args, order2 = trimmed_mean, (rng.standard_normal(9), 2), False
    elif name == "nested_helpers":
        f, args, order2 = nested_helpers, (rng.standard_normal(4),), True
    else:
        f, args = trajectory_energy, (rng.standard_normal(3), rng.standard_normal(3), 0.1, 5)
        order2 = False
    check_rule(f, *args, second_order=order2)


def test_the_derivative_runs_the_helpers_as_numba_does():
    """The primal moonlite's derivative computes is numba's (the lists the helpers leave)."""
    x = np.array([0.3, -1.2, 0.8, 0.1])
    value, g = moonlite.value_and_grad(stack_reduction)(x)
    assert value == pytest.approx(stack_reduction(x), rel=1e-14)
    value, g = moonlite.value_and_grad(nested_helpers)(x)
    assert value == pytest.approx(nested_helpers(x), rel=1e-14)
    h = 1e-6
    fd = [(nested_helpers(x + h * e) - nested_helpers(x - h * e)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


@numba.njit
def _append_both(a, b, v):
    a.append(v)
    b.append(v)


@numba.njit
def one_list_given_twice(x):
    ys = [0.0]
    for v in x:
        _append_both(ys, ys, v)
    return sum(ys)


def test_one_list_given_twice_to_a_changing_helper_is_refused_by_name():
    with pytest.raises(moonlite.UnsupportedError, match="one list given twice to _append_both"):
        moonlite.grad(one_list_given_twice)(np.ones(3))


@numba.njit
def _hands_on(ys, v):
    _push(ys, v)  # ys's length changes in a helper ys is handed on to


@numba.njit
def handed_on(x):
    ys = [(0.0, 0.0)]
    for v in x:
        _hands_on(ys, (v, v * v))
    return sum([a * b for a, b in ys])


@numba.njit
def _hands_numbers_on(ys, v):
    _push(ys, 2.0 * v)


@numba.njit
def numbers_handed_on(x):
    ys = [0.0]
    for i in range(x.shape[0]):
        _hands_numbers_on(ys, x[i])
    return sum(ys) * ys[-1]


@pytest.mark.parametrize("f", [handed_on, numbers_handed_on])
def test_a_list_handed_on_to_a_helper_that_changes_it(f):
    """A helper calling no list method itself, but handing the list to one that does: its
    plain form fails (numba cannot compile it for the array view of a list of numbers: an
    unclear CaptureError before; a column form changes a length), so the list-changing form,
    whose body sees the inner call, is asked (a helper's hunt)."""
    x = np.array([0.3, -1.2, 0.8])
    assert moonlite.value_and_grad(f)(x)[0] == pytest.approx(f(x), rel=1e-14)
    check_rule(f, x, second_order=True)


@numba.njit
def _record_state(trajectory, x):
    trajectory.append(x)  # the caller's array itself, not a copy


@numba.njit
def trajectory_of_references(x0, v, dt, n):
    x = x0.copy()
    trajectory = [x0.copy()]
    for _ in range(n):
        x += dt * v  # Python's list sees this write through every entry appended before
        _record_state(trajectory, x)
    return np.sum(trajectory[1] * trajectory[-1])


def test_a_helper_appending_an_array_it_is_given_is_refused():
    """numba's list holds the array itself, and sees the caller's later writes into it;
    moonlite's holds a copy made at the append: refused in the helper, which cannot see the
    caller's writes (moonlite gave a silently different primal before the refusal)."""
    with pytest.raises(moonlite.UnsupportedError, match=r"appending an array _record_state\(\) "
                                                        r"is given to a list it is given"):
        moonlite.grad(trajectory_of_references)(np.ones(2), np.ones(2), 0.1, 3)
