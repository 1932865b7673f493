"""Forward mode through numpy: every rule in `moonlite.rules.numpy_rules` against central finite
differences (`moonlite.testing.check_jvp`: several step sizes, the best one counts), on arrays and
on scalars.

The cases live beside their rules (`NUMPY_RULE_CASES`); each names the arguments it
differentiates. Each case is checked along a random direction in all of them at once, and, when
there are several, along each one alone, so that no term can hide another.
"""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.rules import Attribute, Method, lookup_jvp
from moonlite.rules import numpy_rule_cases
from moonlite.ir import ops
from moonlite.testing import check_jvp


NUMPY_RULE_CASES = numpy_rule_cases()  # each rule file keeps its own cases


# --- tangents -------------------------------------------------------------------------------------

def _is_float(x) -> bool:
    if isinstance(x, np.ndarray):
        return np.issubdtype(x.dtype, np.floating)
    return isinstance(x, (float, np.floating))


def _random_like(x, rng):
    if isinstance(x, np.ndarray):
        return rng.standard_normal(x.shape).astype(x.dtype)
    return type(x)(rng.uniform(0.5, 1.5) * rng.choice([-1.0, 1.0]))


def _zero_like(x):
    return np.zeros_like(x) if isinstance(x, np.ndarray) else type(x)(0.0)


def _tangents(args, wrt, rng, only=None):
    """A random tangent for each differentiated argument (or only for `only`), zeros for the
    other float arguments, None for the rest."""
    chosen = wrt if only is None else (only,)
    return tuple(_random_like(a, rng) if i in chosen else (_zero_like(a) if _is_float(a) else None)
                 for i, a in enumerate(args))


def _copies(values):
    return tuple(v.copy() if isinstance(v, np.ndarray) else v for v in values)


# --- every rule ----------------------------------------------------------------------------------

_JITTED = {}


def _jit(case):
    if case.name not in _JITTED:
        _JITTED[case.name] = numba.njit(case.fn)
    return _JITTED[case.name]


_IDS = [c.name for c in NUMPY_RULE_CASES]


@pytest.mark.parametrize("case", NUMPY_RULE_CASES, ids=_IDS)
def test_rule_against_finite_differences(case):
    rng = np.random.default_rng(0)
    args = case.args(rng)
    assert all(_is_float(args[i]) for i in case.wrt), "wrt must name float arguments"
    check_jvp(_jit(case), *args, rtol=case.rtol, tangents=_tangents(args, case.wrt, rng))


@pytest.mark.parametrize("case", NUMPY_RULE_CASES, ids=_IDS)
def test_tangent_has_the_primal_shape_and_dtype(case):
    rng = np.random.default_rng(0)
    args = case.args(rng)
    out, dout = moonlite.jvp(_jit(case), _copies(args), _tangents(args, case.wrt, rng))
    assert np.shape(dout) == np.shape(out)
    if isinstance(out, np.ndarray):
        assert isinstance(dout, np.ndarray) and dout.dtype == out.dtype


_MULTI = [c for c in NUMPY_RULE_CASES if len(c.wrt) > 1]


@pytest.mark.parametrize("case", _MULTI, ids=[c.name for c in _MULTI])
def test_each_argument_alone(case):
    rng = np.random.default_rng(1)
    args = case.args(rng)
    for k in case.wrt:
        check_jvp(_jit(case), *args, rtol=case.rtol,
                  tangents=_tangents(args, case.wrt, rng, only=k))


def test_cases_are_named_uniquely():
    assert len(set(_IDS)) == len(_IDS)


def test_rules_cover_the_numpy_primitives():
    required = [np.sin, np.cos, np.tan, np.exp, np.expm1, np.exp2, np.log, np.log1p, np.log2,
                np.log10, np.sqrt, np.sinh, np.cosh, np.tanh, np.arcsin, np.arccos, np.arctan,
                np.arctan2, np.hypot, np.abs, np.fabs, np.power, np.square, np.maximum,
                np.minimum, np.where, np.clip, np.floor, np.ceil, np.trunc, np.sign, np.round,
                np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.dot, np.outer,
                np.transpose, np.copy, np.ravel, np.reshape, np.cumsum, np.linalg.norm, np.trace,
                ops.MatMul, Attribute("T"),
                *[Method(m) for m in ("sum", "mean", "prod", "max", "min", "copy", "ravel",
                                      "reshape", "transpose", "dot", "cumsum")]]
    assert [p for p in required if lookup_jvp(p) is None] == []


@pytest.mark.parametrize("fn", [np.sin, np.sqrt, np.tanh, np.arcsin, np.exp2, np.power])
def test_numpy_rules_emit_no_math_calls(fn):
    # scalar.py's rules emit math.* calls, which numba cannot type on arrays; numpy_rules must
    # have replaced them.
    from moonlite.ir import Builder, types
    arr = types.ArrayType(types.float64, 1, "C")
    argtypes = [arr] * (2 if fn is np.power else 1)
    b = Builder.new_function("f", argtypes * 2, [f"a{i}" for i in range(2 * len(argtypes))], arr)
    b.position_at_end(b.new_block())
    args = b.function.args
    n = len(argtypes)
    tangent = lookup_jvp(fn)(b, tuple(args[:n]), tuple(args[n:]), {})
    assert tangent.type == arr
    callees = {getattr(op, "callee", None) for block in b.function.blocks for op in block.ops}
    assert not any(getattr(c, "__module__", None) == "math" for c in callees)


@numba.njit
def promoted(x):
    return 1.0 + x * x  # a float64 array in numba for a float32 x (a float32 one in NumPy 2)


def test_the_tangent_of_an_array_numba_promotes_has_the_primals_dtype():
    # the rule computes dx * x + x * dx in float32: the pass converts it to the output's float64
    # (forward over reverse pushed the float32 tangent onto a tape of float64 arrays)
    x = np.array([0.5, -1.25, 2.0], dtype=np.float32)
    v = np.array([1.0, 0.5, -2.0], dtype=np.float32)
    out, tangent = moonlite.jvp(promoted, (x,), (v,))
    assert out.dtype == tangent.dtype == np.float64
    np.testing.assert_allclose(tangent, 2.0 * x.astype(np.float64) * v, rtol=1e-6)
    check_jvp(promoted, x, rtol=1e-3, atol=1e-4)
