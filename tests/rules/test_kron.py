"""np.kron (rules/numpy_products.py) in kernels written as users write them, checked against
finite differences in every mode by `moonlite.testing.check_rule` (jvp, vjp, grad and, to
second order, hvp), and one Hessian against second differences of the kernel itself."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule, finite_difference_hessian


@numba.njit
def kronecker_gp_nll(la, lb, noise, y):
    """The negative log-likelihood of y under a Gaussian process on a grid, whose covariance
    is the Kronecker product of a row and a column covariance, plus noise."""
    k = np.kron(la @ la.T, lb @ lb.T) + noise * noise * np.eye(y.shape[0])
    return 0.5 * (y @ np.linalg.solve(k, y)) + 0.5 * np.linalg.slogdet(k)[1]


def test_kronecker_structured_covariance_to_second_order():
    rng = np.random.default_rng(51)
    la = rng.uniform(-1.0, 1.0, (2, 2)) + 1.5 * np.eye(2)
    lb = rng.uniform(-1.0, 1.0, (3, 3)) + 1.5 * np.eye(3)
    check_rule(kronecker_gp_nll, la, lb, 0.7, rng.normal(size=6), fixed=(3,),
               second_order=True)


@numba.njit
def kron_energy(a, c):
    return np.sum(np.sin(np.kron(a, c)) * np.kron(a, c))


def _shapes(rng):
    return [(rng.normal(size=(2, 3)), rng.normal(size=(3, 2))),  # matrices
            (rng.normal(size=3), rng.normal(size=2)),  # vectors: a vector result
            (rng.normal(size=3), rng.normal(size=(2, 2))),  # a vector is one row
            (rng.normal(size=(2, 2)), rng.normal(size=3)),
            (0.8, rng.normal(size=(2, 3))),  # a number: the product
            (rng.normal(size=4), -1.3)]


@pytest.mark.parametrize("k", range(6))
def test_kron_of_every_shape_numba_takes_to_second_order(k):
    a, c = _shapes(np.random.default_rng(52))[k]
    check_rule(kron_energy, a, c, second_order=True)


def test_kron_hessian_against_second_differences():
    rng = np.random.default_rng(53)
    a, c = rng.normal(size=(2, 2)), rng.normal(size=(2, 3))
    expected = finite_difference_hessian(kron_energy, a, c)
    np.testing.assert_allclose(moonlite.hessian(kron_energy)(a.copy(), c.copy()), expected,
                               rtol=1e-4, atol=1e-6)
