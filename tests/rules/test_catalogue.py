"""Every function numba can call is classified, and each class has its handlers in every mode.

The callables come from numba's own typing registry (several hundred numpy, `math`, `cmath`,
`random` and builtin functions), so a function a numba upgrade adds is classified the day the
upgrade lands: differentiated (a forward rule and a reverse path), zero or no derivative, an
allocation, a constant, handled by capture, or refused (no rule in any mode: every mode raises).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite import _numba as nb
from moonlite.errors import UnsupportedError
from moonlite.rules import Method, lookup_jvp
from moonlite.rules.catalogue import classify, numba_callables
from moonlite.rules.custom import lookup_custom
from moonlite.rules.registry import PRIMITIVES, lookup_field
from moonlite.ir.traits import Trait

CALLABLES = numba_callables()
KINDS = {"differentiated", "zero", "none", "allocation", "constant", "capture", "effect-free",
         "refused"}


def _name(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', repr(fn))}"


def _reverse_path(fn) -> bool:
    """How the reverse pass differentiates a call of `fn`: a structural adjoint, a user's VJP,
    the rule's partials, or (elementwise functions and functions of scalars) the forward rule
    applied to unit tangents."""
    custom = lookup_custom(fn)
    if lookup_field(fn, "adjoint") is not None or (custom is not None and (custom.fwd is not None
                                                       or custom.nondifferentiable)):
        return True
    rule = lookup_jvp(fn)
    elementwise = isinstance(fn, (np.ufunc, nb.DUFunc)) or bool(
        (lookup_field(fn, "traits") or Trait.NONE) & Trait.ELEMENTWISE)
    scalar_only = getattr(fn, "__module__", None) in ("math", "builtins")
    return rule is not None and (hasattr(rule, "partials") or elementwise or scalar_only)


def test_the_registry_is_read():
    names = {_name(fn) for fn in CALLABLES}
    assert len(CALLABLES) > 300
    assert {"numpy.sin", "math.exp", "numpy.linalg.solve", "builtins.abs"} <= names


@pytest.mark.parametrize("fn", CALLABLES, ids=_name)
def test_every_callable_is_classified_with_its_handlers(fn):
    kind = classify(fn)
    assert kind in KINDS
    if kind == "differentiated":
        assert lookup_jvp(fn) is not None or lookup_custom(fn) is not None, "no forward rule"
        assert _reverse_path(fn), "a forward rule but no reverse path"
    if kind == "zero":
        assert lookup_jvp(fn) is not None, "piecewise constant, but no (zero) forward rule"
    if kind == "refused":
        assert lookup_jvp(fn) is None and lookup_field(fn, "adjoint") is None, \
            "refused, yet one mode has a handler: the modes would disagree"


def test_every_structural_adjoint_has_a_forward_rule():
    adjoints = [key for key, p in PRIMITIVES.items() if p.adjoint is not None]
    assert np.sum in adjoints and Method("sum") in adjoints
    for key in adjoints:
        if key is not len and not (PRIMITIVES[key].traits or Trait.NONE) & Trait.ALLOCATES:
            assert lookup_jvp(key) is not None, f"{key}: reverse mode only"


# A sample of refused functions: given a value being differentiated, every mode raises an
# error naming the function.
REFUSED_SAMPLE = [
    ("rot90", lambda x: np.sum(np.rot90(np.outer(x, x)) * x)),
    ("ediff1d", lambda x: np.sum(np.ediff1d(x) ** 2)),
    ("nancumprod", lambda x: np.sum(np.nancumprod(x))),
    ("vander", lambda x: np.sum(np.vander(x) * x)),
    ("nanmedian", lambda x: np.nanmedian(x)),
    ("nancumsum", lambda x: np.sum(np.nancumsum(x) * x)),
    ("nanvar", lambda x: np.nanvar(x)),
    ("frexp", lambda x: math.frexp(x[0])[0]),
]


@pytest.mark.parametrize("name, fn", REFUSED_SAMPLE, ids=[r[0] for r in REFUSED_SAMPLE])
def test_a_refused_function_is_refused_in_every_mode(name, fn):
    kernel = numba.njit(fn)
    x = np.array([0.3, 1.1, 0.7])
    assert classify_of(name) == "refused"
    for run in (lambda: moonlite.jvp(kernel, (x.copy(),), (np.ones(3),)),
                lambda: moonlite.grad(kernel)(x.copy()),
                lambda: moonlite.vjp(kernel, x.copy())):
        with pytest.raises(UnsupportedError, match=name):
            run()


def classify_of(name: str) -> str:
    fn = getattr(np, name, None) or getattr(math, name)
    return classify(fn)
