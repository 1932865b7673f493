"""Forward rules for scalar arithmetic and `math` functions, and the cases that test them.

Each rule states the derivative only; the forward pass handles everything around it (which
operands carry tangents, zero tangents of constants, casting to the result's float width).
`RULE_CASES` at the bottom lists, for every primitive here, a kernel and points inside its domain
(positive numbers for `log`, |x| < 1 for `asin`); `tests/ad/test_forward_scalar.py` checks each
against central finite differences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..ir import ops
from ..ir.types import float64
from .define import (RuleNotApplicable, const_like, defjvp, deflinear, defpartials, defrule,
               defzero, square, zero_like)
from .special import digamma
from .strong_zeros import strong_product

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _call(b, fn, *args):
    return b.call(fn, list(args))


# --- operators -------------------------------------------------------------------------------

defjvp(ops.Add, lambda b, x, y, dx: dx, lambda b, x, y, dy: dy)
defjvp(ops.Sub, lambda b, x, y, dx: dx, lambda b, x, y, dy: b.neg(dy))
deflinear(ops.Neg, lambda b, dx: b.neg(dx))
deflinear(ops.Pos, lambda b, dx: dx)
defpartials(ops.Mul, lambda b, x, y: y, lambda b, x, y: x, bounded=True)
# d(x/y)/dy = -(x/y)/y, written -(x * (1/y)) * (1/y): one division for both partials (LLVM
# merges the two 1/y), where -(x/y)/y costs a second one (a division is 4-5x a product's
# throughput and dominates the derivative of kernels like a camera projection)
defpartials(ops.TrueDiv,
            lambda b, x, y: _reciprocal(b, y),
            lambda b, x, y: b.neg(b.mul(b.mul(x, _reciprocal(b, y)), _reciprocal(b, y))))


def checked_division_jvp(b, primals, tangents, kwargs):
    """The forward rule of the primal's own scalar `/` (`checked`: it raised ZeroDivisionError
    for a zero divisor, so 1/y is finite past it, barring overflow, as a product's partials
    are): plain products, where `ops.TrueDiv`'s registered rule multiplies strongly for the
    unchecked divisions of derived code and arrays. The zero guards were most of a camera
    projection's JVP. The forward pass picks it for checked scalar divisions."""
    (x, y), (dx, dy) = primals, tangents
    inverse = _reciprocal(b, y)
    terms = []
    if dx is not None:
        terms.append(b.mul(dx, inverse))
    if dy is not None:
        terms.append(b.neg(b.mul(dy, b.mul(b.mul(x, inverse), inverse))))
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else b.add(terms[0], terms[1])


def is_checked_division(op) -> bool:
    """The primal's own scalar `/`, which raised for a zero divisor."""
    return isinstance(op, ops.TrueDiv) and op.checked and op.result.type.is_scalar


defzero(ops.FloorDiv)
# x % y == x - y * floor(x / y) (Python's and numba's float modulo)
defpartials(ops.Mod,
            lambda b, x, y: const_like(b, 1, x),
            lambda b, x, y: b.neg(b.binary(ops.FloorDiv, x, y)))


def _pow_dbase(b, x, y):
    # y x ** (y - 1), exactly 0 where y == 0: x ** 0 is flat, also at x = 0 (0 ** -1 is inf)
    y_minus_1 = b.sub(y, const_like(b, 1, y))
    if y_minus_1.type.is_integer:  # numba raises for 0.0 ** -1 under any error model
        y_minus_1 = b.cast(y_minus_1, float64)
    return strong_product(b, y, b.binary(ops.Pow, x, y_minus_1))


def _pow_dexponent(b, x, y):
    # d(x**y)/dy = x**y * log(x); taken as 0 at x == 0, where x**y is flat in y (for y > 0)
    # and log(x) would give 0 * -inf = nan.
    slope = b.mul(b.binary(ops.Pow, x, y), _call(b, math.log, x))
    at_zero = b.binary(ops.Eq, x, zero_like(b, x))
    return b.select(at_zero, zero_like(b, slope), slope)


def constant_natural_exponent(primals) -> bool:
    """x ** k for a constant integer k >= 0: a polynomial, finite partials."""
    k = ops.constant_value(primals[1])
    return isinstance(k, (int, float)) and not isinstance(k, bool) and float(k).is_integer() \
        and k >= 0


# ops.Pow (`x ** y`, scalars and arrays alike) is numpy_rules.py's
defpartials(math.pow, _pow_dbase, _pow_dexponent, bounded=constant_natural_exponent)
defpartials(pow, _pow_dbase, _pow_dexponent,  # the builtin, with two arguments
            bounded=constant_natural_exponent)

# Cast float -> float: the tangent, which the pass casts to the result's type. Casts to int or
# bool produce no tangent, and casts from int produce a zero one: the pass handles both.
defrule(ops.Cast, lambda b, primals, tangents, kwargs: tangents[0])


def _select_rule(b, primals, tangents, kwargs):
    cond, if_true, if_false = primals
    _, dt, df = tangents
    return b.select(cond, dt if dt is not None else zero_like(b, if_true),
                    df if df is not None else zero_like(b, if_false))


defrule(ops.Select, _select_rule)

# --- math functions --------------------------------------------------------------------------

def _one(b, x):
    return const_like(b, 1, x)


def _reciprocal(b, x):
    return b.div(_one(b, x), x)


defpartials(math.sin, lambda b, x: _call(b, math.cos, x), bounded=True)
defpartials(math.cos, lambda b, x: b.neg(_call(b, math.sin, x)), bounded=True)
defpartials(math.tan, lambda b, x: _reciprocal(b, square(b, _call(b, math.cos, x))))
defpartials(math.exp, lambda b, x: _call(b, math.exp, x))
defpartials(math.expm1, lambda b, x: _call(b, math.exp, x))
defpartials(math.log, lambda b, x: _reciprocal(b, x))
defpartials(math.log1p, lambda b, x: _reciprocal(b, b.add(x, _one(b, x))))
defpartials(math.log2, lambda b, x: _reciprocal(b, b.mul(x, const_like(b, _LN2, x))))
defpartials(math.log10, lambda b, x: _reciprocal(b, b.mul(x, const_like(b, _LN10, x))))
defpartials(math.sqrt,
            lambda b, x: _reciprocal(b, b.mul(const_like(b, 2, x), _call(b, math.sqrt, x))))
defpartials(math.sinh, lambda b, x: _call(b, math.cosh, x))
defpartials(math.cosh, lambda b, x: _call(b, math.sinh, x))
defpartials(math.tanh, lambda b, x: b.sub(_one(b, x), square(b, _call(b, math.tanh, x))), bounded=True)


def _one_minus_square_root(b, x):
    return _call(b, math.sqrt, b.sub(const_like(b, 1, x), square(b, x)))


defpartials(math.asin, lambda b, x: _reciprocal(b, _one_minus_square_root(b, x)))
defpartials(math.acos, lambda b, x: b.neg(_reciprocal(b, _one_minus_square_root(b, x))))
defpartials(math.atan, lambda b, x: _reciprocal(b, b.add(_one(b, x), square(b, x))), bounded=True)
# atan2(y, x): d = (x dy - y dx) / (x^2 + y^2)
defpartials(math.atan2,
            lambda b, y, x: b.div(x, b.add(square(b, x), square(b, y))),
            lambda b, y, x: b.neg(b.div(y, b.add(square(b, x), square(b, y)))))
def over_hypot(b, hypot, v, x, y):
    """v / hypot(x, y) of numbers (`hypot`: math's or numpy's), 0 where x and y are both 0
    (a kink: the strong products give math.sqrt(x * x + y * y) 0 there; 0 / 0 sent nan
    back)."""
    h = _call(b, hypot, x, y)
    zero = b.binary(ops.Eq, h, const_like(b, 0, h))
    return b.div(v, b.select(zero, const_like(b, 1, h), h))


defpartials(math.hypot, lambda b, x, y: over_hypot(b, math.hypot, x, x, y),
            lambda b, x, y: over_hypot(b, math.hypot, y, x, y))
defpartials(math.erf,
            lambda b, x: b.mul(const_like(b, _TWO_OVER_SQRT_PI, x),
                               _call(b, math.exp, b.neg(square(b, x)))), bounded=True)
defpartials(math.erfc,
            lambda b, x: b.neg(b.mul(const_like(b, _TWO_OVER_SQRT_PI, x),
                                     _call(b, math.exp, b.neg(square(b, x))))), bounded=True)
defpartials(math.asinh,
            lambda b, x: _reciprocal(b, _call(b, math.sqrt, b.add(square(b, x), _one(b, x)))), bounded=True)
defpartials(math.acosh,
            lambda b, x: _reciprocal(b, _call(b, math.sqrt, b.sub(square(b, x), _one(b, x)))))
defpartials(math.atanh, lambda b, x: _reciprocal(b, b.sub(_one(b, x), square(b, x))))
defpartials(math.exp2, lambda b, x: b.mul(_call(b, math.exp2, x), const_like(b, _LN2, x)))
defpartials(math.degrees, lambda b, x: const_like(b, 180.0 / math.pi, x), bounded=True)
defpartials(math.radians, lambda b, x: const_like(b, math.pi / 180.0, x), bounded=True)
# ldexp(x, i) = x 2**i (i an int); nextafter(x, y) moves x by one ulp towards y: slope 1 in x
defpartials(math.ldexp, lambda b, x, i: _call(b, math.ldexp, _one(b, x), i), None)
defpartials(math.nextafter, lambda b, x, y: _one(b, x), lambda b, x, y: None, bounded=True)
# d/dx log|Gamma(x)| = digamma(x), on both sides of the poles; Gamma' = Gamma * digamma.
defpartials(math.lgamma, lambda b, x: _call(b, digamma, x))
defpartials(math.gamma, lambda b, x: b.mul(_call(b, math.gamma, x), _call(b, digamma, x)))


def _copysign_rule(b, primals, tangents, kwargs):
    # copysign(x, y) = |x| sign(y): slope sign(x) sign(y) in x (from the right at x = 0, as for
    # abs), flat in y away from y = 0.
    x, y = primals
    dx = tangents[0]
    if dx is None:
        return None
    one = const_like(b, 1, x)
    return b.mul(dx, b.mul(_call(b, math.copysign, one, x), _call(b, math.copysign, one, y)))


defrule(math.copysign, _copysign_rule)


def _abs_partial(b, x):
    # The one-sided derivative from the right at 0, as for |x| written with a branch.
    return b.select(b.binary(ops.Lt, x, zero_like(b, x)), const_like(b, -1, x), _one(b, x))


defpartials(math.fabs, _abs_partial, bounded=True)
defpartials(abs, _abs_partial, bounded=True)
for _flat in (math.floor, math.ceil, math.trunc, np.floor, np.ceil, np.trunc, round):
    defzero(_flat)


def _extremum_rule(better: type) -> Callable:
    """min/max of scalars: the tangent of the argument chosen, with Python's tie-breaking (the
    first of equal arguments wins)."""

    def rule(b, primals, tangents, kwargs):
        if len(primals) < 2 or not all(p.type.is_scalar for p in primals):
            raise RuleNotApplicable("min/max are differentiated for two or more scalars only")
        common = max((p.type for p in primals if p.type.is_float), key=lambda t: t.bits)
        best = b.cast(primals[0], common)
        dbest = _tangent_as(b, tangents[0], common)
        for x, dx in zip(primals[1:], tangents[1:]):
            x = b.cast(x, common)
            take = b.binary(better, x, best)
            best = b.select(take, x, best)
            dbest = b.select(take, _tangent_as(b, dx, common), dbest)
        return dbest

    return rule


def _tangent_as(b, dx, type):
    return b.const(0.0, type) if dx is None else b.cast(dx, type)


defrule(min, _extremum_rule(ops.Lt))
defrule(max, _extremum_rule(ops.Gt))

# --- test cases --------------------------------------------------------------------------------

@dataclass(frozen=True)
class RuleCase:
    """A kernel exercising one primitive, and points (argument tuples) inside its domain."""

    name: str
    fn: Callable  # plain Python; tests compile it with numba.njit
    points: tuple
    rtol: float = 1e-6


def _unary(name, fn, *xs, rtol=1e-6):
    return RuleCase(name, fn, tuple((x,) for x in xs), rtol)


RULE_CASES = [
    RuleCase("add", lambda x, y: x + y, ((1.3, -0.4),)),
    RuleCase("sub", lambda x, y: x - y, ((1.3, -0.4),)),
    RuleCase("mul", lambda x, y: x * y, ((1.3, -0.4),)),
    RuleCase("mul_const", lambda x: 3.0 * x * 2.0, ((1.3,),)),
    RuleCase("truediv", lambda x, y: x / y, ((1.3, -0.7), (-2.0, 0.3))),
    RuleCase("floordiv", lambda x, y: x // y * x, ((5.3, 1.7),)),
    RuleCase("mod", lambda x, y: x % y, ((5.3, 1.7), (-5.3, 1.7))),
    RuleCase("pow_float", lambda x, y: x ** y, ((1.3, 0.7), (2.0, -1.5))),
    RuleCase("pow_int_exponent", lambda x, n: x ** n, ((1.3, 3), (-0.8, 2))),
    RuleCase("pow_int_base", lambda n, y: n ** y, ((3, 0.7),)),
    RuleCase("pow_const", lambda x: x ** 2.5, ((1.7,),)),
    RuleCase("neg", lambda x: -x, ((1.3,),)),
    RuleCase("pos", lambda x: +x * x, ((1.3,),)),
    RuleCase("cast_to_int", lambda x: x * int(x), ((2.5,), (-1.5,))),
    RuleCase("cast_from_int", lambda x, n: x * float(n) + float(n), ((2.5, 3),)),
    RuleCase("cast_float32", lambda x: float(np.float32(x) * np.float32(3.0)), ((0.7,),),
             rtol=1e-3),
    RuleCase("compare", lambda x, y: (x < y) * x + (x >= y) * y, ((0.3, 1.2), (2.0, 1.0))),
    _unary("sin", lambda x: math.sin(x), 0.7, -2.1),
    _unary("cos", lambda x: math.cos(x), 0.7, -2.1),
    _unary("tan", lambda x: math.tan(x), 0.7, -1.1),
    _unary("exp", lambda x: math.exp(x), 0.7, -2.1),
    _unary("log", lambda x: math.log(x), 0.7, 3.1),
    _unary("sqrt", lambda x: math.sqrt(x), 0.7, 3.1),
    _unary("tanh", lambda x: math.tanh(x), 0.7, -1.1),
    _unary("sinh", lambda x: math.sinh(x), 0.7, -1.1),
    _unary("cosh", lambda x: math.cosh(x), 0.7, -1.1),
    _unary("asin", lambda x: math.asin(x), 0.3, -0.8),
    _unary("acos", lambda x: math.acos(x), 0.3, -0.8),
    _unary("atan", lambda x: math.atan(x), 0.3, -2.8),
    RuleCase("atan2", lambda y, x: math.atan2(y, x), ((0.7, -1.3), (-0.5, 0.4))),
    RuleCase("hypot", lambda x, y: math.hypot(x, y), ((0.3, -1.2),)),
    _unary("expm1", lambda x: math.expm1(x), 0.7, -1e-3),
    _unary("log1p", lambda x: math.log1p(x), 0.7, -0.3),
    _unary("log2", lambda x: math.log2(x), 0.7, 3.1),
    _unary("log10", lambda x: math.log10(x), 0.7, 3.1),
    _unary("erf", lambda x: math.erf(x), 0.7, -1.1),
    _unary("fabs", lambda x: math.fabs(x), 0.7, -1.1),
    _unary("erfc", lambda x: math.erfc(x), 0.7, -1.1),
    _unary("asinh", lambda x: math.asinh(x), 0.7, -2.1),
    _unary("acosh", lambda x: math.acosh(x), 1.3, 4.2),  # domain x > 1
    _unary("atanh", lambda x: math.atanh(x), 0.3, -0.8),  # domain |x| < 1
    _unary("exp2", lambda x: math.exp2(x), 0.7, -2.1),
    _unary("lgamma", lambda x: math.lgamma(x), 0.3, 1.4616321, 7.5, 23.7, -2.5, -0.7),
    _unary("gamma", lambda x: math.gamma(x), 0.3, 2.5, 7.5, -2.5, -0.7),
    RuleCase("copysign", lambda x, y: math.copysign(x, y),
             ((0.7, 1.3), (0.7, -1.3), (-0.7, 1.3), (-0.7, -1.3))),
    RuleCase("math_pow", lambda x, y: math.pow(x, y), ((1.3, 0.7), (2.0, -1.5))),
    _unary("floor", lambda x: x * math.floor(x), 2.5, -1.5),
    _unary("ceil", lambda x: x * math.ceil(x), 2.5, -1.5),
    _unary("trunc", lambda x: x * math.trunc(x), 2.5, -1.5),
    _unary("np_floor", lambda x: x * np.floor(x), 2.5, -1.5),
    _unary("abs", lambda x: abs(x), 0.7, -1.1),
    RuleCase("min", lambda x, y: min(x, y), ((0.3, 1.2), (1.5, -0.2))),
    RuleCase("max", lambda x, y: max(x, y), ((0.3, 1.2), (1.5, -0.2))),
    RuleCase("min3", lambda x, y, z: min(x, y, z), ((0.3, 1.2, -0.5), (1.5, -0.2, 0.1))),
    RuleCase("max_int", lambda x, n: max(x, n), ((0.3, 1), (1.5, 1))),
    _unary("np_sin", lambda x: np.sin(x), 0.7),
    _unary("np_exp", lambda x: np.exp(x), 0.7),
    _unary("np_exp2", lambda x: np.exp2(x), 0.7),
    _unary("np_log", lambda x: np.log(x), 0.7),
    _unary("np_sqrt", lambda x: np.sqrt(x), 0.7),
    _unary("np_abs", lambda x: np.abs(x), -0.7),
    RuleCase("np_arctan2", lambda y, x: np.arctan2(y, x), ((0.7, -1.3),)),
]
