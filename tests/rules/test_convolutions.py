"""np.convolve and np.correlate of vectors (rules/numpy_products.py) in kernels written as users
write them, checked by `moonlite.testing.check_rule` in every mode to second order against
finite differences."""

import numba
import numpy as np

from moonlite.testing import check_rule


@numba.njit
def smoothed_fit(signal, kernel, target):
    """A signal smoothed by a learned filter, fitted to a target."""
    smooth = np.convolve(signal, kernel)[1:-1]
    r = smooth - target
    return np.sum(r * r)


@numba.njit
def matched_filter(template, trace):
    """The peak response of a template slid along a trace, softened by a log-sum-exp."""
    response = np.correlate(trace, template)
    return np.log(np.sum(np.exp(3.0 * response))) + 0.1 * np.sum(np.correlate(template, trace))


def test_convolution_and_correlation_to_second_order():
    rng = np.random.default_rng(11)
    signal = np.sin(np.linspace(0.0, 3.0, 12))
    kernel = np.array([0.25, 0.5, 0.25])
    target = rng.normal(0.0, 0.5, 12)
    check_rule(smoothed_fit, signal, kernel, target, fixed=(2,), second_order=True)
    check_rule(matched_filter, rng.normal(0.0, 0.3, 4), rng.normal(0.0, 0.3, 10),
               second_order=True)
