"""Forward rules for numpy functions, array methods and `@`, on arrays and scalars alike.

A rule here emits numpy calls only (`np.cos`, never `math.cos`), so the one rule serves a float64
scalar, a float32 matrix and a broadcast of both: numba types each emitted call for the operands
it gets. Constants take the element type of the value they combine with (`_const`), so a float32
array's tangent stays float32. A choice between tangents is `select` when every operand is a
scalar and `np.where` otherwise (numba's `np.where` on scalars returns a 0-d array).

`scalar.py` maps numpy's ufuncs onto the `math` rules, which emit `math.*` calls and fail to type
on arrays; this module is imported after it and re-registers those keys.

`NUMPY_RULE_CASES` at the bottom lists, for every primitive here, a kernel and example arguments
inside its domain; `tests/ad/test_forward_numpy.py` checks each against central finite
differences.
"""

from __future__ import annotations

import math
from typing import Callable

from .. import _numba as nb
import numpy as np

from ..ir import ops
from ..ir.types import ArrayType, NoneType, float64, int64
from .define import (defjvp, defpartials, defrule, defzero, no_adjoint,
               positional_only)
from .custom import nondifferentiable
from ..ir.traits import ELEMENTWISE
from .registry import ANY_KEYWORD, register
from .cases import (MAT as _MAT, NONZERO as _NONZERO, POS as _POS, ROW as _ROW, UNIT as _UNIT,
                    VEC as _VEC, NumpyRuleCase, array_case as _array_case,
                    away_from_integers as _away_from_integers, quotient_pair as _quotient_pair,
                    scalar as _scalar, uniform as _uniform, with_zeros as _with_zeros)
from .scalar import constant_natural_exponent, over_hypot
from .strong_zeros import strong_product

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


# --- small builders ------------------------------------------------------------------------------

def _np(b, fn, *args):
    return b.call(fn, list(args))


def _is_array(v) -> bool:
    return isinstance(v.type, ArrayType)


def _const(b, value, like):
    """A scalar constant in the element type of `like` (a scalar or an array).

    numba widens `float32 array * 2.0` to float64, so an array's constants take its dtype. A
    float32 constant is made by a cast: numba fuses array expressions into a Python AST, which
    cannot hold a `np.float32` literal (TypeError "invalid type in Constant")."""
    t = like.type.dtype if _is_array(like) else like.type
    if t.is_float and t.bits == 32 and _is_array(like):
        return b.cast(b.const(float(value)), t)
    if t.is_float:
        return b.const(float(value), t)
    if t.is_integer:
        return b.const(int(value), t)
    return b.const(float(value))


def _zeros(b, like):
    """A zero tangent shaped like `like`: an array of zeros for an array, a scalar otherwise."""
    return _np(b, np.zeros_like, like) if _is_array(like) else _const(b, 0, like)


def _or_zeros(b, dx, like):
    return dx if dx is not None else _zeros(b, like)


def _where(b, cond, if_true, if_false):
    """Elementwise choice: `select` on scalars, `np.where` as soon as one operand is an array."""
    if any(_is_array(v) for v in (cond, if_true, if_false)):
        return _np(b, np.where, cond, if_true, if_false)
    floats = [t for t in (if_true.type, if_false.type) if t.is_float]
    common = max(floats, key=lambda t: t.bits) if floats else float64
    return b.select(cond, b.cast(if_true, common), b.cast(if_false, common))


def _square(b, x):
    return b.mul(x, x)


def _one_minus_square(b, x):
    return b.sub(_const(b, 1, x), _square(b, x))


# --- elementwise functions: their partial derivatives ------------------------------------------

def _one(b, x):
    return _const(b, 1, x)


def _reciprocal(b, x):
    return b.div(_one(b, x), x)


defpartials(np.sin, lambda b, x: _np(b, np.cos, x), bounded=True)
defpartials(np.cos, lambda b, x: b.neg(_np(b, np.sin, x)), bounded=True)
defpartials(np.tan, lambda b, x: _reciprocal(b, _square(b, _np(b, np.cos, x))))
defpartials(np.exp, lambda b, x: _np(b, np.exp, x))
defpartials(np.expm1, lambda b, x: _np(b, np.exp, x))
defpartials(np.exp2, lambda b, x: b.mul(_np(b, np.exp2, x), _const(b, _LN2, x)))
defpartials(np.log, lambda b, x: _reciprocal(b, x))
defpartials(np.log1p, lambda b, x: _reciprocal(b, b.add(x, _one(b, x))))
defpartials(np.log2, lambda b, x: _reciprocal(b, b.mul(x, _const(b, _LN2, x))))
defpartials(np.log10, lambda b, x: _reciprocal(b, b.mul(x, _const(b, _LN10, x))))
defpartials(np.sqrt, lambda b, x: _reciprocal(b, b.mul(_const(b, 2, x), _np(b, np.sqrt, x))))
defpartials(np.sinh, lambda b, x: _np(b, np.cosh, x))
defpartials(np.cosh, lambda b, x: _np(b, np.sinh, x))
defpartials(np.tanh, lambda b, x: _one_minus_square(b, _np(b, np.tanh, x)), bounded=True)
defpartials(np.arcsin, lambda b, x: _reciprocal(b, _np(b, np.sqrt, _one_minus_square(b, x))))
defpartials(np.arccos,
            lambda b, x: b.neg(_reciprocal(b, _np(b, np.sqrt, _one_minus_square(b, x)))))
defpartials(np.arctan, lambda b, x: _reciprocal(b, b.add(_one(b, x), _square(b, x))), bounded=True)
# arctan2(y, x): d = (x dy - y dx) / (x^2 + y^2)
defpartials(np.arctan2,
            lambda b, y, x: b.div(x, b.add(_square(b, x), _square(b, y))),
            lambda b, y, x: b.neg(b.div(y, b.add(_square(b, x), _square(b, y)))))


def _over_hypot(b, v, x, y):
    """v / np.hypot(x, y), 0 where x and y are both 0 (scalar.over_hypot, entry by entry for
    arrays)."""
    if not (_is_array(x) or _is_array(y)):
        return over_hypot(b, np.hypot, v, x, y)
    h = _np(b, np.hypot, x, y)
    zero = b.binary(ops.Eq, h, _const(b, 0, h))
    return b.div(v, _np(b, np.where, zero, _const(b, 1, h), h))


defpartials(np.hypot, lambda b, x, y: _over_hypot(b, x, x, y),
            lambda b, x, y: _over_hypot(b, y, x, y))
defpartials(np.square, lambda b, x: b.mul(_const(b, 2, x), x), bounded=True)


# The rest of numba's float ufuncs (issue #6); np.sinc is a function, not a ufunc (reverse mode
# lists it in reverse._ELEMENTWISE_FUNCTIONS).
defpartials(np.arcsinh,
            lambda b, x: _reciprocal(b, _np(b, np.sqrt, b.add(_square(b, x), _one(b, x)))), bounded=True)
defpartials(np.arccosh,
            lambda b, x: _reciprocal(b, _np(b, np.sqrt, b.sub(_square(b, x), _one(b, x)))))
defpartials(np.arctanh, lambda b, x: _reciprocal(b, _one_minus_square(b, x)))
defpartials(np.cbrt,
            lambda b, x: _reciprocal(b, b.mul(_const(b, 3, x), _square(b, _np(b, np.cbrt, x)))))
defpartials(np.reciprocal, lambda b, x: b.neg(_reciprocal(b, _square(b, x))))
defjvp(np.negative, lambda b, x, dx: b.neg(dx))
defjvp(np.positive, lambda b, x, dx: dx)
for _fn, _factor in [(np.deg2rad, math.pi / 180.0), (np.radians, math.pi / 180.0),
                     (np.rad2deg, 180.0 / math.pi), (np.degrees, 180.0 / math.pi)]:
    defpartials(_fn, lambda b, x, _factor=_factor: _const(b, _factor, x), bounded=True)
# logaddexp(x, y) = log(e^x + e^y): d/dx = e^(x - logaddexp(x, y)), and so for y (base 2 alike).
defpartials(np.logaddexp,
            lambda b, x, y: _np(b, np.exp, b.sub(x, _np(b, np.logaddexp, x, y))),
            lambda b, x, y: _np(b, np.exp, b.sub(y, _np(b, np.logaddexp, x, y))), bounded=True)
defpartials(np.logaddexp2,
            lambda b, x, y: _np(b, np.exp2, b.sub(x, _np(b, np.logaddexp2, x, y))),
            lambda b, x, y: _np(b, np.exp2, b.sub(y, _np(b, np.logaddexp2, x, y))), bounded=True)
# The arithmetic operators called as functions (np.divide is np.true_divide).
defjvp(np.add, lambda b, x, y, dx: dx, lambda b, x, y, dy: dy)
defjvp(np.subtract, lambda b, x, y, dx: dx, lambda b, x, y, dy: b.neg(dy))
defpartials(np.multiply, lambda b, x, y: y, lambda b, x, y: x, bounded=True)
defpartials(np.divide,
            lambda b, x, y: _reciprocal(b, y),
            lambda b, x, y: b.neg(b.div(x, _square(b, y))))
# fmod(x, y) = x - trunc(x / y) y and remainder(x, y) = x - floor(x / y) y (np.mod is
# np.remainder): slope 1 in x and -trunc(x / y) (-floor(x / y)) in y, away from the jumps.
defpartials(np.fmod,
            lambda b, x, y: _one(b, x),
            lambda b, x, y: b.neg(_np(b, np.trunc, b.div(x, y))))
defpartials(np.remainder,
            lambda b, x, y: _one(b, x),
            lambda b, x, y: b.neg(_np(b, np.floor, b.div(x, y))))


def _first_argument_only(jvp: Callable) -> Callable:
    """Rule of a two-argument function whose second argument has a zero derivative (copysign's
    sign source, nextafter's direction, ldexp's integer exponent): `jvp(b, x, y, dx)`."""

    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 2)
        x, y = primals
        return None if tangents[0] is None else jvp(b, x, y, tangents[0])

    return rule


# copysign(x, y) = |x| sign(y): dx times the sign of x times the sign of y.
defrule(np.copysign, _first_argument_only(lambda b, x, y, dx: b.mul(
    dx, b.mul(_np(b, np.copysign, _const(b, 1, x), x), _np(b, np.copysign, _const(b, 1, x), y)))))
defrule(np.nextafter, _first_argument_only(lambda b, x, y, dx: dx))
defrule(np.ldexp, _first_argument_only(lambda b, x, i, dx: _np(b, np.ldexp, dx, i)))


def _float_power_dbase(b, x, y):
    # strong in y, as for np.power: x ** 0 is flat also at x = 0
    return strong_product(b, y, _np(b, np.float_power, x, b.sub(y, _const(b, 1, y))))


def _float_power_dexponent(b, x, y):
    # As for np.power: x**y log(x), taken as 0 where x == 0.
    slope = b.mul(_np(b, np.float_power, x, y), _np(b, np.log, x))
    return _where(b, b.binary(ops.Eq, x, _const(b, 0, x)), _const(b, 0, slope), slope)


defpartials(np.float_power, _float_power_dbase, _float_power_dexponent)


def _sinc_partial(b, x):
    # sinc(x) = sin(pi x) / (pi x): slope (cos(pi x) - sinc(x)) / x, and 0 at x == 0.
    slope = b.div(b.sub(_np(b, np.cos, b.mul(_const(b, math.pi, x), x)), _np(b, np.sinc, x)), x)
    return _where(b, b.binary(ops.Eq, x, _const(b, 0, x)), _const(b, 0, slope), slope)


defpartials(np.sinc, _sinc_partial, bounded=True)


def _abs_partial(b, x):
    # The one-sided derivative from the right at 0, as for the scalar abs.
    return _where(b, b.binary(ops.Lt, x, _const(b, 0, x)), _const(b, -1, x), _one(b, x))


defpartials(np.abs, _abs_partial, bounded=True)  # np.absolute is the same object
defpartials(np.fabs, _abs_partial, bounded=True)


def _power_dbase(b, x, y):
    k = ops.constant_value(y)
    if isinstance(k, (int, float)) and not isinstance(k, bool):
        # A constant exponent (the common `x ** 2`): fold y - 1 now, so that numba keeps its
        # fast integer-power path, and `x ** 2` costs one multiplication.
        if k == 2:
            return b.mul(_const(b, 2, x), x)
        if k == 1:
            return _one(b, x)
        if k == 0:
            return None  # x ** 0 is 1 everywhere, also at x = 0
        return b.mul(_const(b, k, x), b.binary(ops.Pow, x, _exponent(b, k - 1, y)))
    # y x ** (y - 1), exactly 0 where y == 0 (x ** 0 is flat, also at x = 0 where 0 ** -1 = inf)
    y_minus_1 = b.sub(y, _const(b, 1, y))
    if y_minus_1.type.is_integer:  # 0.0 ** -1 raises in numba whatever the error model
        y_minus_1 = b.cast(y_minus_1, float64)
    return strong_product(b, y, _np(b, np.power, x, y_minus_1))


def _exponent(b, k, like):
    """A constant exponent: an int where numba's integer power cannot divide by zero (k >= 0,
    the fast path for x ** 2), else a float (numba raises ZeroDivisionError for 0.0 ** -1 even
    under the numpy error model; 0.0 ** -1.0 is inf)."""
    if float(k).is_integer() and k >= 0:
        return b.const(int(k), like.type if like.type.is_integer else int64)
    return b.const(float(k), float64)


def _power_dexponent(b, x, y):
    # x**y log(x), taken as 0 where x == 0 (flat in y there for y > 0; log would give 0 * -inf).
    slope = b.mul(_np(b, np.power, x, y), _np(b, np.log, x))
    return _where(b, b.binary(ops.Eq, x, _const(b, 0, x)), _const(b, 0, slope), slope)


defpartials(np.power, _power_dbase, _power_dexponent, bounded=constant_natural_exponent)
# `x ** y` on arrays as well as scalars (scalar.py's rule emits math.log, scalars only).
defpartials(ops.Pow, _power_dbase, _power_dexponent, bounded=constant_natural_exponent)


def _extremum_rule(keep_first: type) -> Callable:
    """np.maximum/np.minimum: the tangent of the side chosen; ties go to the first argument."""

    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 2)
        (x, y), (dx, dy) = primals, tangents
        return _where(b, b.binary(keep_first, x, y), _or_zeros(b, dx, x), _or_zeros(b, dy, y))

    return rule


defrule(np.maximum, _extremum_rule(ops.Ge))
defrule(np.minimum, _extremum_rule(ops.Le))


def _nan_ignoring_extremum_rule(keep_first: type) -> Callable:
    """np.fmax/np.fmin: as np.maximum/np.minimum, but a NaN loses: where y is NaN the result
    is x (and where only x is NaN, y)."""

    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 2)
        (x, y), (dx, dy) = primals, tangents
        first = b.binary(ops.BitOr, b.binary(keep_first, x, y), b.binary(ops.Ne, y, y))
        return _where(b, first, _or_zeros(b, dx, x), _or_zeros(b, dy, y))

    return rule


defrule(np.fmax, _nan_ignoring_extremum_rule(ops.Ge))
defrule(np.fmin, _nan_ignoring_extremum_rule(ops.Le))


def _where_rule(b, primals, tangents, kwargs):
    positional_only(kwargs, primals, 3)
    cond, x, y = primals
    _, dx, dy = tangents
    # Always np.where, even on scalars: the primal is then a 0-d array, and so is its tangent.
    return _np(b, np.where, cond, _or_zeros(b, dx, x), _or_zeros(b, dy, y))


defrule(np.where, _where_rule)


def _clip_rule(b, primals, tangents, kwargs):
    # np.clip(x, lo, hi) == np.minimum(np.maximum(x, lo), hi); either bound may be None.
    positional_only(kwargs, primals, 3)
    x, lo, hi = primals
    dx, dlo, dhi = tangents
    tangent, low = _or_zeros(b, dx, x), x
    if not isinstance(lo.type, NoneType):
        tangent = _where(b, b.binary(ops.Lt, x, lo), _or_zeros(b, dlo, lo), tangent)
        low = _np(b, np.maximum, x, lo)
    if not isinstance(hi.type, NoneType):
        tangent = _where(b, b.binary(ops.Gt, low, hi), _or_zeros(b, dhi, hi), tangent)
    return tangent


defrule(np.clip, _clip_rule)
# numpy functions, not ufuncs, that are elementwise all the same
for _fn in (np.where, np.clip, np.sinc):
    register(_fn, traits=ELEMENTWISE)

# np.floor/ceil/trunc: in scalar.py. Boolean results (np.isnan, np.signbit, comparisons) and
# integer ones (np.argmax, np.argsort) carry no tangent and need no rule.
for _flat in (np.sign, np.round, np.around, np.rint, np.floor_divide, np.spacing):
    defzero(_flat)
# nothing flows back, whatever their keywords say (decimals=, dtype=)
for _flat in (np.sign, np.round, np.around, np.rint):
    register(_flat, adjoint=no_adjoint, keywords=ANY_KEYWORD)

# --- random numbers: constants as far as derivatives go -------------------------------------

for _name in ("random", "rand", "randn", "normal", "uniform", "standard_normal", "exponential",
              "standard_exponential", "gamma", "beta", "lognormal", "laplace", "logistic",
              "gumbel", "standard_cauchy", "triangular", "chisquare", "weibull", "rayleigh",
              "pareto"):
    nondifferentiable(getattr(np.random, _name))


@nb.njit(cache=False, error_model="numpy")
def _seeded_normal(mean):
    np.random.seed(0)  # the same numbers at every evaluation, for finite differences
    return np.random.normal(mean, 1.0, (3, 4))


# --- test cases --------------------------------------------------------------------------------
# (their kernels and draws: `cases.py`; the reductions, shapes and products keep theirs in their
# own files)

_E = _array_case
NUMPY_RULE_CASES = [  # elementwise functions, index arrays, masks, random numbers
    # elementwise, on arrays
    _E("sin", lambda x: np.sin(x), _MAT),
    _E("cos", lambda x: np.cos(x), _MAT),
    _E("tan", lambda x: np.tan(x), _uniform(-1.2, 1.2, 3, 4)),
    _E("exp", lambda x: np.exp(x), _MAT),
    _E("expm1", lambda x: np.expm1(x), _MAT),
    _E("exp2", lambda x: np.exp2(x), _MAT),
    _E("log", lambda x: np.log(x), _POS),
    _E("log1p", lambda x: np.log1p(x), _uniform(-0.7, 3.0, 3, 4)),
    _E("log2", lambda x: np.log2(x), _POS),
    _E("log10", lambda x: np.log10(x), _POS),
    _E("sqrt", lambda x: np.sqrt(x), _POS),
    _E("sinh", lambda x: np.sinh(x), _MAT),
    _E("cosh", lambda x: np.cosh(x), _MAT),
    _E("tanh", lambda x: np.tanh(x), _MAT),
    _E("arcsin", lambda x: np.arcsin(x), _UNIT),
    _E("arccos", lambda x: np.arccos(x), _UNIT),
    _E("arctan", lambda x: np.arctan(x), _MAT),
    _E("arctan2", lambda y, x: np.arctan2(y, x), _MAT, _MAT),
    _E("arctan2_scalar_x", lambda y, x: np.arctan2(y, x), _MAT, _scalar(-2.0, -0.5)),
    _E("hypot", lambda x, y: np.hypot(x, y), _MAT, _MAT),
    _E("abs", lambda x: np.abs(x), _away_from_integers(3, 4)),
    _E("fabs", lambda x: np.fabs(x), _away_from_integers(3, 4)),
    _E("power", lambda x, y: np.power(x, y), _POS, _MAT),
    _E("power_scalar_exponent", lambda x, y: np.power(x, y), _POS, _scalar(-1.5, 2.5)),
    NumpyRuleCase("power_int_exponent", lambda x, n: np.power(x, n),
                  lambda rng: (_MAT(rng), 3), (0,)),
    _E("pow_operator", lambda x, y: x ** y, _POS, _MAT),
    _E("pow_operator_int", lambda x: x ** 3, _MAT),
    _E("square", lambda x: np.square(x), _MAT),
    _E("maximum", lambda x, y: np.maximum(x, y), _MAT, _MAT),
    _E("minimum", lambda x, y: np.minimum(x, y), _MAT, _MAT),
    _E("maximum_scalar", lambda x: np.maximum(x, 0.25), _MAT),
    _E("minimum_broadcast", lambda x, y: np.minimum(x, y), _MAT, _uniform(-2.0, 2.0, 4)),
    NumpyRuleCase("where", lambda c, x, y: np.where(c, x, y),
                  lambda rng: (rng.uniform(size=(3, 4)) > 0.5, _MAT(rng), _MAT(rng)), (1, 2)),
    _E("where_computed", lambda x, y: np.where(x > 0.0, x * x, np.sin(y)), _MAT, _MAT),
    _E("where_scalar_branch", lambda x, s: np.where(x > 0.0, x, s), _MAT, _scalar(-1.0, 1.0)),
    _E("where_broadcast", lambda x, y: np.where(y > 0.0, x, y), _MAT, _uniform(-2.0, 2.0, 4)),
    _E("clip", lambda x: np.clip(x, -0.5, 0.7), _MAT),
    _E("clip_array_bounds", lambda x, lo, hi: np.clip(x, lo, hi),
       _MAT, _uniform(-1.5, -0.2, 3, 4), _uniform(0.2, 1.5, 4)),
    _E("clip_upper_only", lambda x: np.clip(x, None, 0.7), _MAT),
    _E("floor", lambda x: x * np.floor(x), _away_from_integers(3, 4)),
    _E("ceil", lambda x: x * np.ceil(x), _away_from_integers(3, 4)),
    _E("trunc", lambda x: x * np.trunc(x), _away_from_integers(3, 4)),
    _E("sign", lambda x: x * np.sign(x), _away_from_integers(3, 4)),
    _E("round", lambda x: x * np.round(x), _away_from_integers(3, 4)),
    # elementwise, issue #6: the rest of numba's float ufuncs
    _E("arcsinh", lambda x: np.arcsinh(x), _MAT),
    _E("arccosh", lambda x: np.arccosh(x), _uniform(1.2, 3.0, 3, 4)),
    _E("arctanh", lambda x: np.arctanh(x), _UNIT),
    _E("cbrt", lambda x: np.cbrt(x), _NONZERO),
    _E("reciprocal", lambda x: np.reciprocal(x), _NONZERO),
    _E("negative", lambda x: np.negative(x), _MAT),
    _E("positive", lambda x: np.positive(x) * x, _MAT),
    _E("deg2rad", lambda x: np.deg2rad(x), _MAT),
    _E("radians", lambda x: np.radians(x), _MAT),
    _E("rad2deg", lambda x: np.rad2deg(x), _MAT),
    _E("degrees", lambda x: np.degrees(x), _MAT),
    _E("logaddexp", lambda x, y: np.logaddexp(x, y), _MAT, _MAT),
    _E("logaddexp_scalar", lambda x, y: np.logaddexp(x, y), _MAT, _scalar(-1.0, 1.0)),
    _E("logaddexp2", lambda x, y: np.logaddexp2(x, y), _MAT, _MAT),
    _E("logaddexp2_broadcast", lambda x, y: np.logaddexp2(x, y), _MAT, _ROW),
    _E("add", lambda x, y: np.add(x, y), _MAT, _MAT),
    _E("add_scalar", lambda x, s: np.add(x, s), _MAT, _scalar(-1.0, 1.0)),
    _E("add_scalar_to_constant", lambda s: np.add(np.arange(4.0), s), _scalar(-1.0, 1.0)),
    _E("subtract", lambda x, y: np.subtract(x, y), _MAT, _MAT),
    _E("subtract_broadcast", lambda x, y: np.subtract(y, x), _MAT, _ROW),
    _E("multiply", lambda x, y: np.multiply(x, y), _MAT, _MAT),
    _E("multiply_scalar", lambda s, x: np.multiply(s, x), _scalar(-1.0, 1.0), _MAT),
    _E("divide", lambda x, y: np.divide(x, y), _MAT, _NONZERO),
    _E("divide_scalar_numerator", lambda s, y: np.divide(s, y), _scalar(-1.0, 1.0), _NONZERO),
    _E("true_divide_broadcast", lambda x, y: np.true_divide(x, y), _MAT,
       _uniform(0.5, 2.0, 4)),
    _E("fmax", lambda x, y: np.fmax(x, y), _MAT, _MAT),
    _E("fmin", lambda x, y: np.fmin(x, y), _MAT, _MAT),
    _E("fmax_scalar", lambda x: np.fmax(x, 0.25), _MAT),
    _E("fmin_broadcast", lambda x, y: np.fmin(x, y), _MAT, _ROW),
    # finite differences)
    NumpyRuleCase("fmax_nan_loses", lambda x, y: np.fmax(x, np.log(y)) + np.fmin(np.log(y), x),
                  lambda rng: (_MAT(rng), _NONZERO(rng)), (0,)),
    _E("float_power", lambda x, y: np.float_power(x, y), _POS, _MAT),
    _E("float_power_scalar_exponent", lambda x, y: np.float_power(x, y), _POS,
       _scalar(-1.5, 2.5)),
    NumpyRuleCase("float_power_int_exponent", lambda x, n: np.float_power(x, n),
                  lambda rng: (_MAT(rng), 3), (0,)),
    _E("float_power_float32", lambda x: np.float_power(x, 1.5),
       _uniform(0.3, 3.0, 3, 4, dtype=np.float32), rtol=1e-3),
    _E("copysign", lambda x, y: np.copysign(x, y), _NONZERO, _NONZERO),
    _E("copysign_scalar_sign", lambda x: np.copysign(x, -1.0), _NONZERO),
    _E("copysign_broadcast_sign", lambda x, y: np.copysign(x, y) * y, _NONZERO,
       _uniform(0.5, 1.5, 4)),
    NumpyRuleCase("fmod", lambda x, y: np.fmod(x, y), _quotient_pair((3, 4), (3, 4)), (0, 1)),
    NumpyRuleCase("fmod_scalar_divisor", lambda x, y: np.fmod(x, y), _quotient_pair((3, 4)),
                  (0, 1)),
    NumpyRuleCase("remainder", lambda x, y: np.remainder(x, y), _quotient_pair((3, 4), (3, 4)),
                  (0, 1)),
    NumpyRuleCase("remainder_broadcast", lambda x, y: np.remainder(x, y),
                  _quotient_pair((3, 4), (4,)), (0, 1)),
    NumpyRuleCase("mod_scalar_divisor", lambda x, y: np.mod(x, y), _quotient_pair((3, 4)),
                  (0, 1)),
    NumpyRuleCase("floor_divide", lambda x, y: x * np.floor_divide(x, y) + y,
                  _quotient_pair((3, 4), (3, 4)), (0, 1)),
    _E("nextafter", lambda x, y: np.nextafter(x, y) * y, _MAT, _uniform(3.0, 4.0, 3, 4)),
    NumpyRuleCase("ldexp", lambda x, i: np.ldexp(x, i),
                  lambda rng: (_MAT(rng), rng.integers(-3, 4, (3, 4))), (0,)),
    _E("spacing", lambda x: x + 1e15 * np.spacing(x), _away_from_integers(3, 4)),
    _E("sinc", lambda x: np.sinc(x), _MAT),
    _E("sinc_at_zero", lambda x: np.sinc(x), _with_zeros(0, 7)),
    _E("rint", lambda x: x * np.rint(x), _away_from_integers(3, 4)),
    # boolean-valued functions carry no tangent
    _E("signbit", lambda x: np.where(np.signbit(x), -x, 2.0 * x), _NONZERO),
    _E("isnan_isfinite_isinf", lambda x: np.where(np.isnan(x) | np.isinf(x), 0.0, x)
       * np.isfinite(x), _MAT),
    _E("greater_as_function", lambda x, y: np.where(np.greater(x, y), x * y, y), _MAT, _MAT),
    _E("float32_new_ufuncs", lambda x: np.logaddexp(np.cbrt(x), np.deg2rad(x))
       * np.reciprocal(x) + np.sinc(x) + np.arcsinh(x),
       _uniform(0.3, 3.0, 3, 4, dtype=np.float32), rtol=1e-3),
    _E("float32_sin", lambda x: np.sin(x) * np.sqrt(x),
       _uniform(0.3, 3.0, 3, 4, dtype=np.float32), rtol=1e-3),
    # elementwise, on scalars (numpy's ufuncs on floats)
    _E("scalar_cos", lambda x: np.cos(x), _scalar(-2.0, 2.0)),
    _E("scalar_arcsin", lambda x: np.arcsin(x), _scalar(-0.9, 0.9)),
    _E("scalar_power", lambda x, y: np.power(x, y), _scalar(0.3, 3.0), _scalar(-1.5, 2.5)),
    _E("scalar_maximum", lambda x, y: np.maximum(x, y), _scalar(-1.0, 0.0), _scalar(0.1, 1.0)),
    _E("scalar_abs", lambda x: np.abs(x), _scalar(-2.0, -0.5)),
    _E("scalar_where", lambda x, y: np.where(x > y, x * y, y), _scalar(0.5, 1.0),
       _scalar(-1.0, 0.0)),
    _E("scalar_arcsinh", lambda x: np.arcsinh(x), _scalar(-2.0, 2.0)),
    _E("scalar_arccosh", lambda x: np.arccosh(x), _scalar(1.2, 3.0)),
    _E("scalar_arctanh", lambda x: np.arctanh(x), _scalar(-0.9, 0.9)),
    _E("scalar_cbrt", lambda x: np.cbrt(x), _scalar(-2.0, -0.5)),
    _E("scalar_reciprocal", lambda x: np.reciprocal(x), _scalar(0.5, 2.0)),
    _E("scalar_negative", lambda x: np.negative(x) * x, _scalar(-2.0, 2.0)),
    _E("scalar_rad2deg", lambda x: np.rad2deg(x), _scalar(-2.0, 2.0)),
    _E("scalar_logaddexp", lambda x, y: np.logaddexp(x, y), _scalar(-2.0, 2.0),
       _scalar(-2.0, 2.0)),
    _E("scalar_logaddexp2", lambda x, y: np.logaddexp2(x, y), _scalar(-2.0, 2.0),
       _scalar(-2.0, 2.0)),
    _E("scalar_divide", lambda x, y: np.divide(x, y), _scalar(-2.0, 2.0), _scalar(0.5, 2.0)),
    _E("scalar_fmin", lambda x, y: np.fmin(x, y), _scalar(-1.0, 0.0), _scalar(0.1, 1.0)),
    _E("scalar_float_power", lambda x, y: np.float_power(x, y), _scalar(0.3, 3.0),
       _scalar(-1.5, 2.5)),
    _E("scalar_copysign", lambda x, y: np.copysign(x, y), _scalar(0.5, 2.0),
       _scalar(-2.0, -0.5)),
    NumpyRuleCase("scalar_fmod", lambda x, y: np.fmod(x, y), _quotient_pair(()), (0, 1)),
    NumpyRuleCase("scalar_remainder", lambda x, y: np.remainder(x, y), _quotient_pair(()),
                  (0, 1)),
    _E("scalar_sinc", lambda x: np.sinc(x), _scalar(-2.0, 2.0)),
    _E("scalar_sign_functions", lambda x: x * np.sign(x) + np.rint(x) * np.signbit(x),
       _scalar(-2.4, -2.1)),
    # index arrays and masks copy; argsort, argmax and random numbers are constants
    _E("index_array_argsort", lambda x, w: x[np.argsort(x)] * w, _VEC, _VEC),
    NumpyRuleCase("index_array_repeats", lambda x, i: x[i] ** 2,
                  lambda rng: (_VEC(rng), np.array([0, 2, 2, 4, 0])), (0,)),
    _E("mask", lambda x: np.sum(x[x > 0.0] ** 2), _VEC),
    _E("argmax_picks", lambda x: x[np.argmax(x)] * np.sum(x), _VEC),
    _E("argmin_picks", lambda x: x[np.argmin(x)] * np.sum(x), _VEC),
    _E("argsort_weights", lambda x: np.sum(x[np.argsort(x)] * np.arange(5.0)), _VEC),
    _E("argsort_twice_ranks", lambda x: x * np.argsort(np.argsort(x)), _VEC),
    _E("random_normal", lambda x: x * _seeded_normal(0.5), _MAT),
    # a composite, so that the rules meet each other
    _E("composite", lambda x, w: np.sum(np.tanh(w @ x) ** 2) + np.max(np.abs(x)),
       _uniform(-2.0, 2.0, 4), _MAT),
]
