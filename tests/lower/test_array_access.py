"""Views and slice writes of arrays in derived code are calls of functions compiled once
(lower/array_access.py): the numbers numba's inline code gives, its errors raised as numba
raises them, bounds checked where the kernel asks for it, and one compiled function per
signature, left out of compiles that are not moonlite's."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.lower import array_access
from moonlite.testing import check_rule

X = np.array([0.3, -0.5, 0.8, 1.1])
W = np.array([0.7, 0.2, -0.3, 0.9])


@numba.njit
def windows(x, w):
    """Every form derived code calls out: a:b, a stepped slice, a row and a column of a matrix,
    an integer-array index, and a number written into a slice."""
    m = np.outer(x, w)
    out = np.zeros(x.shape[0])
    out[1:] = x[:-1] * w[1:]
    out[::2] += m[0, ::2]
    out[:1] = 0.5
    row = m[1]
    col = m[:, 2]
    picks = np.array([3, 0, 2])
    out[picks] = out[picks] + x[picks] * col[:3]
    return np.sum(out * out) + np.sum(row * col)


def test_views_and_slice_writes_in_every_mode():
    check_rule(windows, X, W, second_order=True)


def test_one_function_per_signature_linked_into_each_derived_function():
    moonlite.grad(windows, argnums=(0, 1))(X, W)
    known = len(array_access._functions)
    assert known > 0
    # the same views and writes, in another derived function of the same types
    value, _ = moonlite.value_and_grad(windows, argnums=(0, 1))(X, W)
    assert value == windows(X, W)
    assert len(array_access._functions) == known


def test_compiles_that_are_not_moonlites_use_numbas_own_lowering():
    @numba.njit
    def plain(a):
        b = a.copy()
        b[1:3] = a[:2] * 2.0
        return b[::2]

    known = len(array_access._functions)
    np.testing.assert_allclose(plain(X), [X[0], X[1] * 2.0])
    assert len(array_access._functions) == known


@numba.njit
def written_in_part(x, k):
    out = np.zeros(3)
    out[:k] = x  # the wrong length unless k == len(x)
    return np.sum(out * out)


def test_a_slice_write_of_the_wrong_shape_raises_numbas_error_in_derived_code():
    x = np.array([0.5, 2.0])
    with pytest.raises(ValueError, match="cannot assign slice"):
        written_in_part(x, 3)
    with pytest.raises(ValueError, match="cannot assign slice"):
        moonlite.grad(written_in_part)(x, 3)
    with pytest.raises(ValueError, match="cannot assign slice"):
        moonlite.jvp(written_in_part, (x, 3), (x, None))
    np.testing.assert_allclose(moonlite.grad(written_in_part)(x, 2), 2.0 * x)


@numba.njit(boundscheck=True)
def gathered(x, picks):
    return np.sum(x[picks] ** 2)


def test_an_index_out_of_bounds_raises_in_derived_code_under_boundscheck():
    picks = np.array([0, 9])
    with pytest.raises(IndexError):
        gathered(X, picks)
    with pytest.raises(IndexError):
        moonlite.grad(gathered)(X, picks)
    np.testing.assert_allclose(moonlite.grad(gathered)(X, np.array([1, 1])),
                               [0.0, 4.0 * X[1], 0.0, 0.0])
