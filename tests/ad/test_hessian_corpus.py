"""Forward over reverse on the foundation corpus: Hessian-vector products checked against
second-order central finite differences of the kernel itself, through the bilinear form
<w, H v> = d^2/ds dt f(x + s v + t w) at 0, for random directions v and w."""

import numpy as np
import pytest

import moonlite
from moonlite.api import _kind, zero_tangent_like
from moonlite.testing import _copy, _random_tangent, _shift, inner
from tests.corpus.kernels import CASES

SECOND_ORDER_STEPS = (1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5)

# Known gaps of forward over reverse, each refused with a clear UnsupportedError.
KNOWN_GAPS: dict = {}


def _scalar_output(case):
    return _kind(case.kernel(*case.make_args())) == "float"


SCALAR = [c for c in CASES if _scalar_output(c)]


def _marks(case):
    if case.name in KNOWN_GAPS:
        return [pytest.mark.xfail(strict=True, raises=moonlite.UnsupportedError,
                                  reason=KNOWN_GAPS[case.name])]
    return []


def _direction(case, i, a, rng):
    return zero_tangent_like(a) if i in case.fixed else _random_tangent(a, rng)


@pytest.mark.parametrize("case", [pytest.param(c, marks=_marks(c), id=c.name) for c in SCALAR])
def test_hvp_against_second_order_finite_differences(case):
    args = case.make_args()
    rng = np.random.default_rng(11)
    v = [_direction(case, i, a, rng) for i, a in enumerate(args)]
    w = [_direction(case, i, a, rng) for i, a in enumerate(args)]
    ours = _copy(args)
    hv = moonlite.hvp(case.kernel, ours, v)
    for before, after in zip(args, ours):  # the rule undid every write
        if isinstance(before, np.ndarray):
            np.testing.assert_array_equal(after, before)
    lhs = sum(inner(h, t) for h, t in zip(hv, w))
    errors = []
    for h in SECOND_ORDER_STEPS:
        def f(s, t):
            shifted = [_shift(_shift(a, va, s), wa, t) if va is not None else _shift(a, va, 0)
                       for a, va, wa in zip(args, v, w)]
            return float(case.kernel(*shifted))
        rhs = (f(h, h) - f(h, -h) - f(-h, h) + f(-h, -h)) / (4 * h * h)
        errors.append(abs(lhs - rhs))
    tolerance = (1e-2 if "float32" in case.tags else 1e-5) * max(1.0, abs(lhs))
    assert min(errors) <= tolerance, f"<w, H v> = {lhs}, best finite-difference error " \
                                     f"{min(errors):.3e}"
