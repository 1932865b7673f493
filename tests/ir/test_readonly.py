"""The never-written analysis that lets inactive array arguments keep symbolic zero tangents."""

import numba
import numpy as np

import moonlite
from moonlite.ir.readonly import never_written


@numba.njit
def reads(W, x):
    return np.sum(np.tanh(W @ x)) + W[0, 0] * x[1]


@numba.njit
def writes_through_a_view(W, x):
    row = W[0]
    row[1] = 3.0
    return np.sum(W @ x)


@numba.njit
def helper(a):
    a[0] = 1.0
    return a[1]


@numba.njit
def passes_to_njit(W, x):
    return helper(x) + W[0, 0]


@numba.njit
def updates_in_place(W, x):
    x += 1.0
    return np.sum(W @ x)


def test_reading_kernels_never_write():
    fn = moonlite.capture(reads, np.ones((2, 2)), np.ones(2))
    assert never_written(fn, fn.args[0]) and never_written(fn, fn.args[1])


def test_writes_through_views_calls_and_in_place_updates_are_seen():
    fn = moonlite.capture(writes_through_a_view, np.ones((2, 2)), np.ones(2))
    assert not never_written(fn, fn.args[0]) and never_written(fn, fn.args[1])
    fn = moonlite.capture(passes_to_njit, np.ones((2, 2)), np.ones(2))
    assert never_written(fn, fn.args[0]) and not never_written(fn, fn.args[1])
    fn = moonlite.capture(updates_in_place, np.ones((2, 2)), np.ones(2))
    assert never_written(fn, fn.args[0]) and not never_written(fn, fn.args[1])


def test_jacobian_wrt_one_argument_when_another_is_written():
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    jac = moonlite.jacfwd(updates_in_place, argnums=0)(W, np.zeros(2))
    # d/dW sum(W @ (x + 1)) = outer(ones, x + 1)
    np.testing.assert_allclose(jac, np.ones((2, 2)))
