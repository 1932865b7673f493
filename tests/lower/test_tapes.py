"""Tapes lowered through intrinsics (`lower/tapes.py`): what a pullback relies on. (That they
leak nothing, tapes of arrays included, is checked with numba's NRT statistics in
tests/test_memory_threads.py.)"""

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
