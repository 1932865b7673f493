"""Debug mode: the verifier after every pass, run-time shape checks of tangents at rule
boundaries, errors that show the IR around the failure."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite import rules
from moonlite import driver
from moonlite.errors import VerificationError


@numba.njit
def doubled(x):
    return x * 2.0


def _tangent_of_shape_1(b, primals, tangents, kwargs):
    # a wrong rule: its tangent has shape (1,) and would broadcast silently
    return b.call(np.ones, [b.const(1, moonlite.ir.types.int64)])


@numba.njit
def uses_doubled(x):
    y = doubled(x)
    return np.sum(y * y)


@pytest.fixture
def wrong_rule():
    rules.defrule(doubled, _tangent_of_shape_1)
    driver.clear_cache()
    yield
    rules.unregister(doubled, "jvp")
    driver.clear_cache()


def test_switch_clears_derived_rules():
    moonlite.grad(uses_doubled)(np.ones(3))
    with moonlite.debug_mode():
        assert moonlite.debug_enabled()
        assert driver.cached_rule_count() == 0
    assert not moonlite.debug_enabled()


def test_wrong_tangent_shape_is_caught_in_debug_mode_only(wrong_rule):
    x = np.ones(3)
    _, silently_wrong = moonlite.jvp(uses_doubled, (x,), (x,))
    assert silently_wrong != pytest.approx(24.0)  # what the check exists for
    with moonlite.debug_mode():
        with pytest.raises(ValueError) as info:
            moonlite.jvp(uses_doubled, (x,), (x,))
    message = str(info.value)
    assert "has a shape different from its primal's" in message
    assert "y = doubled(x)" in message                     # the source line
    assert "-> %y = call" in message and "IR around it" in message


def test_debug_mode_gives_the_same_derivatives():
    x = np.array([0.3, -1.2, 2.0])
    plain = moonlite.jvp(uses_doubled, (x,), (x,)), moonlite.grad(uses_doubled)(x)
    with moonlite.debug_mode():
        checked = moonlite.jvp(uses_doubled, (x,), (x,)), moonlite.grad(uses_doubled)(x)
    assert plain[0] == checked[0]
    np.testing.assert_array_equal(plain[1], checked[1])


def test_a_pass_that_breaks_the_ir_is_named(monkeypatch):
    real = driver.forward_transform

    def broken(fn, width, active, **kwargs):
        out = real(fn, width, active, **kwargs)
        block = out.blocks[-1]
        block.ops.remove(block.ops[-1])  # drop a terminator
        return out

    monkeypatch.setattr(driver, "forward_transform", broken)
    driver.clear_cache()
    with pytest.raises(VerificationError, match="invalid after forward mode"):
        moonlite.jvp(uses_doubled, (np.ones(2),), (np.ones(2),))
    driver.clear_cache()


def test_environment_variable_switches_it_on():
    import subprocess
    import sys
    code = "import moonlite; print(moonlite.debug_enabled())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "MOONLITE_DEBUG": "1"})
    assert out.stdout.strip() == "True"
