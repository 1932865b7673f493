"""Activity analysis (`ad/activity.py`): which values may carry a derivative."""

from __future__ import annotations

import numba
import numpy as np

import moonlite
from moonlite.ad.activity import varied_values
from moonlite.ir import ops


@numba.njit
def mixed(x, n, data):
    a = float(n) * 2.0          # from an int: not varied
    b = x * a                   # varied
    c = data[0] + a             # data is active by default: varied
    return b + c


def _by_source(fn, varied):
    return {op.result for op in fn.ops() if op.result is not None and op.result in varied}


def test_values_from_inactive_arguments_are_not_varied():
    fn = moonlite.capture(mixed, 0.5, 3, np.ones(2))
    varied = varied_values(fn, active=frozenset([0]), constant_arrays={fn.args[2]})
    casts = [op.result for op in fn.ops() if isinstance(op, ops.Cast)]
    assert casts and not any(c in varied for c in casts)
    muls = [op for op in fn.ops() if isinstance(op, ops.Mul)]
    assert any(op.result in varied for op in muls if fn.args[0] in op.operands)
    reads = [op.result for op in fn.ops() if isinstance(op, ops.GetItem)]
    assert reads and not any(r in varied for r in reads)  # a constant array's entries


def test_an_array_the_kernel_writes_is_varied_even_if_not_asked_for():
    @numba.njit
    def writes(theta, data):
        data[0] = data[0] * theta
        return data[0]

    fn = moonlite.capture(writes, 0.5, np.ones(2))
    varied = varied_values(fn, active=frozenset([0]))
    assert fn.args[1] in varied  # a write may put a varied value in it


def test_phis_reach_a_fixpoint():
    @numba.njit
    def loop(x, n):
        s = 0.0
        for i in range(n):
            s = s * 0.5 + x
        return s

    fn = moonlite.capture(loop, 0.5, 3)
    varied = varied_values(fn, active=frozenset([0]))
    phis = [op.result for op in fn.ops() if isinstance(op, ops.Phi) and op.result.type.is_float]
    assert phis and all(p in varied for p in phis)
    counters = [op.result for op in fn.ops() if isinstance(op, ops.Phi)
                and op.result.type.is_integer]
    assert counters and not any(c in varied for c in counters)


@numba.njit
def ranked_sum(x):
    # the weights come from x's length only: an int, and floats made from it, carry nothing
    return np.sum(np.sort(x) * np.arange(1.0, x.shape[0] + 1.0)) + float(np.argmax(x))


def test_ints_and_floats_made_from_them_are_not_varied():
    fn = moonlite.capture(ranked_sum, np.array([0.3, -0.2, 0.9]))
    varied = varied_values(fn)
    ints = [op.result for op in fn.ops() if op.result is not None and op.result.type.is_integer]
    assert ints and not any(v in varied for v in ints)
    aranges = [op for op in fn.ops() if isinstance(op, ops.Call) and op.callee is np.arange]
    assert aranges and not any(v in varied for op in aranges for v in op.operands)
    # reverse mode then takes np.arange(1.0, n + 1.0) as a constant instead of refusing it
    np.testing.assert_allclose(moonlite.grad(ranked_sum)(np.array([0.3, -0.2, 0.9])),
                               [2.0, 1.0, 3.0])
