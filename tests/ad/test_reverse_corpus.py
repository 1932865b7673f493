"""Reverse mode over the foundation corpus, checked by the dot-product identity against finite
differences: <dout, (f(x + h t) - f(x - h t)) / 2h> must equal <grad, t> for random nonzero
dout and t (a rule that overwrites an adjoint instead of adding to it fails this), and every
input array must hold what it held before the call once the pullback is done."""

import numpy as np
import pytest

import moonlite
from moonlite.driver import derived_reverse_rule
from moonlite.api import _kind, zero_tangent_like
from moonlite.testing import STEP_SIZES, _copy, _random_tangent, _shift, inner
from tests.corpus.kernels import CASES

# Known gaps of reverse mode, each refused with a clear UnsupportedError (see limitations.md).
KNOWN_GAPS: dict = {}


def _differentiable_output(case):
    return _kind(case.kernel(*case.make_args())) in ("float", "array")


REVERSIBLE = [c for c in CASES if _differentiable_output(c)]


def _marks(case):
    if case.name in KNOWN_GAPS:
        return [pytest.mark.xfail(strict=True, raises=moonlite.UnsupportedError,
                                  reason=KNOWN_GAPS[case.name])]
    return []


@pytest.mark.parametrize("case", [pytest.param(c, marks=_marks(c), id=c.name)
                                  for c in REVERSIBLE])
def test_dot_product_identity_against_finite_differences(case):
    args = case.make_args()
    rng = np.random.default_rng(5)
    out0 = case.kernel(*_copy(args))
    dout = _random_tangent(out0, rng) if _kind(out0) == "array" else 1.3
    rule = derived_reverse_rule(case.kernel, tuple(case.kernel.typeof_pyval(a) for a in args))
    ours = _copy(args)
    out, grads = rule(*ours, dout)
    for before, after in zip(args, ours):  # the pullback undid every write
        if isinstance(before, np.ndarray):
            np.testing.assert_array_equal(after, before)
    np.testing.assert_allclose(out, out0, rtol=1e-12)
    _check_vjp_matches(case, args, dout, grads)
    tangents = [_tangent(case, i, a, rng) for i, a in enumerate(args)]
    lhs = sum(inner(g, t) for g, t in zip(grads, tangents))
    errors = []
    for h in STEP_SIZES:
        plus = case.kernel(*[_shift(a, t, h) for a, t in zip(args, tangents)])
        minus = case.kernel(*[_shift(a, t, -h) for a, t in zip(args, tangents)])
        rhs = float(np.sum(np.asarray(dout) * (np.asarray(plus) - np.asarray(minus)) / (2 * h)))
        errors.append(abs(lhs - rhs))
    tolerance = (1e-3 if "float32" in case.tags else 1e-6) * max(1.0, abs(lhs))
    assert min(errors) <= tolerance, f"<grad, t> = {lhs}, best finite-difference error " \
                                     f"{min(errors):.3e}"


def _tangent(case, i, a, rng):
    t = _random_tangent(a, rng)
    if i in case.fixed:
        return zero_tangent_like(a)
    return t


SUPPORTED = [c for c in REVERSIBLE if c.name not in KNOWN_GAPS]


@pytest.mark.parametrize("case", SUPPORTED[::5], ids=[c.name for c in SUPPORTED[::5]])
def test_reverse_ir_verifies(case):
    rule = derived_reverse_rule(case.kernel,
                                tuple(case.kernel.typeof_pyval(a) for a in case.make_args()))
    moonlite.verify(rule.ir)
    assert "func " + case.kernel.py_func.__name__ + "_rev(" in str(rule.ir)


def _check_vjp_matches(case, args, dout, grads):
    """vjp cuts the rule into a sweep and a pullback with their state handed through Python:
    the same cotangents; the caller's arrays hold what the kernel leaves in them, and the
    pullback restores its own private copies."""
    ours, left_by_kernel = _copy(args), _copy(args)
    case.kernel(*left_by_kernel)
    out, pullback = moonlite.vjp(case.kernel, *ours)
    split = pullback(dout)
    for before, after, left, private in zip(args, ours, left_by_kernel, pullback.arguments):
        if isinstance(before, np.ndarray):
            np.testing.assert_array_equal(after, left)
            np.testing.assert_array_equal(private, before)
    _assert_same_cotangents(split, grads)


def _assert_same_cotangents(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same_cotangents(x, y)
    elif a is None or b is None:
        assert a is None and b is None
    else:
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-300)
