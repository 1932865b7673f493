"""The never-written analysis that lets inactive array arguments keep symbolic zero tangents."""

import numba
import numpy as np

import moonlite
from moonlite.driver import PASS_CONTEXT
from moonlite.ad.inline import inline_njit_calls
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


# --- arrays held by tuples: a tuple built of an argument holds the argument itself ----------

@numba.njit
def _layers_forward(layers, x):
    h = x
    for W in layers:
        h = np.tanh(W @ h)
    return h


@numba.njit
def reads_through_a_literal(W1, W2, x):
    return np.sum(_layers_forward([W1, W2], x))  # the list literal reaches the helper a tuple


@numba.njit
def writes_through_a_tuple(a, b, c):
    t = (a, (b, c))
    t[1][0][0] = 1.0
    return np.sum(a) + np.sum(b)


@numba.njit
def writes_through_a_chosen_tuple(a, b, c, flag):
    t = (a, b) if flag > 0 else (b, c)
    t[1][0] = 2.0
    return np.sum(a)


@numba.njit
def writes_at_a_runtime_index(a, b, k):
    t = (a, b)
    t[k][0] = 3.0
    return np.sum(a)


@numba.njit
def writes_a_record_in_a_tuple(p, q, y):
    t = (p[0], q)
    t[0]['a'] = y
    return p[0]['a'] * y


def _written(f, *args):
    # as the API asks: with the njit helpers the kernel calls inlined (a call writes otherwise)
    fn = inline_njit_calls(moonlite.capture(f, *args), context=PASS_CONTEXT)
    return [i for i, a in enumerate(fn.args) if not never_written(fn, a)]


def test_a_tuple_of_arguments_read_by_a_helper_writes_none_of_them():
    assert _written(reads_through_a_literal, np.ones((2, 2)), np.ones((2, 2)), np.ones(2)) == []


def test_writes_through_tuples_are_seen():
    x = np.ones(3)
    assert _written(writes_through_a_tuple, x, x.copy(), x.copy()) == [1]
    # which entry of a phi of tuples is written is not followed: every array in them counts
    assert _written(writes_through_a_chosen_tuple, x, x.copy(), x.copy(), 1.0) == [0, 1, 2]
    assert _written(writes_at_a_runtime_index, x, x.copy(), 1) == [0, 1]
    p = np.zeros(2, dtype=np.dtype([("a", np.float64), ("b", np.float64)]))
    assert _written(writes_a_record_in_a_tuple, p, p.copy(), 1.5) == [0]


def test_one_array_given_twice_to_a_kernel_that_only_reads_it():
    # the kernel was taken as writing W1 and W2 (they went into a tuple): the same array given
    # for both was refused as aliased memory; it is read only, so the gradient is taken
    rng = np.random.default_rng(3)
    W, x = rng.standard_normal((3, 3)), rng.standard_normal(3)
    moonlite.testing.check_vjp(reads_through_a_literal, W, W, x)
    g = moonlite.grad(reads_through_a_literal, argnums=(0, 1))(W, W, x)
    eps = 1e-6
    fd = np.zeros_like(W)
    for i in np.ndindex(W.shape):
        d = np.zeros_like(W)
        d[i] = eps
        fd[i] = (reads_through_a_literal(W + d, W + d, x)
                 - reads_through_a_literal(W - d, W - d, x)) / (2 * eps)
    np.testing.assert_allclose(g[0] + g[1], fd, rtol=1e-6, atol=1e-8)
