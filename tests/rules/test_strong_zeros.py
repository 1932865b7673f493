"""Strong zeros (`rules/strong_zeros.py`): a product in a derivative with an exactly zero factor
is exactly zero, even against an infinite or nan one."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite.rules import lookup_jvp
from moonlite.rules.strong_zeros import strong_mul, strong_mul_scalar


@numba.njit
def _strong(a, p):
    return strong_mul(a, p)


@pytest.mark.parametrize("a, p, expected", [(0.0, np.inf, 0.0), (-np.inf, 0.0, 0.0),
                                            (0.0, np.nan, 0.0), (2.0, 3.0, 6.0),
                                            (np.inf, 2.0, np.inf), (np.nan, 2.0, np.nan)])
def test_a_zero_factor_wins(a, p, expected):
    got = _strong(a, p)
    assert (np.isnan(got) and np.isnan(expected)) or got == expected


def test_arrays_keep_their_dtype():
    out = _strong(np.array([0.0, 1.0], np.float32), np.float32(np.inf))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [0.0, np.inf])


@numba.njit
def masked_log(x, keep):
    return np.sum(np.where(keep, np.log(x), 0.0))


def test_masked_singular_values_have_zero_derivatives_in_every_mode():
    x = np.array([0.0, 1.0, 2.0])
    keep = np.array([False, True, True])
    g = moonlite.grad(masked_log)(x, keep)
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.5])
    t = np.array([0.0, 1.0, 1.0])
    assert moonlite.jvp(masked_log, (x, keep), (t, None))[1] == pytest.approx(1.5)
    (hv, _) = moonlite.hvp(masked_log, (x, keep), (t, None))
    np.testing.assert_array_equal(hv, [0.0, -1.0, -0.25])


@numba.njit
def underflowing_weight(t):
    return math.exp(-1.7976931348623157e308 / t) * 3.0 + t


def test_an_underflowed_partial_wins_over_an_overflowed_tangent():
    # d/dt (huge / t) overflows to inf; exp's partial underflows to 0: the product is 0
    assert moonlite.grad(underflowing_weight)(0.5) == 1.0
    assert moonlite.jvp(underflowing_weight, (0.5,), (1.0,))[1] == 1.0
    assert moonlite.hvp(underflowing_weight, (0.5,), (1.0,))[0] == 0.0


def test_bounded_partials_are_declared_where_they_are_finite():
    assert lookup_jvp(np.sin).bounded is True
    assert lookup_jvp(np.log).bounded is False
    assert lookup_jvp(math.sqrt).bounded is False


@numba.njit
def _scaled_exp(z):
    return z[1] * np.exp(z[0])


@numba.njit
def _weighted(x, p):
    return p * np.exp(x) + p * np.log(x) + p * np.sqrt(x)


def test_a_strong_product_is_differentiated_as_a_product_at_its_zero():
    """The Hessian of p * exp(x) at p = 0 has the cross term exp(x): forward mode over the
    reverse rule differentiates the scalar strong product (`strong_mul_scalar`, a primitive)
    as a product. Written out as a select, its zero branch gave that term 0 (adversarial
    tests: a hydrology model with one dry day)."""
    H = moonlite.hessian(_scaled_exp)(np.array([0.7, 0.0]))
    e = math.exp(0.7)
    np.testing.assert_allclose(H, [[0.0, e], [e, 0.0]], rtol=1e-12)
    hx, hp = moonlite.hvp(_weighted, (0.7, 0.0), (0.0, 1.0))
    assert hx == pytest.approx(e + 1.0 / 0.7 + 0.5 / math.sqrt(0.7)) and hp == 0.0
    assert _strong_scalar(0.0, np.inf) == 0.0 and _strong_scalar(2.0, 3.0) == 6.0
    assert lookup_jvp(strong_mul_scalar) is not None


@numba.njit
def _strong_scalar(a, p):
    return strong_mul_scalar(a, p)
