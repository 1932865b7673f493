"""Every rule case (scalar and numpy) in reverse mode, through moonlite.testing.check_vjp: the
dot-product identity against finite differences, with random nonzero seeds."""

import numba
import numpy as np
import pytest

from moonlite.errors import UnsupportedError
from moonlite.rules.linalg import LINALG_RULE_CASES
from moonlite.rules.reductions import REDUCTION_RULE_CASES
from moonlite.rules.numpy_rules import NUMPY_RULE_CASES as _NUMPY_CASES
from moonlite.rules.scalar import RULE_CASES
from moonlite.testing import check_vjp

NUMPY_RULE_CASES = _NUMPY_CASES + LINALG_RULE_CASES + REDUCTION_RULE_CASES  # each rule file keeps its own cases
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


REVERSE_GAPS: dict = {}  # rule cases reverse mode refuses (strict xfails): none at present


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
