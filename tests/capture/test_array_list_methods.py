"""Lists of arrays built by append and then changed (capture/array_lists.py): `pop()`, `pop(i)`,
`ys[i] = v`, `insert`, `extend`, `+=`, `+`, copies, slices, `reverse()`, `clear()` and `len`
after them, in kernels written as users write them, checked in every mode against finite
differences to second order (`moonlite.testing.check_rule`, which also checks the primal value
against numba's: an entry read before the list changes keeps its numbers, as the array a Python
list held would). What cannot be made exact is refused by name."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule
from tests.helpers import assert_refused_in_both_modes

X = np.array([0.3, -0.5, 0.8, 1.1])
W = np.array([0.7, 0.2, -0.3, 0.9])


@numba.njit
def popped_in_reverse(x0, k, steps):
    """A stack of states pushed going forward and popped going back (pop(), len)."""
    stack = []
    x = x0.copy()
    for _ in range(steps):
        stack.append(x)
        x = x + 0.3 * np.sin(k * x)
    acc = x.copy()
    while len(stack) > 0:
        s = stack.pop()
        acc = 0.5 * acc + s * acc
    return np.sum(acc)


@numba.njit
def sliding_window(x0, h, steps):
    """The last three states, newest first (insert(0, v)), the oldest popped from the back."""
    window = []
    x = x0.copy()
    total = 0.0
    for _ in range(steps):
        x = x + h * np.cos(x)
        window.insert(0, x.copy())
        if len(window) > 3:
            window.pop()
        total += np.sum(window[0] * window[-1]) + len(window)
    return total


@numba.njit
def queue_drained(x, w):
    """Segments queued, then served from the front (pop(0)) and from the middle (pop(i))."""
    queue = []
    for i in range(1, x.shape[0] + 1):
        queue.append(x[:i] * w[:i])
    first = queue.pop(0)
    total = np.sum(first ** 2)
    k = 1.0
    while len(queue) > 1:
        served = queue.pop(len(queue) // 2)
        total += k * np.sum(np.sin(served)) + len(queue)
        k += 1.0
    return total + np.sum(queue[0] * queue[-1]) + np.sum(first)


@numba.njit
def ring_history(x0, h, steps):
    """A fixed-size history overwritten in turn (ys[i] = v); the entry read before it is
    replaced keeps its numbers."""
    hist = [x0.copy(), x0 * 0.5, x0 * 0.25]
    x = x0.copy()
    total = 0.0
    for t in range(steps):
        oldest = hist[t % 3]
        x = x + h * (np.sin(x) + 0.1 * oldest)
        hist[t % 3] = x.copy()
        total += np.sum(oldest * hist[t % 3])
    return total + np.sum(hist[-1])


@numba.njit
def replaced_by_other_shapes(x):
    """Entries replaced by arrays of other shapes (ys[i] = v, negative i too)."""
    parts = []
    for i in range(3):
        parts.append(x[i:] * 2.0)
    first = parts[0]
    parts[0] = x[:2] * x[1:3]
    parts[-1] = parts[0] * 3.0
    return (np.sum(first) + np.sum(parts[0]) * parts[0].shape[0] + np.sum(parts[2] ** 2)
            + np.sum(parts[1]))


@numba.njit
def kept_in_order(x, keys):
    """States inserted where their key keeps the list in order (insert(i, v), negative and
    past-the-end positions too)."""
    ordered = []
    order = []
    for i in range(keys.shape[0]):
        k = keys[i]
        p = 0
        while p < len(order) and order[p] < k:
            p += 1
        order.insert(p, k)
        ordered.insert(p, x[: i + 1] * (i + 1.0))
    ordered.insert(-1, x[1:] ** 2)
    ordered.insert(100, x * 0.5)
    s = 0.0
    for j, v in enumerate(ordered):
        s += (j + 1.0) * np.sum(np.sin(v))
    return s


@numba.njit
def joined(x, w):
    """Lists of arrays joined and copied: extend (another list, a list literal, itself), +=,
    +, a slice, copy() and reverse()."""
    a = []
    b = []
    for i in range(3):
        a.append(x[i:] * w[i:])
        b.append(np.outer(x[:i + 1], w[:2]).ravel())
    a.extend(b)
    a.extend([x * 2.0, w[:1] * 1.0])
    a += b
    a.extend(a)
    c = a[1:4]
    d = a + c
    d.reverse()
    s = 0.0
    for k in range(len(d)):
        s += (k + 1.0) * np.sum(d[k] ** 2)
    return s + len(a) * 0.1 + np.sum(c[0]) + np.sum(a.copy()[-1]) + np.sum(a[::3][1])


@numba.njit
def batches(x, w, epochs):
    """One list cleared and refilled in each epoch (clear()), walked in the epoch; the last
    entry of the epoch before is kept across the clear."""
    batch = []
    total = 0.0
    previous = x * 0.0
    for e in range(epochs):
        batch.clear()
        for i in range(x.shape[0]):
            batch.append(x[i:] * w[i] * (e + 1.0))
        for v in batch:
            total += np.sum(v * v)
        total += len(batch) + np.sum(previous * batch[0])
        previous = batch[0]
    return total


@numba.njit
def matrices_moved(x):
    """2-D entries of different shapes popped, inserted, replaced and unpacked."""
    ms = []
    for i in range(1, 4):
        ms.append(np.outer(x[:i], x[i - 1:]))
    last = ms.pop()
    mid = ms.pop(0)
    ms.insert(0, last.T.copy())
    ms[1] = mid * 2.0
    p, q = ms
    return np.sum(last @ last.T) + np.sum(p) + np.sum(q ** 2) + len(ms)


@numba.njit
def _weighted(states):
    s = 0.0
    for k in range(len(states)):
        s += (k + 1.0) * np.sum(states[k] ** 2)
    return s


@numba.njit
def changed_then_given_to_a_helper(x):
    """A list changed by its methods, then read by an njit helper (its column form)."""
    states = []
    for i in range(4):
        states.append(x[: i + 1] * (i + 1.0))
    states.pop(1)
    states[0] = x * 3.0
    states.insert(1, x[2:] * x[2:])
    return _weighted(states)


@numba.njit
def feature_rows(x, basis):
    """A feature list extended with the rows of matrices (a C-ordered one and a transposed
    one, whose rows are strided), beside an appended array, then walked with enumerate."""
    features = [x * 1.0]
    features.extend(np.outer(basis, x))
    features.extend(np.outer(x ** 2, basis).T)
    total = 0.0
    for k, row in enumerate(features):
        total += (k + 1.0) * np.sum(np.tanh(row) * row)
    return total + len(features)


# Every kernel is checked in forward mode and through grad against finite differences; vjp's
# split rule (sweep and pullback, "split") and the Hessian ("second") on about half of them
# each: compiling all four for all eleven took a sixth of the suite's time on its own.
@pytest.mark.parametrize("kernel, args, checks", [
    (popped_in_reverse, (X, 1.3, 4), "split second"),
    (sliding_window, (X, 0.2, 6), "second"),
    (queue_drained, (X, W), "split"),
    (ring_history, (X, 0.2, 7), "split"),
    (replaced_by_other_shapes, (X,), "second"),
    (kept_in_order, (X, np.array([0.5, -1.0, 2.0, 0.1])), "split"),
    (joined, (X, W), ""),
    (batches, (X, W, 2), "second"),
    (matrices_moved, (X,), "split"),
    (changed_then_given_to_a_helper, (X,), "second"),
    (feature_rows, (X, np.array([0.5, -1.0, 2.0])), "split"),
], ids=["stack", "window", "queue", "ring", "replaced", "ordered", "joined", "batches",
        "matrices", "helper", "rows"])
def test_changed_lists_of_arrays_in_every_mode(kernel, args, checks):
    check_rule(kernel, *args, vjp="split" in checks, second_order="second" in checks)


@numba.njit
def _replaces_an_entry(states):
    states[0] = states[1] * 2.0
    return np.sum(states[0])


@numba.njit
def replaced_by_a_helper(x):
    states = []
    states.append(x * 1.0)
    states.append(x * 2.0)
    return _replaces_an_entry(states) + np.sum(states[0])


@numba.njit
def written_after_extending(x):
    m = np.outer(x, x)
    rows = [x * 1.0]
    rows.extend(m)  # (in Python the list holds views of m's rows: the write below shows)
    m[0, 0] = 2.0
    return np.sum(rows[1])


@pytest.mark.parametrize("kernel, construct", [
    (replaced_by_a_helper, r"replacing an entry of a list of arrays in a helper it is given "
                           r"to \(_replaces_an_entry\(\)"),
    (written_after_extending, r"writing into an array after appending it to a list"),
], ids=["replaced_in_helper", "written_after_extending"])
def test_changes_moonlite_cannot_make_exact_are_refused(kernel, construct):
    assert_refused_in_both_modes(kernel, construct)


def test_an_entry_read_before_the_list_changes_keeps_its_numbers():
    """moonlite writes new entries after the old ones and never over them: the views read
    before a replacement, a pop, a clear or an insert still hold what they held."""

    @numba.njit
    def kernel(x):
        ys = [x * 1.0, x * 2.0]
        a, b = ys[0], ys[1]
        ys[0] = x * 5.0
        ys.pop()
        ys.clear()
        for k in range(6):
            ys.insert(0, x * (10.0 + k))
        return a[0] + 10.0 * b[0] + 100.0 * ys[-1][0] + 1000.0 * len(ys)

    x = np.array([1.0, 2.0, 3.0])
    value, _ = moonlite.value_and_grad(kernel)(x)
    assert value == kernel(x) == 1.0 + 20.0 + 1000.0 + 6000.0
