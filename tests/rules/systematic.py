"""The systematic rule suite's cases and helpers (issue #16; after autograd's
test_systematic.py and JAX's lax_autodiff_test.py): every registered primitive over its argument
variants, checked with moonlite's rule checker in every mode: forward mode (jvp) against central
differences, reverse mode (grad) by the dot-product identity against them, second order (hvp)
against differences of the gradient. (vjp's split of the same reverse rule is checked by the
corpus and rule tests.) The tests are in test_systematic_*.py, one file per process (tests/run.py).

Variants: 0-d (a Python float and a 0-d array) to 3-d arrays, float64 and float32,
broadcasting shapes, axes including negative ones, offsets and diagonals, joins along every
axis, products of every rank, tuples. numba accepts no `keepdims` and no `axis` for mean, max,
min and prod: those variants do not exist. Variants moonlite refuses (np.linalg.norm with an
order, a list literal) must be refused in every mode.

To keep compilation affordable, one kernel checks a group of primitives, each on arguments of
its own: the checker names the argument whose derivative is wrong, and the failure message
maps it back to the primitive.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numba
import numpy as np

from moonlite.testing import check_grad, check_hvp, check_jvp


@dataclass(frozen=True)
class Primitive:
    name: str
    expr: str          # the term, in a (and b for binary ones); an array expression is summed
    low: float = -2.0  # the domain the arguments are drawn from
    high: float = 2.0


def _u(name, expr=None, low=-2.0, high=2.0):
    return Primitive(name, expr or f"np.{name}(a)", low, high)


POS, UNIT = (0.3, 3.0), (-0.9, 0.9)
UNARY = [
    _u("sin"), _u("cos"), _u("tan", low=-1.2, high=1.2), _u("exp"), _u("expm1"), _u("exp2"),
    _u("log", low=POS[0], high=POS[1]), _u("log1p", low=-0.7, high=3.0),
    _u("log2", low=POS[0], high=POS[1]), _u("log10", low=POS[0], high=POS[1]),
    _u("sqrt", low=POS[0], high=POS[1]), _u("sinh"), _u("cosh"), _u("tanh"),
    _u("arcsin", low=UNIT[0], high=UNIT[1]), _u("arccos", low=UNIT[0], high=UNIT[1]),
    _u("arctan"), _u("arcsinh"), _u("arccosh", low=1.2, high=3.0),
    _u("arctanh", low=UNIT[0], high=UNIT[1]), _u("cbrt", low=0.5, high=2.0),
    _u("reciprocal", low=0.5, high=2.0), _u("square"), _u("deg2rad"), _u("rad2deg"),
    _u("radians"), _u("degrees"), _u("negative"), _u("positive"), _u("sinc"),
    _u("abs", low=0.2, high=2.0), _u("fabs", low=-2.0, high=-0.2),
    _u("floor", "np.floor(a) * a", 0.1, 0.9), _u("ceil", "np.ceil(a) * a", 0.1, 0.9),
    _u("trunc", "np.trunc(a) * a", 0.1, 0.9), _u("rint", "np.rint(a) * a", 0.1, 0.4),
    _u("sign", "np.sign(a) * a", 0.2, 2.0), _u("spacing", "a + 1e12 * np.spacing(a)", 1.1, 1.9),
    _u("power_constant", "a ** 3 + a ** 2.5 + a ** 0.5", 0.5, 2.0),
]
BINARY = [
    Primitive("arctan2", "np.arctan2(a, b)", 0.5, 2.0), Primitive("hypot", "np.hypot(a, b)"),
    Primitive("logaddexp", "np.logaddexp(a, b)"), Primitive("logaddexp2", "np.logaddexp2(a, b)"),
    Primitive("add", "np.add(a, b)"), Primitive("subtract", "np.subtract(a, b)"),
    Primitive("multiply", "np.multiply(a, b)"), Primitive("divide", "np.divide(a, b)", 0.5, 2.0),
    Primitive("power", "np.power(a, b)", 0.5, 2.0),
    Primitive("float_power", "np.float_power(a, b)", 0.5, 2.0),
    Primitive("maximum", "np.maximum(a, b)"), Primitive("minimum", "np.minimum(a, b)"),
    Primitive("fmax", "np.fmax(a, b)"), Primitive("fmin", "np.fmin(a, b)"),
    Primitive("copysign", "np.copysign(a, b)", 0.5, 2.0),
    Primitive("operators", "a * b - a / b + (a + b) ** 2 - b", 0.5, 2.0),
    Primitive("where", "np.where(a > b, a * b, b - a)"),
    # (numba's np.clip writes out of bounds when the bounds broadcast the array to a larger
    # shape: the array is given the broadcast shape here)
    Primitive("clip", "np.clip(a + 0.0 * b, -0.5, b)", 0.6, 2.0),
]
MATH = [
    _u("sin", "math.sin(a)"), _u("cos", "math.cos(a)"), _u("tan", "math.tan(a)", -1.2, 1.2),
    _u("exp", "math.exp(a)"), _u("expm1", "math.expm1(a)"), _u("exp2", "math.exp2(a)"),
    _u("log", "math.log(a)", *POS), _u("log1p", "math.log1p(a)", -0.7, 3.0),
    _u("log2", "math.log2(a)", *POS), _u("log10", "math.log10(a)", *POS),
    _u("sqrt", "math.sqrt(a)", *POS), _u("sinh", "math.sinh(a)"), _u("cosh", "math.cosh(a)"),
    _u("tanh", "math.tanh(a)"), _u("asin", "math.asin(a)", *UNIT),
    _u("acos", "math.acos(a)", *UNIT), _u("atan", "math.atan(a)"),
    _u("asinh", "math.asinh(a)"), _u("acosh", "math.acosh(a)", 1.2, 3.0),
    _u("atanh", "math.atanh(a)", *UNIT), _u("erf", "math.erf(a)"), _u("erfc", "math.erfc(a)"),
    _u("gamma", "math.gamma(a)", 0.5, 3.0), _u("lgamma", "math.lgamma(a)", 0.5, 3.0),
    _u("fabs", "math.fabs(a)", 0.2, 2.0), _u("abs", "abs(a)", -2.0, -0.2),
    _u("degrees", "math.degrees(a)"), _u("radians", "math.radians(a)"),
    _u("pow", "math.pow(a, 1.7) + pow(a, 2.5)", 0.5, 2.0),
    _u("atan2", "math.atan2(a, 0.7) + math.hypot(a, 0.3)"),
    _u("copysign", "math.copysign(a, -1.0)", 0.3, 2.0),
    _u("ldexp", "math.ldexp(a, 3) + math.nextafter(a, 9.0)"),
    _u("min_max", "min(a, 0.25) * max(a, -0.25, 0.75)", 0.3, 0.7),
    _u("floor", "math.floor(a) * a + round(a, 1) * a", 1.32, 1.33),
]


def groups(primitives, size):
    return [primitives[k:k + size] for k in range(0, len(primitives), size)]


def kernel_of(name, primitives, arity=1):
    """One njit kernel: a weighted sum of each primitive's term on arguments of its own."""
    params, terms = [], []
    for k, p in enumerate(primitives):
        names = [f"a{k}", f"b{k}"][:arity]
        params += names
        expr = re.sub(r"\bb\b", names[-1], re.sub(r"\ba\b", names[0], p.expr))
        terms.append(f"{1.0 + 0.37 * k!r} * np.sum({expr})")
    source = f"def {name}({', '.join(params)}):\n    return " + " + ".join(terms) + "\n"
    namespace = {"np": np, "math": math}
    exec(compile(source, f"<systematic {name}>", "exec"), namespace)
    return numba.njit(namespace[name])


def draw(rng, p, shape, dtype):
    if shape == "float":
        return float(rng.uniform(p.low, p.high))
    return np.asarray(rng.uniform(p.low, p.high, shape)).astype(dtype)


def check_all_modes(kernel, primitives, args, arity, dtype=np.float64, second_order=True):
    """jvp, grad and (float64, `second_order`) hvp of `kernel` at `args` against finite
    differences; a failure names the primitives in argument order."""
    float32 = dtype == np.float32
    rtol, atol = (2e-3, 1e-6) if float32 else (1e-6, 1e-8)
    checks = [(check_jvp, dict(rtol=max(rtol, 1e-5), atol=max(atol, 1e-7))),
              (check_grad, dict(rtol=rtol, atol=atol))]
    if second_order and not float32:
        checks.append((check_hvp, dict(rtol=1e-5)))
    for check, tolerances in checks:
        try:
            check(kernel, *args, **tolerances)
        except AssertionError as exc:
            names = [p.name for p in primitives for _ in range(arity)]
            raise AssertionError(f"{check.__name__}: {exc}\n(arguments, in order: {names})") \
                from None
