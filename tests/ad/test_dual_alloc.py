"""Fresh arrays and their tangents share one block in forward mode (`ad/dual_alloc.py`)."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ad.dual_alloc import stacked_zeros_like, stacked_zeros_of_length, \
    stacked_zeros_of_shape
from moonlite.ad.forward import forward_transform
from moonlite.ir import ops
from moonlite.ir.verifier import verify
from moonlite.testing import check_hvp, check_jvp, finite_difference_hessian


@numba.njit
def smooth_with_temporaries(x):
    n = x.shape[0]
    a = np.zeros(n)
    b = np.empty_like(x)
    c = np.zeros((2, n))
    for i in range(n):
        a[i] = np.sin(x[i])
        b[i] = x[i] * a[i]
        c[0, i] = a[i] + b[i]
        c[1, i] = c[0, i] * x[i]
    return np.sum(c) + np.sum(a * b)


@numba.njit
def returns_a_fresh_array(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] ** 2
    return out


@numba.njit
def keeps_its_own_dtype(x):
    out = np.zeros(x.shape[0], np.float32)  # a dtype: a separate allocation
    out[0] = x[0]
    filled = np.empty(x.shape[0])
    filled[:] = x * x
    return np.sum(out) + np.sum(filled)


def _helpers_called(fn):
    return [op.callee for block in fn.blocks for op in block.ops if isinstance(op, ops.Call)
            and op.callee in (stacked_zeros_like, stacked_zeros_of_length,
                              stacked_zeros_of_shape)]


@pytest.mark.parametrize("width", [1, 3])
def test_each_fresh_array_is_one_block_of_primal_and_tangent_rows(width):
    fn = moonlite.capture(smooth_with_temporaries, np.ones(4))
    fwd = forward_transform(fn, width)
    verify(fwd)
    assert _helpers_called(fwd) == [stacked_zeros_of_length, stacked_zeros_like,
                                     stacked_zeros_of_shape]
    zeros_left = [op for block in fwd.blocks for op in block.ops
                  if isinstance(op, ops.Call) and op.callee in (np.zeros, np.zeros_like)]
    assert zeros_left == []


def test_derivatives_through_stacked_temporaries_match_finite_differences():
    x = np.random.default_rng(0).uniform(-1, 1, 5)
    check_jvp(smooth_with_temporaries, x)
    check_hvp(smooth_with_temporaries, x)
    H = moonlite.hessian(smooth_with_temporaries)(x)
    np.testing.assert_allclose(H, finite_difference_hessian(smooth_with_temporaries, x),
                               rtol=1e-4, atol=1e-5)


def test_a_returned_fresh_array_and_its_tangent_are_independent_rows():
    x = np.array([1.0, -2.0, 3.0])
    out, dout = moonlite.jvp(returns_a_fresh_array, (x,), (np.ones(3),))
    np.testing.assert_array_equal(out, x ** 2)
    np.testing.assert_array_equal(dout, 2 * x)
    out[:] = 7.0  # writing one row leaves the other alone
    np.testing.assert_array_equal(dout, 2 * x)


def test_allocations_with_a_dtype_keep_separate_blocks():
    fn = moonlite.capture(keeps_its_own_dtype, np.ones(3))
    fwd = forward_transform(fn, 1)
    verify(fwd)
    assert _helpers_called(fwd) == [stacked_zeros_of_length]  # np.empty(n) only
    check_jvp(keeps_its_own_dtype, np.array([0.5, 1.0, 2.0]))
