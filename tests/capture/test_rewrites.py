"""Capture rewrites calls into forms every AD mode already handles (`capture/rewrites.py`).

The values are checked here against the primal; derivatives of the same constructs in every
mode are checked against finite differences in tests/test_fail_closed.py.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ir import ops


def _callees(fn) -> set:
    return {op.callee for op in fn.ops() if isinstance(op, ops.Call)}


@numba.njit
def helper(x, offset=1.0, scale=2.0):
    return x * scale + offset


@numba.njit
def keyword_skipping_a_default(x):
    return helper(x, scale=3.0)


@numba.njit
def keyword_in_position(x):
    return helper(x, offset=0.5)


def test_keywords_of_njit_calls_are_put_in_position():
    for f, args in [(keyword_skipping_a_default, (1.5,)), (keyword_in_position, (1.5,))]:
        fn = moonlite.capture(f, *args)
        call = next(op for op in fn.ops() if isinstance(op, ops.Call) and op.callee is helper)
        assert call.kwnames == ()
        assert moonlite.lower(fn)(*args) == f(*args)
    fn = moonlite.capture(keyword_skipping_a_default, 1.5)
    call = next(op for op in fn.ops() if isinstance(op, ops.Call) and op.callee is helper)
    assert ops.constant_value(call.operands[1]) == 1.0  # the skipped default, as a constant


@numba.njit
def matrix_from_floats(a, b):
    return np.array(((a, b), (b * a, 1.0)))


@numba.njit
def vector_from_mixed(a, n):
    return np.asarray((a, n, 2.5))


def test_arrays_from_tuples_become_fills_of_an_empty_array():
    for f, args in [(matrix_from_floats, (0.3, -2.0)), (vector_from_mixed, (0.3, 4))]:
        fn = moonlite.capture(f, *args)
        assert np.array not in _callees(fn) and np.asarray not in _callees(fn)
        assert np.empty in _callees(fn)
        np.testing.assert_array_equal(moonlite.lower(fn)(*args), f(*args))


@numba.njit
def sums(a, b, v):
    return sum((a, b, a * b)) + sum(v)


def test_builtin_sums_become_additions_and_np_sum():
    args = (0.25, -1.5, np.array([1.0, 2.0, 3.5]))
    fn = moonlite.capture(sums, *args)
    assert sum not in _callees(fn) and np.sum in _callees(fn)
    assert moonlite.lower(fn)(*args) == sums(*args)


@numba.njit
def fills(x, v):
    x.fill(v)
    m = np.empty((2, 3))
    m.fill(2.0 * v)
    return np.sum(x) + np.sum(m)


def test_fill_becomes_an_assignment_to_the_whole_array():
    fn = moonlite.capture(fills, np.ones(3), 0.5)
    assert not any(isinstance(op, ops.MethodCall) for op in fn.ops())
    assert sum(isinstance(op, ops.SetItem) for op in fn.ops()) == 2
    x, y = np.ones(3), np.ones(3)
    assert moonlite.lower(fn)(x, 0.5) == fills(y, 0.5)
    np.testing.assert_array_equal(x, y)


@numba.njit
def reductions_of_a_number(x):
    return np.sum(x) + np.prod(x) * np.mean(x) - np.max(x) + np.min(x)


def test_reductions_of_a_number_are_the_number():
    fn = moonlite.capture(reductions_of_a_number, 1.5)
    assert not _callees(fn) & {np.sum, np.prod, np.mean, np.max, np.min}
    assert moonlite.lower(fn)(1.5) == reductions_of_a_number(1.5)


@pytest.mark.parametrize("f, args", [(keyword_skipping_a_default, (1.5,)),
                                     (matrix_from_floats, (0.3, -2.0)),
                                     (sums, (0.25, -1.5, np.array([1.0, 2.0, 3.5]))),
                                     (reductions_of_a_number, (1.5,))])
def test_rewritten_ir_verifies(f, args):
    moonlite.verify(moonlite.capture(f, *args))
