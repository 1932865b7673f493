"""Tapes lowered through intrinsics (`lower/tapes.py`): what a pullback relies on. (That they
leak nothing, tapes of arrays included, is checked with numba's NRT statistics in
tests/test_memory_threads.py.)"""

import math

import numpy as np
import numba
import pytest
from numba.core import types

from moonlite.lower.tapes import tape_new, tape_pop, tape_push, tape_top

F64 = types.float64
I64 = types.int64
ARR = types.Array(types.float64, 1, "C")
PAIR = types.UniTuple(types.int64, 2)


@numba.njit
def _last_in_first_out(x):
    tape = tape_new(F64)
    for v in x:
        tape_push(tape, v)
    out = np.empty_like(x)
    for k in range(x.shape[0]):
        top = tape_top(tape)
        out[k] = tape_pop(tape)
        if top != out[k]:
            out[k] = np.nan
    return out


def test_values_come_back_last_in_first_out_across_growth():
    x = np.arange(1000.0)
    np.testing.assert_array_equal(_last_in_first_out(x), x[::-1])


@numba.njit
def _refill(rounds, n):
    # filled and drained once per outer iteration, as a nested loop's tape is
    tape = tape_new(I64)
    total = 0
    for r in range(rounds):
        for i in range(n):
            tape_push(tape, r * n + i)
        for i in range(n):
            total += tape_pop(tape)
    return total


def test_a_tape_refilled_many_times_keeps_every_value():
    assert _refill(50, 37) == sum(range(50 * 37))


@numba.njit
def _arrays(n):
    tape = tape_new(ARR)
    for i in range(n):
        tape_push(tape, np.full(3, float(i)))  # the tape holds the only reference
    s = 0.0
    for i in range(n - 1):
        s += tape_pop(tape).sum()              # popped arrays stay alive while used
    s += tape_top(tape)[0]                     # one left on the tape: freed with the tape
    return s


def test_tapes_of_arrays_own_their_arrays():
    n = 200
    assert _arrays(n) == 3.0 * sum(range(1, n)) + 0.0


@numba.njit
def _tuples():
    tape = tape_new(PAIR)
    tape_push(tape, (1, 2))
    tape_push(tape, (3, 4))
    a = tape_pop(tape)
    b = tape_pop(tape)
    return a[0] * 1000 + a[1] * 100 + b[0] * 10 + b[1]


def test_tapes_of_tuples():
    assert _tuples() == 3412


@numba.njit
def _pop_empty():
    tape = tape_new(F64)
    tape_push(tape, 1.0)
    tape_pop(tape)
    return tape_pop(tape)


@numba.njit
def _top_empty():
    return tape_top(tape_new(F64))


def test_reading_an_empty_tape_raises_instead_of_reading_memory():
    with pytest.raises(IndexError, match="empty tape"):
        _pop_empty()
    with pytest.raises(IndexError, match="empty tape"):
        _top_empty()


# --- tapes that keep their memory between calls -----------------------------------------------

from moonlite.lower.tapes import SLOTS, tape_new_reused, tape_release  # noqa: E402

_SLOT = next(SLOTS)


@numba.njit
def _use_reused_tape(n, leave):
    tape = tape_new_reused(F64, _SLOT)
    for i in range(n):
        tape_push(tape, float(i))
    s = 0.0
    for i in range(n - leave):  # `leave` values stay on the tape when it goes back
        s += tape_pop(tape)
    tape_release(tape, _SLOT)
    return s


def test_a_reused_tape_starts_empty_whatever_the_last_call_left_on_it():
    assert _use_reused_tape(1000, 10) == sum(range(10, 1000))
    assert _use_reused_tape(5, 0) == sum(range(5))      # not the 10 values left behind
    assert _use_reused_tape(3000, 0) == sum(range(3000))  # grows past the kept allocation


@numba.njit
def _reciprocals(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(1.0 / x[i])  # exp is kept on a tape; 1 / 0 raises
    return s


def test_a_call_that_raises_midway_leaves_the_next_call_correct():
    import moonlite
    g = moonlite.grad(_reciprocals)
    x = np.array([0.5, 1.0, 2.0])
    expected = -np.exp(1.0 / x) / x ** 2
    np.testing.assert_allclose(g(x), expected, rtol=1e-12)
    with pytest.raises(ZeroDivisionError):
        g(np.array([0.5, 0.0, 2.0]))  # the tape taken from the slot is not put back
    np.testing.assert_allclose(g(x), expected, rtol=1e-12)
    np.testing.assert_allclose(g(x), expected, rtol=1e-12)


def test_threads_in_one_rule_never_share_a_tape():
    import threading
    import moonlite
    g = moonlite.grad(_reciprocals)

    @numba.njit(nogil=True)  # compiled code running in several threads at once
    def summed_gradients(x, reps):
        total = np.zeros_like(x)
        for _ in range(reps):
            total += g(x)
        return total

    xs = [np.linspace(0.5 + k, 2.0 + k, 3000) for k in range(4)]
    expected = [-200 * np.exp(1.0 / x) / x ** 2 for x in xs]
    summed_gradients(xs[0], 1)
    results = [None] * 4

    def work(k):
        results[k] = summed_gradients(xs[k], 200)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        np.testing.assert_allclose(results[k], expected[k], rtol=1e-10)
