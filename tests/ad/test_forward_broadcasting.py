"""Forward mode when an elementwise op broadcasts an operand being differentiated against one
that is not (`A + b`, `x - c` with A and x held fixed): the tangent of the result has the
result's shape (`ad/forward.py: _broadcast`).

The rules of `+` and `-` give the operand's own tangent (db, of b's shape); jacfwd of
`np.sum(A + b)` in b counted each entry of b once instead of once per row of A (silently
wrong), and hessian in a number c of `np.sum((x - c) ** 2)` failed to verify (a number's
tangent stored where an array's is kept: a helper's hunt). Checked against finite differences
of the kernel itself."""

import numba
import numpy as np
import pytest

import moonlite


@numba.njit
def row_offsets(A, b):
    return np.sum(np.sin(A + b))


@numba.njit
def minus_rows(A, b):
    return np.sum((b - A) ** 2)


@numba.njit
def squared_distances(x, c):
    return np.sum((x - c) ** 2)


@numba.njit
def gaussian_nll(x, mu, log_sigma):
    z = (x - mu) / np.exp(log_sigma)
    return np.sum(0.5 * z * z + log_sigma)


@numba.njit
def where_broadcast(A, b):
    return np.sum(np.where(A > 0.0, b, 2.0 * b) * A)


def _fd_gradient(f, args, argnum, h=1e-6):
    x = np.asarray(args[argnum], dtype=np.float64)
    grad = np.zeros(x.shape)
    for k in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[k] = h
        plus, minus = list(args), list(args)
        plus[argnum] = x + step if x.ndim else float(x + step)
        minus[argnum] = x - step if x.ndim else float(x - step)
        grad[k] = (f(*plus) - f(*minus)) / (2 * h)
    return grad


CASES = [
    ("row_offsets, b a row", row_offsets, lambda r: (r.standard_normal((4, 3)),
                                                      r.standard_normal(3)), 1),
    ("row_offsets, b of shape (1, 3)", row_offsets, lambda r: (r.standard_normal((4, 3)),
                                                                r.standard_normal((1, 3))), 1),
    ("row_offsets, b a number", row_offsets, lambda r: (r.standard_normal((4, 3)), 0.3), 1),
    ("minus_rows", minus_rows, lambda r: (r.standard_normal((4, 3)), r.standard_normal(3)), 1),
    ("squared_distances", squared_distances, lambda r: (r.standard_normal(5), 0.4), 1),
    ("gaussian_nll in mu", gaussian_nll, lambda r: (r.standard_normal(6), 0.2, -0.3), 1),
    ("gaussian_nll in log_sigma", gaussian_nll, lambda r: (r.standard_normal(6), 0.2, -0.3), 2),
    ("where_broadcast", where_broadcast, lambda r: (r.standard_normal((4, 3)),
                                                    r.standard_normal(3)), 1),
]


@pytest.mark.parametrize("name, f, draw, argnum", CASES, ids=[c[0] for c in CASES])
def test_jacfwd_and_hessian_in_the_broadcast_operand(name, f, draw, argnum):
    args = draw(np.random.default_rng(11))
    expected = _fd_gradient(f, args, argnum)
    np.testing.assert_allclose(moonlite.jacfwd(f, argnums=argnum)(*args), expected,
                               rtol=1e-5, atol=1e-7)
    hessian = moonlite.hessian(f, argnums=argnum)(*args)

    def gradient(*a):
        return moonlite.grad(f, argnums=argnum)(*a)
    size = np.size(args[argnum])
    fd = np.zeros((size, size))
    x = np.asarray(args[argnum], dtype=np.float64)
    for k in range(size):
        step = np.zeros(x.size)
        step[k] = 1e-5
        plus, minus = list(args), list(args)
        plus[argnum] = (x.ravel() + step).reshape(x.shape) if x.ndim else float(x + step[0])
        minus[argnum] = (x.ravel() - step).reshape(x.shape) if x.ndim else float(x - step[0])
        fd[:, k] = (np.ravel(gradient(*plus)) - np.ravel(gradient(*minus))) / 2e-5
    np.testing.assert_allclose(np.reshape(hessian, (size, size)), fd, rtol=1e-5, atol=1e-6)
