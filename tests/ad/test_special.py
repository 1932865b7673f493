"""The special functions derivative rules call, against scipy's."""

import numpy as np
import pytest
import scipy.special

from moonlite.rules.special import digamma


def _points():
    grid = np.linspace(-20.3, 30.7, 1001)
    edges = [1e-8, 1e-3, 0.5, 1.4616321449683622, 5.999, 6.0, 6.001, 100.0, 1e6, 1e12,
             -0.5, -1e-6, -1.000001, -3.9999, -99.5, -1e5 - 0.25]
    xs = np.concatenate([grid, edges])
    # At a pole's neighbourhood the function's conditioning, not the algorithm, decides the error.
    return xs[np.abs(xs - np.round(xs)) > 1e-7]


def test_digamma_matches_scipy():
    xs = _points()
    got = np.array([digamma(x) for x in xs])
    want = scipy.special.digamma(xs)
    err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
    worst = int(np.argmax(err))
    assert err[worst] < 1e-12, f"digamma({xs[worst]!r}) = {got[worst]!r}, scipy {want[worst]!r}"


@pytest.mark.parametrize("x", [0.0, -1.0, -7.0])
def test_digamma_is_nan_at_the_poles(x):
    assert np.isnan(digamma(x))


def test_digamma_float32_argument():
    assert digamma(np.float32(2.5)) == pytest.approx(scipy.special.digamma(2.5), rel=1e-7)
