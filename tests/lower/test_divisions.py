"""Scalar divisions as lowered (`lower/emit.py`): derived code compiles with numba's default
"python" error model, where a zero divisor raises; the primal's own divisions (`checked`) must
raise there, and every other one (what AD passes add) must give numpy's inf or nan."""

import math

import numpy as np
import pytest

import moonlite
from moonlite.ir import verify
from moonlite.ir.parser import parse_function


def _lowered(op: str, checked: bool, rhs_type: str = "float64", lhs_type: str = "float64",
             out_type: str = "float64"):
    text = f"""
func quotient(%x: {lhs_type}, %y: {rhs_type}) -> {out_type} {{
bb0:
  %q = {op} {'checked ' if checked else ''}%x, %y : {out_type}
  ret %q
}}
"""
    return moonlite.lower(verify(parse_function(text)))


@pytest.mark.parametrize("op", ["truediv", "floordiv", "mod"])
def test_a_checked_scalar_division_raises_on_a_zero_divisor(op):
    f = _lowered(op, checked=True)
    assert f(7.0, 2.0) == {"truediv": 3.5, "floordiv": 3.0, "mod": 1.0}[op]
    with pytest.raises(ZeroDivisionError):
        f(1.0, 0.0)


@pytest.mark.parametrize("op, at_zero", [("truediv", math.inf), ("floordiv", math.inf),
                                         ("mod", math.nan)])
def test_an_unchecked_scalar_division_gives_numpys_answer(op, at_zero):
    f = _lowered(op, checked=False)
    assert f(7.0, 2.0) == {"truediv": 3.5, "floordiv": 3.0, "mod": 1.0}[op]
    with np.errstate(all="ignore"):
        want = {"truediv": np.true_divide, "floordiv": np.floor_divide, "mod": np.mod}[op](
            np.float64(1.0), np.float64(0.0))
    got = f(1.0, 0.0)
    assert (math.isnan(got) and math.isnan(want)) or got == want
    assert (math.isnan(got) and math.isnan(at_zero)) or got == at_zero


def test_an_unchecked_integer_division_does_not_raise():
    f = _lowered("floordiv", checked=False, lhs_type="int64", rhs_type="int64",
                 out_type="int64")
    assert f(7, 2) == 3
    assert f(7, 0) == 0  # numba's numpy error model
    g = _lowered("floordiv", checked=True, lhs_type="int64", rhs_type="int64", out_type="int64")
    with pytest.raises(ZeroDivisionError):
        g(7, 0)


def test_an_unchecked_integer_power_with_a_negative_exponent_does_not_raise():
    f = _lowered("pow", checked=False, lhs_type="int64", rhs_type="int64", out_type="int64")
    assert f(1, -2) == 1
    assert f(0, -2) == -2 ** 63  # numba's answer under numpy's error model
    g = _lowered("pow", checked=True, lhs_type="int64", rhs_type="int64", out_type="int64")
    with pytest.raises(ZeroDivisionError):
        g(0, -2)
    # a float to a negative integer power raises at 0 under either model (numba compiles its
    # `1 / r` with its own flags); moonlite's rule for x ** n never evaluates it where the
    # primal does not (d x**0 at 0 is 0)
    h = _lowered("pow", checked=False, rhs_type="int64")
    assert h(2.0, -2) == 0.25
    with pytest.raises(ZeroDivisionError):
        h(0.0, -2)


def test_derivatives_at_a_singular_point_are_inf_while_the_primal_raises():
    import numba

    @numba.njit
    def root_over(x, y):
        return math.sqrt(x) / y

    dx, dy = moonlite.grad(root_over, (0, 1))(0.0, 2.0)
    assert dx == math.inf and dy == 0.0  # d sqrt(x) at 0, an unchecked division inside
    with pytest.raises(ZeroDivisionError):
        moonlite.grad(root_over, (0, 1))(1.0, 0.0)  # the primal's own division
