"""Special functions that derivative rules call and numba does not provide.

Rules emit calls of these njit functions into the differentiated IR, so they must compile for the
float widths the primal uses (numba specialises them per argument type).
"""

from __future__ import annotations

import math

from .. import _numba as nb

# Bernoulli-number coefficients of digamma's asymptotic series,
#   psi(x) ~ log(x) - 1/(2x) - sum_k B_2k / (2k x^2k),
# as B_2k / (2k) for k = 1..9. With x >= 6 the first omitted term, B_20 / (20 x^20), is below
# 1e-14, so the series is accurate to a few ulps of psi(6) ~ 1.7.
_ASYMPTOTIC = (1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0,
               -691.0 / 32760.0, 1.0 / 12.0, -3617.0 / 8160.0, 43867.0 / 14364.0)


@nb.njit(cache=False, error_model="numpy")
def digamma(x):
    """psi(x) = d/dx log|Gamma(x)|, for real x; nan at the poles (0, -1, -2, ...).

    Reflection psi(x) = psi(1 - x) - pi / tan(pi x) for x < 0, then the recurrence
    psi(x) = psi(x + 1) - 1/x up to x >= 6, then the asymptotic series."""
    result = 0.0
    if x <= 0.0:
        if x == math.floor(x):
            return math.nan
        # tan has period pi: reduce to the nearest integer first (an exact subtraction), so
        # neither a large |x| nor a pole close by costs bits.
        result = -math.pi / math.tan(math.pi * (x - math.floor(x + 0.5)))
        x = 1.0 - x
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    series = 0.0
    for k in range(len(_ASYMPTOTIC) - 1, -1, -1):  # Horner in 1/x^2
        series = (series + _ASYMPTOTIC[k]) * inv2
    return result + math.log(x) - 0.5 / x - series
