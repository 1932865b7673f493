"""np.linalg.norm of a vector with an order, and norms of zero vectors (rules/numpy_reductions.py),
in kernels written as users write them, checked by `moonlite.testing.check_rule` in every mode
to second order."""

import math

import numba
import numpy as np

import moonlite
from moonlite.testing import check_rule


@numba.njit
def regularised_least_squares(w, X, y):
    """Squared error with L1, L3 and max-norm penalties on the weights."""
    r = X @ w - y
    return 0.5 * np.sum(r * r) + 0.1 * np.linalg.norm(w, 1) + 0.05 * np.linalg.norm(w, 3) \
        + 0.2 * np.linalg.norm(w, np.inf) ** 2 + np.linalg.norm(r, 2)


def test_norms_with_an_order_to_second_order():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(8, 4))
    y = rng.normal(size=8)
    check_rule(regularised_least_squares, np.array([0.7, -1.3, 0.4, 2.1]), X, y, fixed=(1, 2),
               second_order=True)


@numba.njit
def pairwise_kernel_energy(X):
    """Every pair i, j, i == j included, as users write it: norm(X[i] - X[j]) is then the
    norm of a zero vector whose derivative is zero."""
    e = 0.0
    for i in range(X.shape[0]):
        for j in range(X.shape[0]):
            e += np.exp(-np.linalg.norm(X[i] - X[j]))
            e += 0.1 * np.linalg.norm(X[i] - X[j], 3) + math.hypot(X[i, 0] - X[j, 0], 1e-3 * i)
    return e + np.sum(np.hypot(X[:, 0] - X[:, 0], X[:, 1] - X[:, 1]))


def test_norms_of_zero_vectors_have_zero_derivatives():
    """At x = 0 the norm has a kink; its derivative was 0 / 0 in every norm rule and in
    hypot's partials, and the nan reached the whole gradient (found by a helper's hunt). 0
    there is what the strong products give np.sqrt(np.sum(x * x))."""
    X = np.random.default_rng(2).normal(size=(4, 2))
    check_rule(pairwise_kernel_energy, X, second_order=True)
    assert np.isfinite(moonlite.grad(pairwise_kernel_energy)(X)).all()
    zero = numba.njit(lambda x: np.linalg.norm(x - x) + np.sum(x))
    np.testing.assert_array_equal(moonlite.grad(zero)(np.array([0.5, -2.0])), [1.0, 1.0])
