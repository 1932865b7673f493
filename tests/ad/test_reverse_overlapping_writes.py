"""Array writes whose value views the target's own memory: `x[1:] = x[:-1]` (a shift),
`X[:, 0] = X[:, 1]`, and every `x[i][:] += v` (Python runs it as `t = x[i][:]; t += v;
x[i][:] = t`, so the value written is the target itself). The value's shadow is then part of
the written region's shadow: reverse mode copies that region before clearing it and sends the
copy on (`memory._rv_setitem_array`). Before that fix every case below had a silently wrong
gradient (zero for `x[i][:] += v`). Checked in every mode against finite differences and the
dot-product identity.

In-place operations on overlapping memory (`x[1:] += x[:-1]`) are another matter: numba computes
them entry by entry, a recurrence, and every mode refuses them at run time (`rules/overlap.py`)."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.driver import derived_reverse_rule
from moonlite.errors import OverlappingWriteError
from moonlite.ir import ops
from moonlite.ir.parser import parse_function
from moonlite.rules.overlap import refuse_overlap
from moonlite.testing import check_rule


@numba.njit
def shifted(x, s):
    x[1:] = s * x[:-1]
    x[1:] = x[:-1]
    return np.sum(x ** 2)


@numba.njit
def reversed_in_place(x, s):
    x[:] = x[::-1]
    return np.sum(x * np.arange(x.shape[0]) * s)


@numba.njit
def rows_and_columns(X, s):
    X[0] += X[1]
    X[:, 0] = X[:, 1]
    y = X[2]
    y += s * y
    return np.sum(np.cos(X))


@numba.njit
def updated_through_a_slice(X, s):
    X.T[:] += s
    X[1][:] *= X[0]
    X[2][:] -= X[2]
    return np.sum(X ** 3)


@numba.njit
def rows_from_the_row_before(X, s):
    for i in range(1, X.shape[0]):
        X[i][:] += s * X[i - 1]
        X[i, :] = X[i] * X[i]
    return np.sum(X ** 2)


@numba.njit
def delay_line(signal, taps):
    """An FIR filter keeping its input history in a buffer shifted at every sample, as
    streaming filters are written."""
    history = np.zeros(taps.shape[0])
    out = 0.0
    for k in range(signal.shape[0]):
        history[1:] = history[:-1]
        history[0] = signal[k]
        y = np.dot(taps, history)
        out += y * y
    return out


@numba.njit
def doubled(x, s):
    x += x
    x *= s
    return np.sum(np.sin(x))


_rng = np.random.default_rng(0)
CASES = {
    "a shift": (shifted, lambda: (_rng.random(5), 0.7)),
    "a reversal": (reversed_in_place, lambda: (_rng.random(5), 0.7)),
    "rows and columns of one matrix": (rows_and_columns, lambda: (_rng.random((3, 3)), 0.7)),
    "updates through slices": (updated_through_a_slice, lambda: (_rng.random((3, 3)), 0.7)),
    "rows from the row before": (rows_from_the_row_before, lambda: (_rng.random((4, 3)), 0.7)),
    "a delay line": (delay_line, lambda: (_rng.standard_normal(12), _rng.standard_normal(4))),
    "an array added to itself": (doubled, lambda: (_rng.random(5), 0.7)),
}


@pytest.mark.parametrize("name", CASES)
def test_overlapping_writes_in_every_mode(name):
    kernel, make_args = CASES[name]
    check_rule(kernel, *make_args(), second_order=True)


@numba.njit
def running_sum_in_place(x, s):
    x[1:] += s * x[:-1]  # a fresh right-hand side: fine
    y = x[1:]
    y += x[:-1]  # numba: a running sum (each entry adds the one before it, already updated)
    return np.sum(x ** 2)


@numba.njit
def rows_times_the_rows_before(X):
    X[1:, :] *= X[:-1, :]
    return np.sum(X ** 2)


@pytest.mark.parametrize("kernel, make_args", [
    (running_sum_in_place, lambda: (_rng.random(5), 0.7)),
    (rows_times_the_rows_before, lambda: (_rng.random((3, 4)),)),
])
def test_in_place_operations_on_overlapping_memory_are_refused_at_run_time(kernel, make_args):
    """numba computes them as recurrences, which no derivative rule follows: every mode
    refuses them when the arrays overlap, naming the function and the line."""
    for derivative in (moonlite.grad(kernel, argnums=0),
                       lambda *a: moonlite.jvp(kernel, a, _tangents(a))):
        with pytest.raises(OverlappingWriteError) as refused:
            derivative(*make_args())
        message = str(refused.value)
        assert "overlaps its target" in message and kernel.__name__ in message
        assert "test_reverse_overlapping_writes.py:" in message and "copy the right" in message


def _tangents(args):
    return tuple(np.ones_like(a) if isinstance(a, np.ndarray) else 1.0 for a in args)


@numba.njit
def accumulate_rows(X, w):
    acc = np.zeros(X.shape[1])
    for i in range(X.shape[0]):
        acc += w * X[i]
        acc += X[i]  # a view of X: guarded, and X never overlaps acc
    return np.sum(acc ** 2)


def test_the_guard_passes_arrays_that_do_not_overlap():
    check_rule(accumulate_rows, _rng.random((4, 3)), 0.5, second_order=True, vjp=False)
    fn = moonlite.capture(accumulate_rows, _rng.random((4, 3)), 0.5)
    guards = [op for op in fn.ops() if isinstance(op, ops.Call)
              and op.callee is refuse_overlap]
    assert len(guards) == 1  # the fresh `w * X[i]` needs none
    assert str(parse_function(str(fn))) == str(fn)  # the guard's message prints and reads back


@numba.njit
def rows_gathered(Y, X, order, s):
    for i in range(Y.shape[0]):
        Y[i, :] = X[order[i]]  # a view of another argument: its shadow is apart, no copy
    for i in range(1, Y.shape[0]):
        Y[i][:] += s * Y[i - 1]  # the row written with itself: copied
    return np.sum(np.sin(Y) * Y)


def _copies(fn) -> int:
    return sum(1 for op in fn.ops() if isinstance(op, ops.MethodCall) and op.method == "copy")


def test_a_written_region_is_copied_only_where_the_value_may_share_its_shadow():
    args = (np.zeros((4, 3)), _rng.random((5, 3)), np.array([4, 0, 2, 2]), 0.6)
    check_rule(rows_gathered, *args, second_order=True)
    rule = derived_reverse_rule(rows_gathered, tuple(numba.typeof(a) for a in args))
    # three saves in the sweep (the row the gather overwrites; for the row update, the row
    # before `+=` and before the write back) and one copy in the pullback, for the row written
    # with itself; copying the gathered row's region too would make five
    assert _copies(rule.ir) == 4
