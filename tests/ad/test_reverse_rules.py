"""Every rule case (scalar and numpy) in reverse mode, through moonlite.testing.check_vjp: the
dot-product identity against finite differences, with random nonzero seeds."""

import numba
import numpy as np
import pytest

from moonlite.errors import UnsupportedError
from moonlite.rules import numpy_rule_cases
from moonlite.rules.scalar import RULE_CASES
from moonlite.testing import check_vjp

NUMPY_RULE_CASES = numpy_rule_cases()  # each rule file keeps its own cases
_JITTED: dict = {}


def _jit(name, fn):
    if name not in _JITTED:
        _JITTED[name] = numba.njit(fn)
    return _JITTED[name]


@pytest.mark.parametrize("case", RULE_CASES, ids=[c.name for c in RULE_CASES])
def test_scalar_rule_in_reverse_mode(case):
    f = _jit(case.name, case.fn)
    for i, point in enumerate(case.points):
        if not isinstance(f(*point), float):
            continue  # integer-valued kernels have no reverse derivative to check
        check_vjp(f, *point, rtol=max(case.rtol, 1e-6), seed=i)


# rule cases reverse mode refuses with an UnsupportedError (strict xfails): forward mode
# differentiates np.diff of any array and order, reverse mode vectors, once
REVERSE_GAPS: dict = {
    "diff_of_rows": "np.diff of a matrix: its reverse adjoint is written for vectors",
    "diff_second_order": "np.diff(x, n) with n > 1: its reverse adjoint is written for n = 1",
}


def _numpy_param(case):
    marks = []
    if case.name in REVERSE_GAPS:
        marks = [pytest.mark.xfail(strict=True, raises=UnsupportedError,
                                   reason=REVERSE_GAPS[case.name])]
    return pytest.param(case, marks=marks, id=case.name)


@pytest.mark.parametrize("case", [_numpy_param(c) for c in NUMPY_RULE_CASES])
def test_numpy_rule_in_reverse_mode(case):
    f = _jit("np_" + case.name, case.fn)
    args = case.args(np.random.default_rng(0))
    fixed = tuple(i for i in range(len(args)) if i not in case.wrt)
    check_vjp(f, *args, rtol=max(case.rtol, 1e-6), fixed=fixed)
