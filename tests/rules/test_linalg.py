"""np.linalg.svd, pinv, qr and matrix_power (rules/linalg.py; matrix_power through
capture/rewrites.py) in kernels written as users write them, checked against finite
differences in every mode: `check_rule` runs jvp (central differences), vjp (the dot-product
identity), grad and, to second order, hvp (differences of the gradient, and symmetry); a few
Hessians are compared with second differences of the kernel itself. Inputs whose derivative is
not defined are refused in every mode, with the reason and what to do."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.errors import UnsupportedInputError
from moonlite.testing import check_rule, finite_difference_hessian


def singular_spread(rng, m, n):
    """m x n with singular values about 1, 2, ..., min(m, n) apart (vectors well defined)."""
    k = min(m, n)
    left, _ = np.linalg.qr(rng.standard_normal((m, k)))
    right, _ = np.linalg.qr(rng.standard_normal((n, k)))
    return (left * (np.arange(1.0, k + 1.0) + rng.uniform(0.0, 0.3, k))) @ right.T


# --- svd -----------------------------------------------------------------------------------

@numba.njit
def nuclear_regularised_fit(W, X, Y, lam):
    """Low-rank regression: squared error plus lam times the nuclear norm of W."""
    R = X @ W - Y
    s = np.linalg.svd(W, full_matrices=False)[1]
    return 0.5 * np.sum(R * R) + lam * np.sum(s)


@numba.njit
def condition_number(a):
    s = np.linalg.svd(a)[1]  # a square matrix: full_matrices=True is fine
    return s[0] / s[-1]


@numba.njit
def low_rank_projection_error(a, b, c):
    """|| b - u_1 u_1^T b ||^2 with u_1 the leading left singular vector of a, and a weighting
    of the last right one (functions their free signs do not change)."""
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    p = np.outer(u[:, 0], u[:, 0])
    r = b - p @ b
    return np.sum(r * r) + np.sum(vt[-1] ** 2 * c)


@pytest.mark.parametrize("shape", [(6, 3), (3, 5)], ids=["tall", "wide"])
def test_nuclear_norm_regulariser_to_second_order(shape):
    rng = np.random.default_rng(11)
    m, n = shape
    W = singular_spread(rng, m, n)
    X, Y = rng.normal(size=(7, m)), rng.normal(size=(7, n))
    check_rule(nuclear_regularised_fit, W, X, Y, 0.3, fixed=(1, 2, 3), second_order=True)


def test_condition_number_hessian_against_second_differences():
    a = singular_spread(np.random.default_rng(12), 3, 3)
    check_rule(condition_number, a, second_order=True)
    expected = finite_difference_hessian(condition_number, a)
    np.testing.assert_allclose(moonlite.hessian(condition_number)(a.copy()), expected,
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)], ids=["tall", "wide", "square"])
def test_singular_vectors_in_a_kernel_to_second_order(shape):
    rng = np.random.default_rng(13)
    a = singular_spread(rng, *shape)
    b, c = rng.normal(size=(shape[0], 2)), rng.normal(size=shape[1])
    check_rule(low_rank_projection_error, a, b, c, fixed=(2,), second_order=True)


@numba.njit
def singular_values_squared(a):
    return np.sum(np.linalg.svd(a, full_matrices=False)[1] ** 2)  # ||a||_F^2


@numba.njit
def nuclear_norm(a):
    return np.sum(np.linalg.svd(a, full_matrices=False)[1])


def test_singular_values_alone_at_repeated_and_zero_singular_values():
    # the vectors' derivatives divide by the gaps and by s; a zero cotangent of the vectors
    # must stay zero there, or the gradient of the values alone would be nan
    rng = np.random.default_rng(14)
    rank_two = rng.normal(size=(5, 2)) @ rng.normal(size=(2, 3))
    for a in (rank_two, rank_two.T.copy()):
        check_rule(singular_values_squared, a)
        np.testing.assert_allclose(moonlite.grad(singular_values_squared)(a.copy()), 2 * a,
                                   atol=1e-12)
    q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    for a in (np.eye(3), q, q[:, :3].copy()):  # every singular value 1: the gradient is u vt
        check_rule(nuclear_norm, a)


# --- pinv ----------------------------------------------------------------------------------

@numba.njit
def pinv_fit_error(X, y, X_test, y_test):
    """Least squares through the pseudo-inverse (minimum-norm for a wide X), tested on
    held-out data."""
    w = np.linalg.pinv(X) @ y
    r = X_test @ w - y_test
    return np.sum(r * r)


@pytest.mark.parametrize("shape", [(7, 3), (3, 6), (4, 4)], ids=["tall", "wide", "square"])
def test_least_squares_through_pinv_to_second_order(shape):
    rng = np.random.default_rng(21)
    X = singular_spread(rng, *shape)
    y = rng.normal(size=shape[0])
    X_test, y_test = rng.normal(size=(5, shape[1])), rng.normal(size=5)
    check_rule(pinv_fit_error, X, y, X_test, y_test, fixed=(2, 3), second_order=True)


@numba.njit
def pinv_with_rcond(a):
    return np.sum(np.linalg.pinv(a, rcond=1e-8) ** 2)


def test_pinv_with_rcond_by_keyword():
    check_rule(pinv_with_rcond, singular_spread(np.random.default_rng(22), 5, 3),
               second_order=True)


# --- qr ------------------------------------------------------------------------------------

@numba.njit
def qr_least_squares(X, y):
    """The least-squares solution by QR (R w = Q^T y), and its norm."""
    q, r = np.linalg.qr(X)
    w = np.linalg.solve(r, q.T @ y)
    return np.sum(w * w) + np.sum(q[:, 0] * y) ** 2


@pytest.mark.parametrize("shape", [(6, 3), (4, 4)], ids=["tall", "square"])
def test_least_squares_through_qr_to_second_order(shape):
    rng = np.random.default_rng(31)
    X = singular_spread(rng, *shape)
    check_rule(qr_least_squares, X, rng.normal(size=shape[0]), second_order=True)


# --- matrix_power --------------------------------------------------------------------------

@numba.njit
def rollout_error(A, x0, target, steps):
    """A linear system run for `steps` steps: x = A^steps x0, compared with a target."""
    x = np.linalg.matrix_power(A, steps) @ x0
    return np.sum((x - target) ** 2)


@numba.njit
def power_of(a, n):
    return np.linalg.matrix_power(a, n)  # numba types the kernel as returning an Optional


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 6, 11, -1, -4])
def test_matrix_power_rollout_to_second_order(steps):
    rng = np.random.default_rng(41)
    A = rng.uniform(-0.4, 0.4, (3, 3)) + np.eye(3)
    x0, target = rng.normal(size=3), rng.normal(size=3)
    check_rule(rollout_error, A, x0, target, steps, fixed=(2,), second_order=True)


def test_matrix_power_returned_by_the_kernel():
    a = np.random.default_rng(42).uniform(-0.4, 0.4, (3, 3)) + np.eye(3)
    for n in (5, -3):
        check_rule(power_of, a, n)
        np.testing.assert_array_equal(moonlite.jvp(power_of, (a.copy(), n),
                                                   (np.zeros((3, 3)), None))[0],
                                      power_of(a, n))  # the same products as numba's


def test_matrix_power_of_a_non_square_matrix_raises_numbas_error():
    a = np.ones((3, 2))
    with pytest.raises(ValueError, match="input must be a square array"):
        power_of(a, 2)  # numba's own
    for run in (lambda: moonlite.jvp(power_of, (a.copy(), 2), (np.ones((3, 2)), None)),
                lambda: moonlite.vjp(power_of, a.copy(), 2)):
        with pytest.raises(ValueError, match="input must be a square array"):
            run()


# --- refusals ------------------------------------------------------------------------------

@numba.njit
def full_svd_values(a):
    return np.sum(np.linalg.svd(a)[1])  # full_matrices=True, numpy's default


@numba.njit
def pinv_sum(a):
    return np.sum(np.linalg.pinv(a))


@numba.njit
def qr_sum(a):
    return np.sum(np.linalg.qr(a)[1])


def _every_mode(f, x):
    t = np.ones_like(x)
    return [lambda: moonlite.jvp(f, (x.copy(),), (t,)), lambda: moonlite.grad(f)(x.copy()),
            lambda: moonlite.vjp(f, x.copy())[1](1.0), lambda: moonlite.hvp(f, (x.copy(),), (t,))]


REFUSED = [
    ("svd_full_non_square", full_svd_values, np.arange(15.0).reshape(5, 3) ** 0.5,
     "full_matrices=True", "pass full_matrices=False"),
    ("pinv_rank_deficient", pinv_sum, np.outer([1.0, 2.0, 3.0, 4.0], [1.0, -1.0, 0.5]),
     "lower rank", "full rank"),
    ("qr_wide", qr_sum, np.arange(1.0, 16.0).reshape(3, 5) ** 0.5, "wide matrix",
     "square or tall"),
]


@pytest.mark.parametrize("name, f, x, what, fix", REFUSED, ids=[r[0] for r in REFUSED])
def test_an_undefined_derivative_is_refused_in_every_mode(name, f, x, what, fix):
    f(x)  # numba computes the value
    for run in _every_mode(f, x):
        with pytest.raises(UnsupportedInputError, match=what) as info:
            run()
        assert isinstance(info.value, moonlite.UnsupportedError)
        assert "what to do: " in str(info.value) and fix in str(info.value)
