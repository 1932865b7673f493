"""np.sort (of a vector, and of a matrix row by row) and np.median (rules/numpy_shapes.py, rules/numpy_reductions.py) in
kernels written as users write them, checked by `moonlite.testing.check_rule` in every mode to
second order against finite differences; nans as numba gives them."""

import numba
import numpy as np

import moonlite
from moonlite.testing import check_rule


@numba.njit
def trimmed_mean(x, k):
    """The mean of x without its k smallest and k largest entries (a robust location)."""
    s = np.sort(x)
    return np.mean(s[k:x.shape[0] - k])


@numba.njit
def median_absolute_deviation(x):
    centre = np.median(x)
    return np.median(np.abs(x - centre)) + 0.1 * np.median(np.sin(x) * x)


@numba.njit
def quantile_loss(theta, data):
    """Order statistics of a fitted model's residuals: the largest residual and the median."""
    r = data - theta[0] - theta[1] * np.arange(data.shape[0])
    s = np.sort(r * r)
    return s[-1] + 2.0 * np.median(r * r) + s[0] * s[1]


@numba.njit
def ensemble_spread(members, weights):
    """Per-time-step order statistics of an ensemble (rows: time steps, columns: members, as a
    forecast ensemble is stored): np.sort of a matrix sorts each row."""
    s = np.sort(members * weights)
    return np.sum(s[:, -1] - s[:, 0]) + np.sum(s[:, 1] ** 2)


X = np.array([0.31, -1.2, 2.05, 0.77, -0.42, 1.38, 0.06, -2.3, 0.95])


def test_sort_and_median_in_every_mode_to_second_order():
    check_rule(trimmed_mean, X, 2, fixed=(1,), second_order=True)
    check_rule(median_absolute_deviation, X, second_order=True)
    check_rule(median_absolute_deviation, X[:8], second_order=True)  # an even count
    data = np.array([0.4, 1.1, 2.5, 2.6, 4.9, 4.8, 6.3])
    check_rule(quantile_loss, np.array([0.2, 0.9]), data, fixed=(1,), second_order=True)


def test_sort_of_a_matrix_sorts_each_row_in_every_mode():
    members = X.reshape(3, 3) + np.array([[0.0], [0.5], [-0.25]])
    weights = np.array([1.0, 0.7, 1.3])
    check_rule(ensemble_spread, members, weights, second_order=True)
    g = moonlite.grad(ensemble_spread)(members, weights)
    w = members * weights  # each row's largest gets +w, its smallest -w, its second 2 s w
    expected = np.zeros_like(members)
    for r in range(3):
        order = np.argsort(w[r])
        expected[r, order[-1]] += weights[order[-1]]
        expected[r, order[0]] -= weights[order[0]]
        expected[r, order[1]] += 2.0 * w[r, order[1]] * weights[order[1]]
    np.testing.assert_allclose(g, expected)


def test_the_median_gradient_goes_to_the_middle_entries():
    np.testing.assert_allclose(moonlite.grad(_median)(X), np.eye(9)[0])  # 0.31 is the middle
    even = X[:8]  # middle entries 0.06 and 0.31
    np.testing.assert_allclose(moonlite.grad(_median)(even), 0.5 * (np.eye(8)[0] + np.eye(8)[6]))


@numba.njit
def _median(x):
    return np.median(x)


@numba.njit
def _sorted_weighted(x):
    return np.sum(np.sort(x) * np.arange(x.shape[0]))


def test_nans_give_numbas_values_and_a_nan_median_derivative():
    x = np.array([0.5, np.nan, -0.3, 1.2])
    value, g = moonlite.value_and_grad(_median)(x)
    np.testing.assert_equal(value, _median(x))
    assert np.isnan(g).all()  # the median of an array with a nan has no derivative
    value, g = moonlite.value_and_grad(_sorted_weighted)(x)
    np.testing.assert_equal(value, _sorted_weighted(x))
    # np.sort puts the nan last: each finite entry's weight is its rank
    np.testing.assert_equal(g[[0, 2, 3]], [1.0, 0.0, 2.0])


@numba.njit
def value_at_risk(weights, returns, level):
    """A portfolio's loss quantile and the mean loss beyond a percentile (finance)."""
    losses = -(returns @ weights)
    var = np.quantile(losses, level)
    return var + 0.5 * np.percentile(losses, 100.0 * level - 7.0) \
        + 0.1 * np.nanpercentile(losses, 30.0)


def test_percentiles_and_quantiles_in_every_mode_to_second_order():
    rng = np.random.default_rng(3)
    returns = rng.normal(0.0, 0.02, (40, 3))
    weights = np.array([0.5, 0.3, 0.2])
    check_rule(value_at_risk, weights, returns, 0.9, fixed=(1,), second_order=True)


@numba.njit
def _percentiles(a, q):
    return np.percentile(a, q) + 2.0 * np.nanquantile(a, q / 100.0)


def test_percentile_ends_and_nans():
    a = np.array([0.4, -1.3, 2.2, 0.9, -0.1])
    for q, expected in [(0.0, 3 * np.eye(5)[1]), (100.0, 3 * np.eye(5)[2])]:
        value, g = moonlite.value_and_grad(_percentiles)(a, q)
        assert value == _percentiles(a, q)
        np.testing.assert_allclose(g, expected)  # the smallest, the largest entry
    with_nan = np.array([0.4, np.nan, 2.2, 0.9, -0.1])
    value, (ga, gq) = moonlite.value_and_grad(_percentiles, argnums=(0, 1))(with_nan, 40.0)
    np.testing.assert_equal(value, _percentiles(with_nan, 40.0))  # nan: np.percentile's
    assert np.isnan(ga).all() and np.isnan(gq)
