"""Rules users write: custom JVPs, custom VJPs and non-differentiable functions.

The conventions are JAX's, written as njit-compatible Python (plain functions are compiled with
`numba.njit` when registered):

- `custom_jvp(f, jvp)`: `jvp(primals, tangents) -> (out, dout)`, where `primals` and `tangents`
  are tuples with one entry per argument of `f` (the tangent of an int or bool argument is None;
  a float array's tangent is an array of its shape). Forward mode calls it instead of deriving
  `f`. Reverse mode uses it too when every differentiable argument and the output of `f` are
  float scalars (one call per argument, with a unit tangent); for arrays, give a VJP.
- `custom_vjp(f, fwd, bwd)`: `fwd(*primals) -> (out, residuals)` runs in the forward sweep and
  what it returns in `residuals` is kept for the pullback (on a tape inside loops), which calls
  `bwd(residuals, dout) -> (cotangent_0, cotangent_1, ...)`, one entry per argument (None, or
  anything, for ints). This is how a rule reuses primal work: a factorisation computed in `fwd`
  is handed to `bwd`. Forward mode uses `f`'s JVP rule if it has one, and otherwise derives `f`.
- `nondifferentiable(f)`: `f` has a zero derivative (random numbers, rounding, index
  computations). It must not write into its array arguments; moonlite checks this.

Second derivatives need no extra work: forward mode over a reverse rule differentiates the
calls of `fwd` and `bwd` (or of `jvp`) it contains like any njit code.

A function with a rule is never inlined or derived by moonlite, so its body may use constructs
moonlite does not support (only numba must compile it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .. import _numba as nb
from ..errors import MoonliteError
from .define import RuleNotApplicable
from .registry import register
from .tangents import zero_tangent


@dataclass
class CustomRule:
    """The user's rules for one function (any of them may be missing)."""

    function: object
    jvp: object = None
    fwd: object = None
    bwd: object = None
    nondifferentiable: bool = False

    @property
    def name(self) -> str:
        return function_name(self.function)


CUSTOM_RULES: dict = {}


def lookup_custom(callee) -> Optional[CustomRule]:
    try:
        return CUSTOM_RULES.get(callee)
    except TypeError:  # unhashable callee
        return None


def custom_jvp(f, jvp=None):
    """Give `f` a forward rule `jvp(primals, tangents) -> (out, dout)`. Without `jvp`, returns a
    decorator: `@moonlite.custom_jvp(f)` above the rule's definition."""
    if jvp is None:
        return lambda rule: custom_jvp(f, rule) and rule
    rule = _rule_for(f)
    rule.jvp = _njit(jvp, "the JVP rule")
    register(f, jvp=_jvp_as_ir_rule(rule), replace=True)  # the user's latest rule wins
    _rules_changed()
    return f


def custom_vjp(f, fwd, bwd):
    """Give `f` a reverse rule: `fwd(*primals) -> (out, residuals)` and
    `bwd(residuals, dout) -> tuple of cotangents, one per argument`."""
    rule = _rule_for(f)
    rule.fwd, rule.bwd = _njit(fwd, "the forward half of the VJP rule"), \
        _njit(bwd, "the backward half of the VJP rule")
    _rules_changed()
    return f


def nondifferentiable(f):
    """Declare `f` to have a zero derivative; usable as a decorator above `@numba.njit`."""
    rule = _rule_for(f)
    rule.nondifferentiable = True
    register(f, jvp=lambda b, primals, tangents, kwargs: None, replace=True)
    _rules_changed()
    return f


def _rule_for(f) -> CustomRule:
    if not (nb.is_njit_dispatcher(f) or _library_function(f)):
        raise MoonliteError(f"{function_name(f)} is not compiled with @numba.njit: decorate it "
                            "with @numba.njit before giving it a rule, so that kernels can call "
                            "it")
    rule = CUSTOM_RULES.get(f)
    if rule is None:
        rule = CUSTOM_RULES[f] = CustomRule(f)
    return rule


def _library_function(f) -> bool:
    """numpy and math functions numba implements (moonlite's own rules for them)."""
    import numpy as np
    module = (getattr(f, "__module__", "") or "").split(".")[0]
    return isinstance(f, np.ufunc) or (callable(f) and module in ("numpy", "math"))


def _njit(fn, what: str):
    if nb.is_njit_dispatcher(fn):
        return fn
    if not callable(fn):
        raise MoonliteError(f"{what} must be a function, got {fn!r}")
    return nb.njit(fn)


def _jvp_as_ir_rule(rule: CustomRule):
    """The user's JVP as a rule of the IR-level table: what reverse mode uses for scalar
    functions (the derivative in argument k is the JVP with a unit tangent in k)."""

    def ir_rule(b, primals, tangents, kwargs):
        if kwargs:
            raise RuleNotApplicable("a call with keyword arguments: pass them by position")
        pair = call_jvp(b, rule, primals, [t if t is not None else zero_tangent(b, x)
                                            for x, t in zip(primals, tangents)])
        return b.tuple_getitem(pair, 1)

    return ir_rule


def call_jvp(b, rule: CustomRule, primals, tangents):
    """Emit `rule.jvp((primals...), (tangents...))` and check it returns (out, dout)."""
    from ..ir.types import TupleType
    args = [b.build_tuple(list(primals)), b.build_tuple(list(tangents))]
    pair = call_user_rule(b, rule.jvp, args, f"the JVP rule of {rule.name}")
    if not (isinstance(pair.type, TupleType) and len(pair.type.elements) == 2):
        raise RuleNotApplicable(f"the JVP rule of {rule.name} must return a pair (out, dout), "
                                f"it returns {pair.type}")
    return pair


def call_user_rule(b, fn, args, what: str):
    """Emit a call of a user's njit rule; numba's typing errors become a clear moonlite error."""
    from ..ir.typing import TypingFailure
    try:
        return b.call(fn, args)
    except TypingFailure as exc:
        types = ", ".join(str(a.type) for a in args)
        raise RuleNotApplicable(f"numba could not compile {what} for arguments ({types}): "
                                f"{exc}") from None


def function_name(f) -> str:
    py = getattr(f, "py_func", f)
    module = getattr(py, "__module__", "") or ""
    name = getattr(py, "__qualname__", None) or getattr(py, "__name__", repr(f))
    return f"np.{name}" if module.startswith("numpy") and not name.startswith("np.") else name


_on_rules_changed: list = []  # callbacks: the driver's clear_cache


def on_rules_changed(callback) -> None:
    """Call `callback()` whenever a user registers a rule: rules derived before may have
    derived through the function (the driver, above this module, forgets them)."""
    _on_rules_changed.append(callback)


def _rules_changed() -> None:
    for callback in _on_rules_changed:
        callback()
