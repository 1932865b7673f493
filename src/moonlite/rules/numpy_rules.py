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
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np

from ..ir import ops
from ..ir.types import ArrayType, NoneType, float64, int64
from . import Attribute, Method, RuleNotApplicable, defjvp, defpartials, defrule, defzero
from .custom import nondifferentiable
from .scalar import constant_natural_exponent
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
defpartials(np.hypot,
            lambda b, x, y: b.div(x, _np(b, np.hypot, x, y)),
            lambda b, x, y: b.div(y, _np(b, np.hypot, x, y)))
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
        _positional_only(kwargs, primals, 2)
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
        _positional_only(kwargs, primals, 2)
        (x, y), (dx, dy) = primals, tangents
        return _where(b, b.binary(keep_first, x, y), _or_zeros(b, dx, x), _or_zeros(b, dy, y))

    return rule


defrule(np.maximum, _extremum_rule(ops.Ge))
defrule(np.minimum, _extremum_rule(ops.Le))


def _nan_ignoring_extremum_rule(keep_first: type) -> Callable:
    """np.fmax/np.fmin: as np.maximum/np.minimum, but a NaN loses: where y is NaN the result
    is x (and where only x is NaN, y)."""

    def rule(b, primals, tangents, kwargs):
        _positional_only(kwargs, primals, 2)
        (x, y), (dx, dy) = primals, tangents
        first = b.binary(ops.BitOr, b.binary(keep_first, x, y), b.binary(ops.Ne, y, y))
        return _where(b, first, _or_zeros(b, dx, x), _or_zeros(b, dy, y))

    return rule


defrule(np.fmax, _nan_ignoring_extremum_rule(ops.Ge))
defrule(np.fmin, _nan_ignoring_extremum_rule(ops.Le))


def _where_rule(b, primals, tangents, kwargs):
    _positional_only(kwargs, primals, 3)
    cond, x, y = primals
    _, dx, dy = tangents
    # Always np.where, even on scalars: the primal is then a 0-d array, and so is its tangent.
    return _np(b, np.where, cond, _or_zeros(b, dx, x), _or_zeros(b, dy, y))


defrule(np.where, _where_rule)


def _clip_rule(b, primals, tangents, kwargs):
    # np.clip(x, lo, hi) == np.minimum(np.maximum(x, lo), hi); either bound may be None.
    _positional_only(kwargs, primals, 3)
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

# np.floor/ceil/trunc: in scalar.py. Boolean results (np.isnan, np.signbit, comparisons) and
# integer ones (np.argmax, np.argsort) carry no tangent and need no rule.
for _flat in (np.sign, np.round, np.around, np.rint, np.floor_divide, np.spacing):
    defzero(_flat)

# Allocations take only the shape (and dtype) of their argument: a fresh array whose tangent is
# zero (the forward pass materialises a zero array for it, which later writes update).
for _alloc in (np.empty_like, np.zeros_like, np.ones_like, np.empty, np.zeros, np.ones):
    defzero(_alloc)


def _full_rule(b, primals, tangents, kwargs):
    """np.full(shape, v) / np.full_like(a, v): the tangent is filled with dv."""
    if tangents[0] is not None and primals[0].type.is_scalar:
        raise RuleNotApplicable("the shape argument carries no tangent")
    dv = tangents[1] if len(tangents) > 1 else None
    if dv is None:
        return None
    return b.call(np.full_like if _is_array(primals[0]) else np.full, [primals[0], dv], kwargs)


defrule(np.full, _full_rule)
defrule(np.full_like, _full_rule)


# --- linear functions: the same call on the tangent ----------------------------------------------

def _first_tangent(tangents):
    """The tangent of a function linear in its first argument, whose others carry none."""
    if any(t is not None for t in tangents[1:]):
        raise RuleNotApplicable("only the first argument (the array) may carry a tangent")
    return tangents[0]


def linear_call(fn) -> Callable:
    """Rule of a function linear in its first argument: `fn(dx, *other_args, **kwargs)`."""
    return lambda b, primals, tangents, kwargs: b.call(
        fn, [_first_tangent(tangents), *primals[1:]], kwargs)


def linear_method(name: str) -> Callable:
    """Rule of a method linear in its receiver: `dx.name(*args, **kwargs)`."""
    return lambda b, primals, tangents, kwargs: b.method_call(
        name, _first_tangent(tangents), list(primals[1:]), kwargs)


def linear_attribute(name: str) -> Callable:
    return lambda b, primals, tangents, kwargs: b.getattr(tangents[0], name)


for _fn in (np.sum, np.mean, np.transpose, np.copy, np.ravel, np.reshape, np.cumsum, np.trace,
            np.ascontiguousarray, np.diag, np.tril, np.triu, np.concatenate, np.stack, np.vstack,
            np.hstack, np.expand_dims, np.swapaxes, np.moveaxis):
    defrule(_fn, linear_call(_fn))
for _name in ("sum", "mean", "copy", "ravel", "reshape", "transpose", "cumsum"):
    defrule(Method(_name), linear_method(_name))
defrule(Attribute("T"), linear_attribute("T"))


# --- bilinear functions ----------------------------------------------------------------------

defjvp(np.dot, lambda b, x, y, dx: _np(b, np.dot, dx, y), lambda b, x, y, dy: _np(b, np.dot, x, dy))
defjvp(Method("dot"),
       lambda b, x, y, dx: b.method_call("dot", dx, [y]),
       lambda b, x, y, dy: b.method_call("dot", x, [dy]))
defjvp(np.outer,
       lambda b, x, y, dx: _np(b, np.outer, dx, y), lambda b, x, y, dy: _np(b, np.outer, x, dy))
# numba implements `@` for 1-D and 2-D float arrays only.
defjvp(ops.MatMul,
       lambda b, x, y, dx: b.binary(ops.MatMul, dx, y),
       lambda b, x, y, dy: b.binary(ops.MatMul, x, dy))


# --- reductions that are not linear --------------------------------------------------------------

@numba.njit(cache=False, error_model="numpy")
def prod_tangent(x, dx):
    """sum_i dx_i prod_{j != i} x_j, by suffix products and a running prefix product: no
    division, so exact zeros in x are handled."""
    xs, ds = np.ravel(x), np.ravel(dx)
    n = xs.size
    suffix = np.empty(n + 1)
    suffix[n] = 1.0
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] * xs[i]
    prefix, total = 1.0, 0.0
    for i in range(n):
        total += ds[i] * prefix * suffix[i + 1]
        prefix *= xs[i]
    return total


@numba.njit(cache=False, error_model="numpy")
def argmax_tangent(x, dx):
    """The tangent of x's (first) largest element, both read in C order."""
    return np.ravel(dx)[np.argmax(x)]


@numba.njit(cache=False, error_model="numpy")
def argmin_tangent(x, dx):
    return np.ravel(dx)[np.argmin(x)]


def _whole_array(helper) -> Callable:
    """Rule of a reduction over the whole array (no axis: numba supports none for these)."""

    def rule(b, primals, tangents, kwargs):
        _positional_only(kwargs, primals, 1)
        if not _is_array(primals[0]):
            raise RuleNotApplicable("the rule reduces arrays only")
        return b.call(helper, [primals[0], tangents[0]])

    return rule


for _key, _helper in [(np.prod, prod_tangent), (Method("prod"), prod_tangent),
                      (np.max, argmax_tangent), (np.amax, argmax_tangent),
                      (Method("max"), argmax_tangent),
                      (np.min, argmin_tangent), (np.amin, argmin_tangent),
                      (Method("min"), argmin_tangent)]:
    defrule(_key, _whole_array(_helper))


def _norm_rule(b, primals, tangents, kwargs):
    # The default norm (2-norm of a vector, Frobenius of a matrix): <x, dx> / |x|.
    if len(primals) != 1 or kwargs:
        raise RuleNotApplicable("only the default norm, np.linalg.norm(x), is differentiated")
    x, dx = primals[0], tangents[0]
    return b.div(_np(b, np.sum, b.mul(x, dx)), _np(b, np.linalg.norm, x))


defrule(np.linalg.norm, _norm_rule)


def _positional_only(kwargs, primals, arity: int) -> None:
    if kwargs:
        raise RuleNotApplicable(f"keyword arguments {sorted(kwargs)} are not supported by this "
                                "rule")
    if len(primals) != arity:
        raise RuleNotApplicable(f"the rule expects {arity} argument(s), got {len(primals)}")


# --- random numbers: constants as far as derivatives go -------------------------------------

for _name in ("random", "rand", "randn", "normal", "uniform", "standard_normal", "exponential",
              "standard_exponential", "gamma", "beta", "lognormal", "laplace", "logistic",
              "gumbel", "standard_cauchy", "triangular", "chisquare", "weibull", "rayleigh",
              "pareto"):
    nondifferentiable(getattr(np.random, _name))


@numba.njit(cache=False, error_model="numpy")
def _seeded_normal(mean):
    np.random.seed(0)  # the same numbers at every evaluation, for finite differences
    return np.random.normal(mean, 1.0, (3, 4))


# --- test cases --------------------------------------------------------------------------------

@dataclass(frozen=True)
class NumpyRuleCase:
    """A kernel exercising one primitive, example arguments inside its domain, and which of them
    are differentiated (indices of float scalar/array arguments)."""

    name: str
    fn: Callable    # plain Python; tests compile it with numba.njit
    args: Callable  # args(rng) -> tuple of arguments
    wrt: tuple
    rtol: float = 1e-6


def _uniform(lo, hi, *shape, dtype=np.float64):
    return lambda rng: rng.uniform(lo, hi, shape).astype(dtype)


def _away_from_integers(*shape):
    """Values whose distance to the nearest integer and half-integer exceeds 0.05."""
    return lambda rng: (rng.integers(-3, 3, shape) + rng.uniform(0.05, 0.45, shape)
                        + 0.5 * rng.integers(0, 2, shape))


def _array_case(name, fn, *draws, rtol=1e-6):
    """A case whose arguments are all drawn and all differentiated."""
    return NumpyRuleCase(name, fn, lambda rng: tuple(d(rng) for d in draws),
                         tuple(range(len(draws))), rtol)


def _with_zeros(*positions):
    def draw(rng):
        x = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
        for p in positions:
            x.flat[p] = 0.0
        return x
    return draw


def _quotient_pair(x_shape, y_shape=()):
    """(x, y) with y of either sign, |y| in [0.5, 2], and x / y at least 0.05 away from every
    integer and half-integer: inside one smooth piece of fmod, remainder and floor_divide."""
    def draw(rng):
        y = rng.uniform(0.5, 2.0, y_shape) * rng.choice([-1.0, 1.0], y_shape)
        q = _away_from_integers(*np.broadcast_shapes(x_shape, y_shape))(rng)
        x = q * y
        return tuple(float(v) if np.ndim(v) == 0 else v for v in (x, y))
    return draw


_VEC = _uniform(-2.0, 2.0, 5)
_MAT = _uniform(-2.0, 2.0, 3, 4)
_POS = _uniform(0.3, 3.0, 3, 4)
_UNIT = _uniform(-0.9, 0.9, 3, 4)
_NONZERO = _with_zeros()  # |x| in [0.5, 1.5], either sign
_ROW = _uniform(-2.0, 2.0, 4)  # broadcasts against _MAT


def _scalar(lo, hi):
    return lambda rng: float(rng.uniform(lo, hi))


_E = _array_case
NUMPY_RULE_CASES = [
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
    # log of a negative y is NaN, which fmax/fmin pass over (a NaN argument would defeat the
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
    # reductions
    _E("sum", lambda x: np.sum(x), _MAT),
    _E("sum_axis", lambda x: np.sum(x, axis=0), _MAT),
    _E("sum_axis_positional", lambda x: np.sum(x, 1), _MAT),
    _E("mean", lambda x: np.mean(x), _MAT),
    _E("prod", lambda x: np.prod(x), _uniform(0.5, 1.5, 3, 4)),
    NumpyRuleCase("prod_one_zero", lambda x: np.prod(x), lambda rng: (_with_zeros(5)(rng),),
                  (0,)),
    NumpyRuleCase("prod_two_zeros", lambda x: np.prod(x) + np.sum(x),
                  lambda rng: (_with_zeros(2, 9)(rng),), (0,)),
    _E("max", lambda x: np.max(x), _MAT),
    _E("min", lambda x: np.min(x), _MAT),
    _E("amax", lambda x: np.amax(x), _MAT),
    _E("amin", lambda x: np.amin(x), _MAT),
    _E("max_of_transpose", lambda x: np.max(x.T), _MAT),
    _E("cumsum", lambda x: np.cumsum(x), _MAT),
    _E("cumsum_axis", lambda x: np.cumsum(x, axis=1), _MAT),
    _E("cumsum_axis_0_of_3d", lambda x: np.cumsum(x, axis=0), _uniform(-2.0, 2.0, 3, 2, 4)),
    _E("cumsum_negative_axis", lambda x: np.cumsum(x, axis=-1), _MAT),
    _E("trace", lambda x: np.trace(x), _uniform(-2.0, 2.0, 4, 4)),
    # joins
    _E("concatenate", lambda x, y: np.concatenate((x, y)) * 2.0, _VEC, _uniform(-2.0, 2.0, 3)),
    _E("concatenate_axis_1", lambda x, y: np.concatenate((x, y), axis=1) ** 2, _MAT,
       _uniform(-2.0, 2.0, 3, 2)),
    _E("concatenate_three", lambda x, y: np.concatenate((x, y, x * y)), _VEC, _VEC),
    _E("stack", lambda x, y: np.stack((x, y)) ** 2, _VEC, _VEC),
    _E("stack_axis_1", lambda x, y: np.stack((x, y), axis=1) ** 2, _VEC, _VEC),
    _E("vstack", lambda x, y: np.vstack((x, y)) ** 2, _VEC, _VEC),
    _E("hstack_matrices", lambda x, y: np.hstack((x, y)) ** 2, _MAT, _MAT),
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
    _E("diag_of_matrix", lambda x: np.diag(x), _MAT),
    _E("diag_of_vector", lambda x: np.diag(x), _VEC),
    _E("diag_offset", lambda x: np.diag(x, 1) * 2.0, _uniform(-2.0, 2.0, 4, 4)),
    _E("tril", lambda x: np.tril(x), _MAT),
    _E("tril_offset", lambda x: np.tril(x, -1), _uniform(-2.0, 2.0, 4, 4)),
    _E("triu", lambda x: np.triu(x, 1), _MAT),
    _E("norm_vector", lambda x: np.linalg.norm(x), _VEC),
    _E("norm_matrix", lambda x: np.linalg.norm(x), _MAT),
    # linear reshaping and copying
    _E("transpose", lambda x: np.transpose(x), _MAT),
    _E("transpose_axes", lambda x: np.transpose(x, (1, 0)), _MAT),
    _E("copy", lambda x: np.copy(x), _MAT),
    _E("ascontiguousarray", lambda x: np.ascontiguousarray(x.T) * 2.0, _MAT),
    _E("ravel", lambda x: np.ravel(x), _MAT),
    _E("reshape", lambda x: np.reshape(x, (4, 3)), _MAT),
    # bilinear
    _E("dot_vectors", lambda x, y: np.dot(x, y), _VEC, _VEC),
    _E("dot_matrix_vector", lambda a, x: np.dot(a, x), _MAT, _uniform(-2.0, 2.0, 4)),
    _E("dot_matrices", lambda a, c: np.dot(a, c), _MAT, _uniform(-2.0, 2.0, 4, 2)),
    _E("outer", lambda x, y: np.outer(x, y), _VEC, _uniform(-2.0, 2.0, 3)),
    _E("matmul", lambda a, c: a @ c, _MAT, _uniform(-2.0, 2.0, 4, 2)),
    _E("matmul_vector", lambda a, x: a @ x, _MAT, _uniform(-2.0, 2.0, 4)),
    _E("matmul_vectors", lambda x, y: x @ y, _VEC, _VEC),
    # methods and attributes
    _E("method_sum", lambda x: x.sum(), _MAT),
    _E("method_sum_axis", lambda x: x.sum(axis=1), _MAT),
    _E("method_mean", lambda x: x.mean(), _MAT),
    _E("method_prod", lambda x: x.prod(), _uniform(0.5, 1.5, 3, 4)),
    _E("method_max", lambda x: x.max(), _MAT),
    _E("method_min", lambda x: x.min(), _MAT),
    _E("method_copy", lambda x: x.copy(), _MAT),
    _E("method_ravel", lambda x: x.ravel(), _MAT),
    _E("method_reshape", lambda x: x.reshape(4, 3), _MAT),
    _E("method_reshape_tuple", lambda x: x.reshape((2, 6)), _MAT),
    _E("method_transpose", lambda x: x.transpose(), _MAT),
    _E("method_dot", lambda a, c: a.dot(c), _MAT, _uniform(-2.0, 2.0, 4, 2)),
    _E("method_cumsum", lambda x: x.cumsum(), _MAT),
    _E("attribute_T", lambda x: x.T, _MAT),
    # a composite, so that the rules meet each other
    _E("composite", lambda x, w: np.sum(np.tanh(w @ x) ** 2) + np.max(np.abs(x)),
       _uniform(-2.0, 2.0, 4), _MAT),
]
