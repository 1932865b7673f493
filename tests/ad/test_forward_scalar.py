"""Forward mode on scalar code: every rule and whole kernels against central finite differences.

The oracle is finite differences (several step sizes, the best one counts) and the verifier, never
another AD system. Rule cases live beside their rules (`moonlite.rules.scalar.RULE_CASES`).
"""

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite import rules
from moonlite.ad import forward_transform
from moonlite.driver import PASS_CONTEXT
from moonlite.ir import Builder, ops, types
from moonlite.rules.scalar import RULE_CASES
from moonlite.testing import check_rule
from moonlite.testing import check_jvp

STEPS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)


# --- the oracle ----------------------------------------------------------------------------------

def jvp_scalar(f, primals, tangents):
    """moonlite.jvp for scalar kernels, ignoring the tangents given for int/bool arguments."""
    tangents = [None if not _is_float(p) else (type(p)(t) if isinstance(p, np.floating)
                                               else float(t))
                for p, t in zip(primals, tangents)]
    return moonlite.jvp(f, primals, tangents)


def jvp_rule(f, primals):
    return moonlite.build_frule(f, *primals)


def _is_float(p):
    return isinstance(p, (float, np.floating))


def _shift(primals, tangents, h):
    return tuple(type(p)(p + h * t) if _is_float(p) else p for p, t in zip(primals, tangents))


def fd_estimates(f, primals, tangents):
    """Central differences of f along `tangents`, one estimate (per output) per step size."""
    out = []
    for h in STEPS:
        plus, minus = f(*_shift(primals, tangents, h)), f(*_shift(primals, tangents, -h))
        if isinstance(plus, tuple):
            out.append(tuple((float(a) - float(b)) / (2 * h) for a, b in zip(plus, minus)))
        else:
            out.append((float(plus) - float(minus)) / (2 * h))
    return out


def assert_jvp_matches_fd(f, primals, tangents, rtol=1e-6, atol=1e-8):
    primal_out, tangent_out = jvp_scalar(f, primals, tangents)
    expected = f(*primals)
    assert primal_out == pytest.approx(expected, rel=1e-14, abs=0)
    estimates = fd_estimates(f, primals, tangents)
    if isinstance(expected, tuple):
        for k, t in enumerate(tangent_out):
            _assert_close(t, [e[k] for e in estimates], rtol, atol)
    else:
        _assert_close(tangent_out, estimates, rtol, atol)
    return tangent_out


def _assert_close(ad, estimates, rtol, atol):
    ad = float(ad)
    best = min(estimates, key=lambda e: abs(e - ad))
    assert abs(best - ad) <= atol + rtol * abs(ad), \
        f"JVP {ad!r}, finite differences {estimates}"


def _tangents(primals, seed):
    rng = np.random.default_rng(seed)
    return tuple(float(rng.uniform(0.5, 1.5) * rng.choice([-1, 1])) if _is_float(p) else None
                 for p in primals)


# --- every rule ----------------------------------------------------------------------------------

_JITTED = {}


def _jit(case):
    if case.name not in _JITTED:
        _JITTED[case.name] = numba.njit(case.fn)
    return _JITTED[case.name]


@pytest.mark.parametrize("case", RULE_CASES, ids=[c.name for c in RULE_CASES])
def test_rule_through_the_rule_checker(case):
    """moonlite.testing.check_jvp: primal value and JVP against central finite differences."""
    f = _jit(case)
    for i, point in enumerate(case.points):
        check_jvp(f, *point, rtol=case.rtol, seed=i)
        for k, p in enumerate(point):  # each argument alone, so no term can hide another
            if _is_float(p):
                alone = tuple((type(q)(1.0 if j == k else 0.0) if _is_float(q) else None)
                              for j, q in enumerate(point))
                check_jvp(f, *point, rtol=case.rtol, tangents=alone)


def test_rules_cover_the_scalar_primitives():
    required = [ops.Add, ops.Sub, ops.Mul, ops.TrueDiv, ops.Pow, ops.Neg, ops.Pos, ops.Cast,
                ops.Select, math.sin, math.cos, math.tan, math.exp, math.log, math.sqrt,
                math.tanh, math.sinh, math.cosh, math.asin, math.acos, math.atan, math.atan2,
                math.hypot, math.expm1, math.log1p, math.log2, math.log10, math.erf, math.fabs,
                math.pow, math.floor, math.ceil, math.trunc, abs, min, max]
    missing = [p for p in required if rules.lookup_jvp(p) is None]
    assert not missing


def test_select_rule_on_built_ir():
    # capture makes `select` only for loop steps known at run time (ints); build a float one.
    b = Builder.new_function("pick", [types.float64, types.float64], ["x", "y"], types.float64)
    b.position_at_end(b.new_block())
    x, y = b.function.args
    cond = b.binary(ops.Lt, x, y)
    b.ret(b.select(cond, b.mul(x, x), b.call(math.sin, [y])))
    moonlite.verify(b.function)
    fwd = moonlite.verify(forward_transform(b.function))
    lowered = moonlite.lower(fwd)
    assert lowered(0.5, 2.0, 1.0, 1.0) == pytest.approx((0.25, 1.0))
    assert lowered(3.0, 2.0, 1.0, 1.0) == pytest.approx((math.sin(2.0), math.cos(2.0)))


# --- whole kernels -------------------------------------------------------------------------------

@numba.njit
def power_loop(x, n):
    acc = 1.0
    for i in range(n):
        acc = acc * x + math.sin(acc) / (i + 1)
    return acc


@numba.njit
def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-13 * a:  # trip count depends on the data
        x = 0.5 * (x + a / x)
    return x


@numba.njit
def piecewise(x, y):
    if x > y:
        z = x * y
    elif x > 0.0:
        z = math.exp(x) - y
    else:
        z = y ** 2
    return z + x


@numba.njit
def first_crossing(x, limit):
    s = 0.0
    for i in range(100):
        s += x * (i + 1)
        if s > limit:
            return s * x  # early return from inside the loop
    return s


@numba.njit
def mixed_args(x, n, flag, y):
    acc = y
    k = 0
    while k < n:
        acc = acc * 1.1 + n * x / (k + 1)
        k += 1
    if flag:
        acc = -acc
    return acc * y


@numba.njit
def nested_loops(x, y, n):
    total = 0.0
    for i in range(n):
        for j in range(i):
            total += math.tanh(x * i - y * j) ** 2
    return total


@numba.njit
def polar(x, y):
    return math.hypot(x, y), math.atan2(y, x)


@numba.njit
def assigned_on_one_path(x):
    if x > 0:
        y = x * 2.0
    if x > 0:
        return y * x  # y's phi has an undefined incoming value, and so does its tangent's
    return x


@numba.njit
def halvings(x):
    n = 0
    while x > 1.0:
        x /= 2.0
        n += 1
    return n


@numba.njit
def single(x):
    return x * x + np.float32(1.5) * x


KERNELS = [
    (power_loop, (0.7, 5)),
    (power_loop, (1.3, 0)),
    (newton_sqrt, (2.0,)),
    (newton_sqrt, (37.5,)),
    (piecewise, (1.5, 0.5)),
    (piecewise, (0.4, 0.9)),
    (piecewise, (-0.4, 0.9)),
    (first_crossing, (0.37, 10.0)),
    (first_crossing, (0.001, 10.0)),
    (mixed_args, (0.8, 4, True, 1.3)),
    (mixed_args, (0.8, 3, False, -0.6)),
    (nested_loops, (0.3, 0.2, 5)),
    (polar, (0.6, -1.4)),
    (assigned_on_one_path, (1.5,)),
    (assigned_on_one_path, (-1.5,)),
]


@pytest.mark.parametrize("kernel,primals", KERNELS,
                         ids=[f"{k.__name__}-{i}" for i, (k, _) in enumerate(KERNELS)])
def test_kernel_against_finite_differences(kernel, primals):
    assert_jvp_matches_fd(kernel, primals, _tangents(primals, seed=7))


@pytest.mark.parametrize("kernel,primals", KERNELS[::2],
                         ids=[f"{k.__name__}" for k, _ in KERNELS[::2]])
def test_transformed_ir_verifies_and_input_is_untouched(kernel, primals):
    fn = moonlite.capture(kernel, *primals)
    before = str(fn)
    fwd = forward_transform(fn)
    moonlite.verify(fwd)
    assert str(fn) == before
    moonlite.verify(fn)
    n_float = sum(isinstance(a.type, types.FloatType) for a in fn.args)
    assert len(fwd.args) == len(fn.args) + n_float
    assert len(fwd.blocks) == len(fn.blocks)


def test_known_derivatives_of_loop_kernels():
    # d/dx sqrt(a) by Newton's iteration: the tangent converges with the primal.
    _, d = jvp_scalar(newton_sqrt, (2.0,), (1.0,))
    assert d == pytest.approx(0.5 / math.sqrt(2.0), rel=1e-10)
    # first_crossing at x = 0.37 returns s * x with s = 0.37 * (1 + ... + 7) = 28 x
    out, d = jvp_scalar(first_crossing, (0.37, 10.0), (1.0, 0.0))
    assert out == pytest.approx(28 * 0.37 ** 2)
    assert d == pytest.approx(56 * 0.37)


def test_integer_output_has_no_tangent():
    assert jvp_scalar(halvings, (10.0,), (1.0,)) == (4, None)


def test_float32_keeps_its_width():
    out, d = jvp_scalar(single, (np.float32(2.0),), (1.0,))
    assert out == single(np.float32(2.0))
    assert d == pytest.approx(2 * 2.0 + 1.5)  # numba boxes float32 results as Python floats
    fwd = forward_transform(moonlite.capture(single, np.float32(2.0)))
    assert fwd.return_type == types.TupleType((types.float32, types.float32))


def test_lowered_rule_is_cached_per_types():
    first = jvp_rule(power_loop, (0.5, 3))
    jvp_scalar(power_loop, (0.9, 4), (1.0, None))
    assert jvp_rule(power_loop, (0.9, 4)) is first
    assert len(first.signatures) == 1
    assert jvp_rule(power_loop, (np.float32(0.5), 3)) is not first


def test_jvp_rule_is_callable_from_njit():
    rule = jvp_rule(piecewise, (1.5, 0.5))

    @numba.njit
    def caller(x, y):
        return rule(x, y, 1.0, 0.0)

    assert caller(1.5, 0.5) == jvp_scalar(piecewise, (1.5, 0.5), (1.0, 0.0))


# --- what the pass refuses -----------------------------------------------------------------------

@numba.njit
def uses_nan_to_num(x):
    return np.nan_to_num(x) * x  # no rule for np.nan_to_num


@numba.njit
def uses_complex(x):
    z = complex(x, 1.0)
    return (z * z).real


@numba.njit
def my_square(x):
    return x * x


@numba.njit
def calls_my_square(x):
    return my_square(x) + 1.0


def test_unknown_call_is_refused_clearly():
    with pytest.raises(moonlite.UnsupportedError) as err:
        jvp_scalar(uses_nan_to_num, (1.5,), (1.0,))
    message = str(err.value)
    assert "uses_nan_to_num(float64)" in message
    assert "np.nan_to_num" in message
    assert "test_forward_scalar.py:" in message and "return np.nan_to_num(x) * x" in message
    assert "custom rule" in message


def test_complex_arithmetic_is_refused_clearly():
    with pytest.raises(moonlite.UnsupportedError, match="complex") as err:
        forward_transform(moonlite.capture(uses_complex, 1.0))
    assert "uses_complex" in str(err.value)


def test_njit_callee_gets_a_derived_rule_and_a_custom_rule_wins():
    fwd = forward_transform(moonlite.capture(calls_my_square, 1.5), context=PASS_CONTEXT)
    assert any(isinstance(op, ops.Call) and op.callee.ir.name == "my_square_fwd"
               for op in fwd.ops())
    assert jvp_scalar(calls_my_square, (1.5,), (1.0,)) == (3.25, 3.0)
    # a deliberately wrong custom rule, to see that it is the one used
    rules.defjvp(my_square, lambda b, x, dx: b.mul(rules.const_like(b, 10, x), dx))
    try:
        fwd = forward_transform(moonlite.capture(calls_my_square, 1.5), context=PASS_CONTEXT)
        assert not any(isinstance(op, ops.Call) and hasattr(op.callee, "ir")
                       for op in fwd.ops())
        assert moonlite.lower(fwd)(1.5, 1.0) == (3.25, 10.0)
    finally:
        rules.unregister(my_square, "jvp")


def test_a_callee_met_without_a_pass_context_is_a_clear_error():
    # the passes get callees' rules from the driver (ad/context.py): never by importing it
    with pytest.raises(moonlite.MoonliteError, match="my_square.*no PassContext"):
        forward_transform(moonlite.capture(calls_my_square, 1.5))


@numba.njit
def updates_a_shifted_copy(x, y):
    z = x * 1.0  # a new array whose tangent was x's own
    z += y
    w = x + 0.5
    w *= y
    return np.sum(z * x) + np.sum(w)


def test_an_in_place_update_of_a_linear_result_leaves_the_operand_tangent():
    """`z = x * 1.0; z += y` wrote y's tangent into x's in forward mode (found by adversarial
    tests): a tangent passed as it is through a linear op is copied for an array result."""
    x, y = np.array([0.3, 0.7, 0.2]), np.array([0.5, -0.1, 0.9])
    _, dout = moonlite.jvp(updates_a_shifted_copy, (x, y), (np.ones(3), np.zeros(3)))
    assert dout == pytest.approx(np.sum(2 * x + y) + np.sum(y))
    check_rule(updates_a_shifted_copy, x, y, second_order=True)


@numba.njit
def unary_plus_then_written(x):
    y = x.copy()
    r = +y  # numba: a new array
    y[0] = x[1] ** 2
    return r[0] * 3.0 + y[0]


def test_the_tangent_of_unary_plus_is_a_new_array():
    """The rule of `+y` returned y's tangent itself, so the write into y changed r's tangent:
    jvp gave [0, 5.6] where [3, 1.4] is right (found by adversarial tests). The forward pass
    now copies a rule's tangent that is an operand's own, for a result that is not a view."""
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(moonlite.jacfwd(unary_plus_then_written)(x), [3.0, 1.4])
    check_rule(unary_plus_then_written, x, second_order=True)
