"""Forward mode gives loop values that depend on no input with a tangent a symbolic zero
tangent (`ad/activity.py`), not a tangent phi of zeros: checked on the IR and against central
differences."""

import numba
import numpy as np

import moonlite
from moonlite.ir import ops


@numba.njit
def polynomial_residual(x, k):
    t = 0.1 * k            # from an int: no tangent
    r = 1.0
    power = 1.0            # depends on t only: no tangent either
    for j in range(x.shape[0]):
        r -= x[j] * power
        power *= t
    return r * r


@numba.njit
def power_of_the_input(x, k):
    r = 1.0
    power = 1.0            # depends on x[0]: a tangent phi
    for j in range(x.shape[0]):
        r -= x[j] * power
        power *= x[0] * k
    return r * r


def _tangent_phis(f, *args) -> list:
    rule = moonlite.build_frule(f, *args)
    moonlite.verify(rule.ir)
    return [op.result.hint for op in rule.ir.ops()
            if isinstance(op, ops.Phi) and op.result.hint and op.result.hint.startswith("d")]


def _check_jvp(f, x, k):
    v = np.array([1.0, -2.0, 0.5, 3.0])
    _, d = moonlite.jvp(f, (x, k), (v, None))
    h = 1e-6
    fd = (f(x + h * v, k) - f(x - h * v, k)) / (2 * h)
    assert abs(d - fd) < 1e-7 * max(1.0, abs(fd))


def test_a_loop_value_independent_of_the_inputs_carries_no_tangent_phi():
    x = np.array([0.3, -0.2, 0.5, 0.1])
    phis = _tangent_phis(polynomial_residual, x, 7)
    assert not any(h.startswith("dpower") for h in phis) and any(h.startswith("dr") for h in phis)
    _check_jvp(polynomial_residual, x, 7)


def test_a_loop_value_that_depends_on_an_input_keeps_its_tangent_phi():
    x = np.array([0.3, -0.2, 0.5, 0.1])
    assert any(h.startswith("dpower") for h in _tangent_phis(power_of_the_input, x, 2))
    _check_jvp(power_of_the_input, x, 2)
