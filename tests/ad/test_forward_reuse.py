"""A forward rule that asks for its primal call again reuses the primal's result."""

import numba
import numpy as np

import moonlite
from moonlite.driver import derived_reverse_rule
from moonlite.ad.forward import forward_transform
from moonlite.ir import ops
from moonlite.ir.verifier import verify
from moonlite.testing import check_hvp, check_jvp, check_vjp


@numba.njit
def exp_then_overwrite(x):
    y = np.exp(x)
    y[0] = 2.0 * y[1]  # written after the rule read it: the tangent must not see this write
    return y


@numba.njit
def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def _calls(fn, callee):
    return [op for block in fn.blocks for op in block.ops
            if isinstance(op, ops.Call) and op.callee is callee]


def test_the_rule_of_exp_reads_the_primal_result():
    fn = moonlite.capture(exp_then_overwrite, np.ones(3))
    fwd = verify(forward_transform(fn, 2))
    assert len(_calls(fwd, np.exp)) == 1


def test_a_reused_result_written_afterwards_keeps_tangents_right():
    x = np.array([0.3, -0.2, 0.9])
    out, dout = moonlite.jvp(exp_then_overwrite, (x.copy(),), (np.array([1.0, 2.0, 3.0]),))
    np.testing.assert_allclose(out, [2.0 * np.exp(-0.2), np.exp(-0.2), np.exp(0.9)])
    np.testing.assert_allclose(dout, [4.0 * np.exp(-0.2), 2.0 * np.exp(-0.2), 3.0 * np.exp(0.9)])
    check_jvp(exp_then_overwrite, x)


def test_elementwise_adjoints_need_no_ones_arrays():
    x = np.random.default_rng(0).standard_normal(7)
    rule = derived_reverse_rule(logsumexp, (numba.typeof(x),))
    assert _calls(rule.ir, np.ones_like) == []
    check_vjp(logsumexp, x)
    check_hvp(logsumexp, x)
