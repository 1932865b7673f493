"""Forward mode over the foundation corpus, checked against central finite differences.

Every kernel is differentiated with respect to all its float arguments at once along a random
direction (tolerances stay fixed), through `moonlite.testing.check_jvp`, which also checks that
the tangent of every array the kernel writes into describes the array's new value.
"""

import numpy as np
import pytest

import moonlite
from moonlite.ad import forward_transform
from moonlite.driver import PASS_CONTEXT
from moonlite.api import _kind
from moonlite.testing import _random_tangent, check_jvp
from tests.corpus.kernels import CASES


def _tangents(case, args, seed=1):
    rng = np.random.default_rng(seed)
    tangents = []
    for i, a in enumerate(args):
        t = _random_tangent(a, rng)
        if i in case.fixed:
            t = 0.0 if _kind(a) == "float" else np.zeros_like(a)
        tangents.append(t)
    return tuple(tangents)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_jvp_matches_finite_differences(case):
    args = case.make_args()
    rtol = 1e-3 if "float32" in case.tags else 1e-5
    check_jvp(case.kernel, *args, tangents=_tangents(case, args), rtol=rtol)


@pytest.mark.parametrize("case", CASES[::4], ids=[c.name for c in CASES[::4]])
def test_forward_ir_verifies_and_keeps_the_control_flow(case):
    primal = moonlite.capture(case.kernel, *case.make_args())
    before = str(primal)
    forward = moonlite.verify(forward_transform(primal, context=PASS_CONTEXT))  # callees' rules
    assert str(primal) == before  # the pass builds new IR
    assert len(forward.blocks) == len(primal.blocks)
