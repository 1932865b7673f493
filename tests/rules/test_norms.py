"""np.linalg.norm of a vector with an order (rules/numpy_reductions.py) in kernels written as
users write them, checked by `moonlite.testing.check_rule` in every mode to second order."""

import numba
import numpy as np

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
