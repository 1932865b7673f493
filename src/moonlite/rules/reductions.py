"""np.var and np.std as custom rules (`custom.py`): whole-array reductions numba implements
without `axis`. Their JVPs and VJPs are a few lines of njit code each; the VJP keeps the input
and the result for the pullback."""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from .custom import custom_jvp, custom_vjp


@nb.njit(cache=False, error_model="numpy")
def var_jvp(primals, tangents):
    x, dx = primals[0], tangents[0]
    d = x - np.mean(x)
    return np.var(x), 2.0 * np.mean(d * dx)


@nb.njit(cache=False, error_model="numpy")
def var_fwd(x):
    return np.var(x), x


@nb.njit(cache=False, error_model="numpy")
def var_bwd(x, g):
    return (g * 2.0 * (x - np.mean(x)) / x.size,)


@nb.njit(cache=False, error_model="numpy")
def std_jvp(primals, tangents):
    x, dx = primals[0], tangents[0]
    out = np.std(x)
    return out, np.mean((x - np.mean(x)) * dx) / out


@nb.njit(cache=False, error_model="numpy")
def std_fwd(x):
    out = np.std(x)
    return out, (x, out)


@nb.njit(cache=False, error_model="numpy")
def std_bwd(residuals, g):
    x, out = residuals
    return (g * (x - np.mean(x)) / (x.size * out),)


custom_jvp(np.var, var_jvp)
custom_vjp(np.var, var_fwd, var_bwd)
custom_jvp(np.std, std_jvp)
custom_vjp(np.std, std_fwd, std_bwd)


def _matrix(rng):
    return rng.uniform(-2.0, 2.0, (3, 4))


def _case(name, fn, draw=_matrix):
    from .cases import NumpyRuleCase
    return NumpyRuleCase(name, fn, lambda rng: (draw(rng),), (0,))


REDUCTION_RULE_CASES = [
    _case("var", lambda x: np.var(x)),
    _case("std", lambda x: np.std(x)),
    _case("var_of_vector", lambda x: np.var(x) * np.sum(x), lambda rng: rng.uniform(-2, 2, 6)),
    _case("std_composite", lambda x: np.std(np.sin(x)) ** 2 + np.var(x.T)),
]
