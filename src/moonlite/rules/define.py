"""The helpers rule files register their rules with (`defpartials`, `defjvp`, `deflinear`,
`defzero`, `defrule`, the linear-call shapes) and the small builders rules share; see
`rules/__init__.py` for the conventions and `registry.py` for what a registration holds."""


from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from .. import _numba as nb
from ..errors import MoonliteError
from ..ir.types import ArrayType
from .strong_zeros import strong_product
from .registry import lookup_field, register


def njit_from_source(source: str, name: str, what: str, **names):
    """The function `name` that `source` defines, compiled with `@njit`: the helpers rules
    generate per field or class. `what` names it in tracebacks (`<moonlite what>`); `names`
    are its globals (`__name__` makes it a function of that module)."""
    scope: dict = dict(names)
    exec(compile(source, f"<moonlite {what}>", "exec"), scope)
    return nb.njit(cache=False)(scope[name])


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
    return lookup_field(primitive, "jvp")


def defrule(primitive, rule: Callable) -> Callable:
    """Register `rule` as the forward rule of `primitive` (once: see `registry.py`)."""
    register(primitive, jvp=rule)
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
    if total is not None and any(total is dx for dx in tangents) and _is_array(total):
        # an argument's tangent passed as it is (`x * 1.0`, `x + c`): the result is a new
        # array, so its tangent must be one too, or an in-place update of the result
        # (`z = x + c; z += y`) would write into x's tangent
        total = b.method_call("copy", total, [])
    return total


def _is_array(value) -> bool:
    return isinstance(value.type, ArrayType)


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


def positional_only(kwargs, primals, arity: int) -> None:
    """Refuse keywords and any arity but `arity`."""
    _no_keywords(kwargs)
    if len(primals) != arity:
        raise RuleNotApplicable(f"the rule expects {arity} argument(s), got {len(primals)}")


def no_adjoint(rv, op) -> None:
    """The adjoint of a primitive from which nothing flows back: views (their shadows are views
    of their sources' shadows), allocations, lengths, piecewise-constant functions."""


def piecewise_constant(helper) -> None:
    """Register an njit helper of the rules whose value is piecewise constant in its arguments
    (the one-hot and rank weights adjoints multiply by): a zero tangent and nothing sent back,
    so forward mode over a reverse rule (a Hessian) need not capture it."""
    defzero(helper)
    register(helper, adjoint=no_adjoint, keywords=())


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
