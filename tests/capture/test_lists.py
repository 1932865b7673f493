"""Lists built by appending (`capture/lists.py`) and numba's rewrite of `np.array([... for
...])`: values as numba computes them, derivatives in every mode against finite differences
(`check_rule`), list semantics kept (index checks, growth past the first buffer), and the uses
moonlite refuses, refused by name. The corpus kernels (`tests/corpus/constructs.py`, "lists
built by appending") are checked in `test_constructs.py`."""

from collections import namedtuple

import numba
import numpy as np
import pytest

import moonlite
from moonlite.errors import UnsupportedError
from moonlite.testing import check_rule
from tests.helpers import assert_refused_in_both_modes


@numba.njit
def _total(values):
    s = 0.0
    for v in values:
        s += v
    return s


@numba.njit
def strided_comprehension(x):
    # numba rewrites this np.array(...) into a preallocated array of length_of_iterator()
    picked = np.array([x[i] * x[i - 1] for i in range(x.shape[0] - 1, 0, -2)])
    return np.sum(np.sin(picked))


@numba.njit
def many_appends(x, repeats):
    values = []
    for _ in range(repeats):
        for v in x:
            values.append(v * v)
    out = np.array(values)
    return np.sum(out * np.arange(out.shape[0]))


@numba.njit
def read_entry(x, i):
    values = [2.0 * v for v in x if v > 0.0]
    return values[i] * x[0]


@numba.njit
def written_entry(x, i):
    values = []
    for v in x:
        values.append(v)
    values[i] = values[i] ** 3
    return np.sum(np.array(values) ** 2)


@numba.njit
def maybe_empty(x, threshold):
    kept = np.array([v for v in x if v > threshold])
    return kept.shape[0] + np.sum(kept) + x[0]


@numba.njit
def appends_before_in_and_after_a_loop(x):
    ys = [x[0]]
    ys.append(x[1] * 2.0)
    for v in x:
        ys.append(v * v)
        if v > 0.0:
            ys.append(np.sin(v))
    ys.append(x[-1])
    return np.sum(np.array(ys) * np.arange(len(ys)))


@numba.njit
def one_list_per_row(x):
    s = 0.0
    for i in range(x.shape[0]):
        row = []
        for j in range(x.shape[0]):
            if j != i:
                row.append(x[i] * x[j])
        s += sum(row) * max(row)
    return s


def test_a_strided_comprehension_numba_preallocates():
    x = np.linspace(-1.0, 1.2, 7)
    np.testing.assert_allclose(moonlite.value_and_grad(strided_comprehension)(x)[0],
                               strided_comprehension(x))
    check_rule(strided_comprehension, x, second_order=True)


def test_a_list_grows_past_its_first_buffer():
    x = np.array([0.3, -0.5, 1.1])
    check_rule(many_appends, x, 40)  # 120 entries: the buffer doubles 5 times


def test_appends_around_a_loop_and_a_list_per_iteration():
    x = np.array([0.4, -0.3, 0.9, 1.3])
    check_rule(appends_before_in_and_after_a_loop, x)  # (second order: the other tests)
    check_rule(one_list_per_row, x)


def test_a_list_appended_in_a_for_loop_is_no_loop_carried_array():
    # the room is reserved as the loop starts (capture/list_plans.py): the reverse pass then
    # tapes no array per iteration (it did, 13-30x the primal's time instead of 2-3x)
    for kernel, args in ((maybe_empty, (np.ones(3), 0.5)),
                         (appends_before_in_and_after_a_loop, (np.ones(3),))):
        rule = moonlite.build_rrule(kernel, *args)
        assert "tape<array" not in str(rule.ir)


def test_entries_read_and_written_at_run_time_indices():
    x = np.array([0.4, -0.3, 0.9, 1.3])
    for i in (0, 2, -1, -3):
        check_rule(read_entry, x, i, second_order=True, vjp=False)
        check_rule(written_entry, x, i, second_order=True)


@pytest.mark.parametrize("i", [3, -4])
def test_an_index_past_the_entries_raises_as_numba_does(i):
    x = np.array([0.4, -0.3, 0.9, 1.3])  # three entries are kept; the buffer holds four
    with pytest.raises(IndexError):
        read_entry(x, i)
    with pytest.raises(IndexError, match="list index out of range"):
        moonlite.grad(read_entry)(x, i)
    with pytest.raises(IndexError, match="list index out of range"):
        moonlite.jvp(read_entry, (x, i), (np.ones(4), None))


def test_an_empty_list():
    x = np.array([0.1, 0.2])
    value, grad = moonlite.value_and_grad(maybe_empty)(x, 5.0)
    assert value == maybe_empty(x, 5.0)
    np.testing.assert_array_equal(grad, [1.0, 0.0])
    check_rule(maybe_empty, x, -5.0, second_order=True, vjp=False)


@numba.njit
def passes_it_on(x):
    values = []
    for v in x:
        values.append(v * v)
    return _total(values) * len(values)


def test_a_list_passed_to_an_njit_helper():
    # the helper is compiled for the array the list became (tests/corpus/constructs.py has
    # helpers writing into it and taking it by keyword)
    x = np.array([0.4, -0.3, 0.9])
    np.testing.assert_allclose(moonlite.grad(passes_it_on)(x), 3 * 2 * x, rtol=1e-12)
    _, dout = moonlite.jvp(passes_it_on, (x,), (np.ones(3),))
    np.testing.assert_allclose(dout, np.sum(3 * 2 * x), rtol=1e-12)


@numba.njit
def trail(x0, velocity, dt, steps):
    # a path recorded as (x, y) tuples: unpacked from pts[-1], walked by index and by a for
    # loop, one entry rewritten, read as a 2-D array by np.asarray
    pts = [(x0[0], x0[1])]
    for _ in range(steps):
        x, y = pts[-1]
        pts.append((x + dt * velocity[0] * np.cos(y), y + dt * velocity[1] * np.sin(x)))
    length = 0.0
    for i in range(1, len(pts)):
        xa, ya = pts[i - 1]
        xb, yb = pts[i]
        length += np.sqrt((xb - xa) ** 2 + (yb - ya) ** 2)
    pts[0] = (0.5 * pts[0][0], pts[0][1])
    spread = 0.0
    for x, y in pts:
        spread += x * y
    xy = np.asarray(pts)
    return length + spread + np.sum(xy[:, 0] ** 2) / len(pts)


@numba.njit
def stack_of_pairs(x):
    # a stack of (value, depth) pairs: a list literal start, extend, pop, enumerate and zip
    stack = [(x[0], 0)]
    total = 0.0
    for i in range(1, x.shape[0]):
        v, depth = stack.pop()
        if x[i] > v:
            stack.extend([(v, depth), (x[i] * v, depth + 1)])
        else:
            total += v * (depth + 1)
            stack.append((x[i], depth))
    for k, (v, depth) in enumerate(stack):
        total += (k + 1) * v * v - depth
    for (v, _), w in zip(stack, x):
        total += v * w
    return total + stack[0][0] * stack[-1][1]


def test_a_list_of_float_tuples():
    x0, velocity = np.array([0.3, -0.2]), np.array([1.1, 0.7])
    value, _ = moonlite.value_and_grad(trail, argnums=(0, 1))(x0, velocity, 0.1, 6)
    np.testing.assert_allclose(value, trail(x0, velocity, 0.1, 6), rtol=1e-12)
    check_rule(trail, x0, velocity, 0.1, 6, second_order=True)


def test_a_list_of_float_and_int_pairs_used_as_a_stack():
    x = np.array([0.4, 0.9, 0.2, 1.3, 0.7, 1.1])
    np.testing.assert_allclose(moonlite.value_and_grad(stack_of_pairs)(x)[0],
                               stack_of_pairs(x), rtol=1e-12)
    check_rule(stack_of_pairs, x)  # (second order: trail's test; CI time)


@numba.njit
def _grows(values, v):
    values.append(v)
    return len(values)


@numba.njit
def helper_appends(x):
    values = [v for v in x]
    n = _grows(values, 1.0)
    return values[0] * n


@numba.njit
def _same(values):
    return values


@numba.njit
def helper_returns_it(x):
    values = [v for v in x]
    return _same(values)[0]


@numba.njit
def returns_it(x):
    values = [x[0]]
    values.append(x[1])
    return values


@numba.njit
def sorts_pairs(x):
    pairs = [(v, 2.0 * v) for v in x]
    pairs.sort()
    return pairs[0][1]


@numba.njit
def removes_a_pair(x):
    pairs = [(v, 2.0 * v) for v in x]
    pairs.remove((x[1], 2.0 * x[1]))
    return pairs[0][1]


@numba.njit
def counts_pairs(x):
    pairs = [(v, 2.0 * v) for v in x]
    return pairs.count((x[1], 2.0 * x[1])) * x[0]


@numba.njit
def sorts_by_a_flag(x):
    values = [v for v in x]
    values.sort(reverse=x[0] > 0.0)
    return values[0]


@numba.njit
def mixed_pairs_as_an_array(x):
    pairs = [(v, i) for i, v in enumerate(x)]
    return np.asarray(pairs)[0, 0]


@numba.njit
def rebuilt_in_a_loop(x):
    values = [0.0]
    for v in x:
        values = [v]
        values.append(v * v)
    return np.sum(np.array(values))


def test_a_helper_appending_to_the_list_it_is_given():
    """Refused until the list-changing form (test_list_changing_helpers.py): the helper
    appends, and the kernel sees the new length."""
    x = np.array([0.4, -0.3, 0.9])
    value, g = moonlite.value_and_grad(helper_appends)(x)
    assert value == helper_appends(x)
    np.testing.assert_allclose(g, [4.0, 0.0, 0.0])  # values[0] * (len(x) + 1)
    check_rule(helper_appends, x, second_order=True, vjp=False)


@pytest.mark.parametrize("kernel, construct", [
    (helper_returns_it, r"passed to _same\(\), which returns a list"),
    (returns_it, "a list built by append used other than read"),
    (sorts_pairs, r"a list of tuples built by append sorted without a key"),
    (removes_a_pair, r"a list of tuples built by append searched by remove\(\)"),
    (counts_pairs, r"a list of tuples built by append searched by count\(\)"),
    (sorts_by_a_flag, r"list.sort\(\) on a list the kernel builds"),
    (mixed_pairs_as_an_array, r"a list of tuples built by append given to asarray\(\)"),
    (rebuilt_in_a_loop, "bound to different lists"),
])
def test_uses_that_need_a_real_list_are_refused(kernel, construct):
    assert_refused_in_both_modes(kernel, construct)


@numba.njit
def walks_while_appending(x):
    ys = [x[0], x[1]]
    for y in ys:
        if len(ys) < 5:
            ys.append(y * 2.0)
    return sum(ys)


def test_a_loop_over_a_list_appending_to_it_is_refused():
    x = np.array([0.4, -0.3, 0.9])
    assert walks_while_appending(x) == 0.4 - 0.3 + 0.8 - 0.6 + 1.6  # numba sees new entries
    with pytest.raises(UnsupportedError, match="a for loop over a list that changes the same "
                       "list's length"):
        moonlite.grad(walks_while_appending)(x)


@numba.njit
def pops_while_enumerating(x):
    ys = [v * v for v in x]
    s = 0.0
    for i, y in enumerate(ys):
        s += y * (i + 1)
        ys.pop()  # numba's loop stops early: the list got shorter
    return s


@numba.njit
def removes_while_zipping(x):
    ys = [v * v for v in x]
    s = 0.0
    for y, v in zip(ys, x):
        s += y * v
        if y > 0.5:
            ys.remove(y)
    return s


@numba.njit
def pops_while_enumerating_a_zip(x):
    ys = [v * v for v in x]
    s = 0.0
    for i, (y, v) in enumerate(zip(ys, x)):
        s += y * v
        ys.pop()
    return s


@pytest.mark.parametrize("kernel", [pops_while_enumerating, removes_while_zipping,
                                    pops_while_enumerating_a_zip])
def test_a_loop_over_a_list_shortening_it_is_refused(kernel):
    # moonlite walked the entries the list had when the loop started: 91.0 for 14.0 (a wrong
    # value and gradient) before enumerate and zip of a list were looked through
    x = np.arange(1.0, 7.0)
    kernel(x)
    for derive in (lambda: moonlite.grad(kernel)(x),
                   lambda: moonlite.jvp(kernel, (x,), (np.ones(6),))):
        with pytest.raises(UnsupportedError, match="changes the same list's length"):
            derive()


@numba.njit
def refilled_each_epoch(x, epochs):
    """A list cleared and refilled in each epoch, walked in the epoch: the walking loop does
    not change the list's length (the epoch loop around it does, which is fine)."""
    vals = []
    total = 0.0
    for e in range(epochs):
        vals.clear()
        for v in x:
            vals.append(np.sin(v) * (e + 1.0))
        for v in vals:
            total += v * v
    return total + len(vals)


def test_a_list_walked_in_the_loop_that_refills_it():
    check_rule(refilled_each_epoch, np.array([0.4, -0.3, 0.9]), 3, second_order=True)


@numba.njit
def binned_energy(x, nbins):
    acc = [0.0] * nbins  # a list of zeros, written by index
    counts = nbins * [0]
    for v in x:
        k = min(int(abs(v) * nbins), nbins - 1)
        acc[k] += v * v
        counts[k] += 1
    total = 0.0
    for k in range(nbins):
        total += acc[k] ** 2 / (counts[k] + 1)
    return total + len([1.0] * -2)


def test_a_repeated_list_written_by_index():
    x = np.array([0.15, -0.62, 0.33, 0.91, -0.05])
    value, _ = moonlite.value_and_grad(binned_energy)(x, 4)
    assert value == binned_energy(x, 4)
    check_rule(binned_energy, x, 4, second_order=True, vjp=False)


@numba.njit
def repeated_built_list(x):
    values = [x[0], x[1]]
    values.append(x[2])
    twice = values * 2  # a list built by append, repeated
    twice[4] += x[0]
    return twice[1] * twice[4] + len(twice) + len(values * -1)


@numba.njit
def repeated_pattern(x, n):
    weights = 3 * [x[0], 2.0 * x[1]]  # a literal of several numbers
    stencil = [(x[2], 1), (-x[2], -1)] * n  # of tuples
    s = 0.0
    for k, (v, sign) in enumerate(stencil):
        s += v * sign * weights[k % 6] * (k + 1)
    return s


@numba.njit
def repeated_arrays(x):
    rows = [x] * 3  # one array three times: a list of references, not of rows
    return rows[0][0]


def test_lists_repeated_other_than_one_number():
    x = np.array([0.3, -0.5, 0.8])
    assert moonlite.value_and_grad(repeated_built_list)(x)[0] == repeated_built_list(x)
    check_rule(repeated_built_list, x, second_order=True)
    check_rule(repeated_pattern, x, 3, second_order=True, vjp=False)
    with pytest.raises(UnsupportedError, match="repeating a list other than of numbers or "
                                               "tuples of numbers"):
        moonlite.grad(repeated_arrays)(x)


@numba.njit
def lists_of_other_numbers(x):
    flags = [v > 0.2 for v in x]
    ints = [int(v * 10) for v in x]
    small = [np.float32(v) for v in x]
    return sum(flags) * x[0] + sum(ints) * x[1] + sum(small) * x[2] + max(small) + min(ints)


def test_lists_of_bools_ints_and_float32():
    x = np.array([0.3, -0.5, 0.9])
    value, grad = moonlite.value_and_grad(lists_of_other_numbers)(x)
    assert value == lists_of_other_numbers(x)
    # sum(flags) = 2, sum(ints) = 7; sum(small) and max(small) are float32 (rounding)
    np.testing.assert_allclose(grad, [2.0 + 0.9, 7.0 + 0.9, (0.3 - 0.5 + 0.9) + 0.9 + 1.0],
                               rtol=1e-6)


@numba.njit
def stack_machine(x):
    """A stack: pushes, pops, extends with a literal, reads of the top."""
    stack = [x[0]]
    for v in x[1:]:
        if v > 0.0:
            stack.append(v * stack[-1])
        elif len(stack) > 1:
            top = stack.pop()
            stack[-1] += np.sin(top)
        stack.extend([0.5 * v, v * v])
    total = 0.0
    while len(stack) > 0:
        total = total * 0.9 + stack.pop()
    return total


def test_pop_and_extend():
    x = np.array([0.4, -0.3, 0.9, 1.3, -0.7])
    assert moonlite.value_and_grad(stack_machine)(x)[0] == stack_machine(x)
    check_rule(stack_machine, x, second_order=True)


@numba.njit
def pops_an_empty_list(x):
    ys = [x[0]]
    ys.pop()
    return ys.pop()


@numba.njit
def trimmed_weighted_sum(x, k):
    """Values kept by a filter, sorted, their k smallest and largest dropped (a trimmed
    statistic): `sort()` rewrites the list's entries in order."""
    kept = []
    for v in x:
        if v > -1.5:
            kept.append(np.sin(v) * 2.0)
    kept.sort()
    s = 0.0
    for i in range(k, len(kept) - k):
        s += kept[i] * (i + 1)
    return s


@numba.njit
def ranked(x):
    squares = [v * v for v in x]
    squares.sort(reverse=True)
    largest = squares[0]
    squares.reverse()  # ascending again
    return 3.0 * largest + squares[-2] - squares[0]


def test_a_list_sorted_and_reversed_in_place():
    x = np.array([0.3, -0.8, 1.7, 0.2, -2.0, 0.9, 1.1])
    check_rule(trimmed_weighted_sum, x, 1, second_order=True, vjp=False)
    check_rule(ranked, x)
    # the entries' order decides which value each derivative goes to (-2.0 is the largest square)
    np.testing.assert_allclose(moonlite.grad(ranked)(x),
                               [0.0, 0.0, 2 * 1.7, -2 * 0.2, 3 * -4.0, 0.0, 0.0])


@numba.njit
def moving_average_energy(x, width):
    """A window kept as a list used as a queue: append at the back, pop(0) at the front."""
    window = []
    total = 0.0
    energy = 0.0
    for v in x:
        window.append(v)
        total += v
        if len(window) > width:
            total -= window.pop(0)
        mean = total / len(window)
        energy += (v - mean) ** 2
    return energy


@numba.njit
def best_k(x, k):
    """The k largest values kept in descending order by insertion, the way a top-k or an
    order book is written with a list: find the place, insert, drop the last."""
    best = [x[0]]  # (numba cannot type an empty list that only insert() fills)
    for v in x[1:]:
        place = len(best)
        for i in range(len(best)):
            if v > best[i]:
                place = i
                break
        best.insert(place, v)
        if len(best) > k:
            best.pop()
    s = 0.0
    for i in range(len(best)):
        s += best[i] / (i + 1)
    return s


@numba.njit
def without_extremes(x):
    """Outliers removed by value, then the list reused after clear()."""
    ys = [np.exp(0.5 * v) for v in x]
    ys.remove(max(ys))
    ys.remove(min(ys))
    centre = sum(ys) / len(ys)
    ys.clear()
    for v in x:
        ys.insert(-1, (v - centre) ** 2)  # before the last entry (at 0 while empty)
    return centre + ys[0] + 2.0 * ys[-1]


@numba.njit
def swaps_pairs(x):
    pts = []
    for i in range(x.shape[0]):
        pts.append((x[i], 2.0 * x[i] + i))
    a, b = pts.pop(1)
    pts.insert(-2, (b, a * a))
    s = 0.0
    for u, w in pts:
        s = 0.5 * s + u * w
    return s


@numba.njit
def rounded_votes(x):
    """Values rounded into bins kept in a list, each weighted by how often its bin occurs and
    by where it first occurs (index and count: ints, which carry no derivative)."""
    bins = [np.floor(2.0 * v) for v in x]
    s = 0.0
    for i in range(x.shape[0]):
        b = bins[i]
        s += x[i] ** 2 * bins.count(b) + np.sin(x[i]) * bins.index(b)
    return s


def test_pop_at_a_position_insert_remove_and_clear():
    x = np.array([0.3, -0.8, 1.7, 0.2, -2.0, 0.9, 1.1])
    for kernel, args in ((moving_average_energy, (x, 3)), (best_k, (x, 3)),
                         (rounded_votes, (x,)),
                         (without_extremes, (x,)), (swaps_pairs, (x,))):
        assert moonlite.value_and_grad(kernel)(*args)[0] == pytest.approx(kernel(*args),
                                                                          rel=1e-12)
        check_rule(kernel, *args, second_order=True)
    # each of the 3 largest values counts 1/(its rank): the rest have no derivative
    np.testing.assert_allclose(moonlite.grad(best_k)(x, 3),
                               [0.0, 0.0, 1.0, 0.0, 0.0, 1.0 / 3.0, 0.5])


@numba.njit
def pops_past_the_end(x, i):
    ys = [v for v in x]
    return ys.pop(i)


@numba.njit
def finds_a_missing_value(x):
    ys = [v for v in x]
    return x[0] * ys.index(x[1] - 100.0)


@numba.njit
def removes_a_missing_value(x):
    ys = [v for v in x]
    ys.remove(x[0] + 100.0)
    return ys[0]


def test_pop_and_remove_raise_as_numba_does():
    x = np.array([0.4, -0.3])
    with pytest.raises(IndexError):
        pops_an_empty_list(x)
    with pytest.raises(IndexError, match="pop from empty list"):
        moonlite.grad(pops_an_empty_list)(x)
    for i in (2, -3):
        with pytest.raises(IndexError):
            pops_past_the_end(x, i)
        with pytest.raises(IndexError):
            moonlite.grad(pops_past_the_end)(x, i)
    with pytest.raises(ValueError):
        removes_a_missing_value(x)
    with pytest.raises(ValueError, match="x not in list"):
        moonlite.grad(removes_a_missing_value)(x)
    with pytest.raises(ValueError):
        finds_a_missing_value(x)
    with pytest.raises(ValueError, match=r"list.index\(x\): x not in list"):
        moonlite.grad(finds_a_missing_value)(x)


@numba.njit
def nearest_and_farthest(x, q):
    """Candidates kept as (distance, index) pairs and picked by min() and max(), the way
    nearest-neighbour code is written with lists: Python's tuple order, ties by the index."""
    cands = []
    for j in range(x.shape[0]):
        cands.append(((x[j] - q) ** 2, j))
    d, j = min(cands)
    far, k = max(cands)
    return d + 0.1 * far + j + 0.01 * k


Hit = namedtuple("Hit", ["cost", "slot", "weight"])


@numba.njit
def cheapest_hit(x):
    hits = []
    for i in range(x.shape[0]):
        hits.append(Hit(np.round(x[i]), i, np.sin(x[i])))  # ties in cost: the slot decides
    best = min(hits)
    return best.cost + best.weight * best.slot + max(hits).weight


@numba.njit
def smallest_of_none(x):
    pairs = [(v, 1) for v in x if v > 10.0]
    return min(pairs)[0]


def test_min_and_max_of_a_list_of_tuples():
    x = np.array([0.3, -1.2, 0.9, 2.5, -0.4])
    assert moonlite.value_and_grad(nearest_and_farthest)(x, 0.5)[0] == \
        nearest_and_farthest(x, 0.5)
    check_rule(nearest_and_farthest, x, 0.5, second_order=True, vjp=False)
    # the derivatives follow the pairs picked: x[0] nearest to q, x[3] farthest
    grad_x, grad_q = moonlite.grad(nearest_and_farthest, argnums=(0, 1))(x, 0.5)
    np.testing.assert_allclose(grad_x, [2 * (0.3 - 0.5), 0, 0, 0.1 * 2 * (2.5 - 0.5), 0])
    assert grad_q == pytest.approx(-2 * (0.3 - 0.5) - 0.1 * 2 * (2.5 - 0.5))
    y = np.array([1.2, 0.8, 2.9, 1.1, 3.3])  # costs 1, 1, 3, 1, 3: ties broken by the slot
    assert moonlite.value_and_grad(cheapest_hit)(y)[0] == cheapest_hit(y)
    check_rule(cheapest_hit, y, second_order=True)
    with pytest.raises(StopIteration):  # numba's min() of an empty list of tuples
        smallest_of_none(x)
    with pytest.raises(ValueError, match="empty sequence"):  # Python's error, moonlite's
        moonlite.grad(smallest_of_none)(x)


@numba.njit
def array_of_pair_comprehension(x):
    pts = np.array([(x[i], 2.0 * x[i]) for i in range(x.shape[0])])
    s = 0.0
    for p in pts:
        s += p[0] * p[1]
    return s


def test_np_array_of_a_comprehension_of_tuples_is_refused_by_name():
    """numba builds a 2-D array from it; capture raised a bare numpy TypeError (a helper's
    hunt)."""
    assert_refused_in_both_modes(array_of_pair_comprehension,
                                 "np.array of a list comprehension of UniTuple")
