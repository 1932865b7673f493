"""Primitive rules, keyed by primitive, with helpers for the common shapes.

A primitive is what an op stands for: the op class for operators (`ops.Mul`, `ops.Cast`), the
callee object for calls (`math.sin`, `np.sum`, `min`), `Method("sum")` for method calls
(`a.sum()`, whose primals start with the receiver) and `Attribute("T")` for attributes. A forward
(JVP) rule has the signature

    rule(b: Builder, primals: tuple[Value], tangents: tuple[Value | None],
         kwargs: dict[str, Value]) -> Value | None

It emits, at the builder's insertion point, the tangent of the op's result for one tangent
direction (batched mode calls it once per direction). `None` in `tangents` means "zero" (an
int/bool operand, or a value whose tangent is known to be zero); the forward pass never calls a
rule whose tangents are all None. `kwargs` holds keyword arguments of calls, which never carry
tangents (`axis=`, `dtype=`). Returning None means a zero tangent. The pass casts a scalar tangent
a rule returns to the result's type, so rules need not track float32/float64 promotion.

Helpers, so that most rules are one line (after ChainRules' `@scalar_rule` and JAX's
`defjvp`/`deflinear`/`defjvp_zero`):
- `defpartials(prim, *partials)`: an elementwise primitive by its partial derivatives,
  `partial_i(b, *primals)`; forward mode multiplies each argument's tangent by its partial and
  reverse mode the adjoint, with `strong_mul` (`strong_zeros.py`: a zero factor gives exactly
  zero, so `0 * inf` is 0, not nan);
- `defjvp(prim, *jvps)`: one function per argument, `jvp_i(b, *primals, dx_i)`, giving that
  argument's contribution; the tangent is the sum over the arguments that carry a tangent (for
  the bilinear products, whose contributions are not elementwise).
- `deflinear(prim)`: the op applied to the tangents (`Add`, `Neg`, ...).
- `defzero(prim)`: a piecewise-constant function (`floor`): zero tangent.
- `defrule(prim, rule)`: a full rule, for the shapes the helpers do not cover.

Rule files by topic (`scalar.py`) register their rules on import and list their test cases beside
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import MoonliteError

JVP_RULES: dict = {}


@dataclass(frozen=True)
class Method:
    """The primitive of a method call `receiver.name(...)`."""

    name: str


@dataclass(frozen=True)
class Attribute:
    """The primitive of a data attribute `value.name` (`a.T`, `a.real`)."""

    name: str


class RuleNotApplicable(MoonliteError):
    """A rule exists for the primitive but not for these operands (arity, types, keywords).

    The forward pass turns it into an `UnsupportedError` naming the op and its source line."""


def lookup_jvp(primitive) -> Optional[Callable]:
    try:
        return JVP_RULES.get(primitive)
    except TypeError:  # unhashable callee
        return None


def defrule(primitive, rule: Callable) -> Callable:
    JVP_RULES[primitive] = rule
    return rule


def defpartials(primitive, *partials, bounded=False) -> Callable:
    """Register an elementwise primitive by its partial derivatives: `partial_i(b, *primals)`
    returns the derivative of the result in argument i (a value broadcasting like the result,
    or None where it is zero); a None entry instead of a function marks an argument that is not
    differentiable. The rule keeps `partials` for reverse mode.

    `bounded=True` (or a function of the primals saying so) declares partials that are finite
    wherever the arguments are (polynomials, sin, tanh, ...): they multiply plainly, since a
    strong product's compare and select on every product cost loop kernels up to 2x
    (rosenbrock's gradient). Partials that can be infinite at finite arguments (1/x, sqrt,
    log, exp overflowing) multiply strongly."""

    def rule(b, primals, tangents, kwargs):
        def term(partial, dx):
            p = partial(b, *primals)
            if p is None:
                return None  # a zero partial
            if is_one(p):
                return dx  # a linear argument: its tangent passes as it is
            if has_bounded_partials(rule, primals):
                return b.mul(dx, p)
            return strong_product(b, dx, p)

        return _sum_of_terms(b, partials, tangents, primals, kwargs, term)

    rule.partials, rule.bounded = partials, bounded
    return defrule(primitive, rule)


def _sum_of_terms(b, per_argument, tangents, primals, kwargs, term):
    """The tangent of a rule given per argument (defjvp, defpartials): the sum of
    `term(f_i, dx_i)` over the arguments with a tangent; a term of None adds nothing."""
    _no_keywords(kwargs)
    if len(primals) != len(per_argument):
        raise RuleNotApplicable(f"the rule expects {len(per_argument)} argument(s), "
                                f"got {len(primals)}")
    total = None
    for f, dx in zip(per_argument, tangents):
        if dx is None:
            continue
        if f is None:
            raise RuleNotApplicable("a tangent reaches an argument declared non-differentiable")
        contribution = term(f, dx)
        if contribution is not None:
            total = contribution if total is None else b.add(total, contribution)
    return total


def has_bounded_partials(rule, primals) -> bool:
    """True if `rule` (from defpartials) declared its partials finite at these primals."""
    bounded = getattr(rule, "bounded", False)
    return bool(bounded(primals) if callable(bounded) else bounded)


def is_one(value) -> bool:
    """A constant 1 (the partial of a linear argument: its tangent passes as it is)."""
    from ..ir.ops import constant_value
    return value.type.is_scalar and constant_value(value) == 1


def defjvp(primitive, *jvps: Callable) -> Callable:
    """Register per-argument contributions `jvp_i(b, *primals, dx_i)`; None: not differentiable."""

    def rule(b, primals, tangents, kwargs):
        return _sum_of_terms(b, jvps, tangents, primals, kwargs,
                             lambda jvp, dx: jvp(b, *primals, dx))

    return defrule(primitive, rule)


def deflinear(primitive, apply: Callable) -> Callable:
    """A linear primitive: its tangent is `apply(b, *tangents)`, zeros filled in where missing."""

    def rule(b, primals, tangents, kwargs):
        _no_keywords(kwargs)
        filled = [dx if dx is not None else zero_like(b, x) for x, dx in zip(primals, tangents)]
        return apply(b, *filled)

    return defrule(primitive, rule)


def defzero(primitive) -> Callable:
    """A piecewise-constant or integer-valued primitive: its tangent is zero."""
    return defrule(primitive, lambda b, primals, tangents, kwargs: None)


def _no_keywords(kwargs) -> None:
    if kwargs:
        raise RuleNotApplicable(f"keyword arguments {sorted(kwargs)} are not supported by this "
                                f"rule")


# --- small builders the rules share --------------------------------------------------------------

def const_like(b, value, like):
    """A constant `value` of `like`'s type (floats keep their width; ints stay ints)."""
    t = like.type
    if t.is_float:
        return b.const(float(value), t)
    if t.is_integer:
        return b.const(int(value), t)
    return b.const(float(value))


def zero_like(b, like):
    return const_like(b, 0, like)


def square(b, x):
    return b.mul(x, x)


from .strong_zeros import strong_product  # noqa: E402  (defpartials' rules emit it)
from . import scalar  # noqa: E402,F401  (registers the scalar rules)
from . import numpy_rules  # noqa: E402,F401  (after scalar: its numpy keys win)
from . import linalg  # noqa: E402,F401  (np.linalg, as custom rules)
from . import reductions  # noqa: E402,F401  (np.var, np.std, as custom rules)
