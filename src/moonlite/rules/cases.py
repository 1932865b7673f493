"""Test cases of the built-in numpy rules: a kernel per primitive and draws of arguments inside
its domain. Each rule file lists its cases beside its rules (`NUMPY_RULE_CASES` in
`numpy_rules.py`, `CASES` in `numpy_reductions.py`, `numpy_shapes.py`, `numpy_products.py`,
`numpy_interp.py`, `numpy_percentiles.py`, `numpy_flips.py`, `numpy_nan_reductions.py`,
`LINALG_RULE_CASES` in `linalg.py`, `REDUCTION_RULE_CASES` in `reductions.py`);
`moonlite.rules.numpy_rule_cases()` gathers them for the tests, which check each
against central finite differences in every mode (`tests/ad/test_forward_numpy.py`,
`tests/ad/test_reverse_rules.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class NumpyRuleCase:
    """A kernel exercising one primitive, example arguments inside its domain, and which of them
    are differentiated (indices of float scalar/array arguments)."""

    name: str
    fn: Callable    # plain Python; tests compile it with numba.njit
    args: Callable  # args(rng) -> tuple of arguments
    wrt: tuple
    rtol: float = 1e-6


def uniform(lo, hi, *shape, dtype=np.float64):
    return lambda rng: rng.uniform(lo, hi, shape).astype(dtype)


def away_from_integers(*shape):
    """Values whose distance to the nearest integer and half-integer exceeds 0.05."""
    return lambda rng: (rng.integers(-3, 3, shape) + rng.uniform(0.05, 0.45, shape)
                        + 0.5 * rng.integers(0, 2, shape))


def array_case(name, fn, *draws, rtol=1e-6):
    """A case whose arguments are all drawn and all differentiated."""
    return NumpyRuleCase(name, fn, lambda rng: tuple(d(rng) for d in draws),
                         tuple(range(len(draws))), rtol)


def with_zeros(*positions):
    def draw(rng):
        x = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
        for p in positions:
            x.flat[p] = 0.0
        return x
    return draw


def quotient_pair(x_shape, y_shape=()):
    """(x, y) with y of either sign, |y| in [0.5, 2], and x / y at least 0.05 away from every
    integer and half-integer: inside one smooth piece of fmod, remainder and floor_divide."""
    def draw(rng):
        y = rng.uniform(0.5, 2.0, y_shape) * rng.choice([-1.0, 1.0], y_shape)
        q = away_from_integers(*np.broadcast_shapes(x_shape, y_shape))(rng)
        x = q * y
        return tuple(float(v) if np.ndim(v) == 0 else v for v in (x, y))
    return draw


VEC = uniform(-2.0, 2.0, 5)
MAT = uniform(-2.0, 2.0, 3, 4)
POS = uniform(0.3, 3.0, 3, 4)
UNIT = uniform(-0.9, 0.9, 3, 4)
NONZERO = with_zeros()  # |x| in [0.5, 1.5], either sign
ROW = uniform(-2.0, 2.0, 4)  # broadcasts against MAT


def scalar(lo, hi):
    return lambda rng: float(rng.uniform(lo, hi))

