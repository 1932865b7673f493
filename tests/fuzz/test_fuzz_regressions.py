"""Regression tests for failures the differential fuzzer found (tests/fuzz, docs/fuzzing.md).

Each failure found keeps its seed here, with a hand-minimised kernel where there is one. Bugs not
fixed yet are strict xfails whose reason says what is wrong; when a fix lands the xfail turns into
an unexpected pass, and the mark (and the seed's entry in KNOWN_FAILURES) should go.

Found so far:

- LONG_LOOP_BUG (seeds 12, 34, 52, 59, ...: about one generated kernel in ten), fixed in
  capture/importer.py (`Importer._move_to_loop_header`) while the fuzzer was being written.

- Seed 3028 (campaign 0-9999): not a moonlite bug. The kernel grows an array entry to 4e59 and
  then computes `a[i] += exp(-a[i]**2) - (x + a[i])`; float64 loses x in `x + a[i]`, so finite
  differences (of the computed function) and AD (of the written one) disagree, and forward mode's
  own tangents cancel 1e60-sized terms. The checker now measures forward mode's rounding noise
  (jvp linearity) when a comparison fails and skips such points as "ill_conditioned"
  (check.py, `skip_if_rounding_explains`).

`KNOWN_FAILURES` maps seed -> reason for every generated seed that fails because of a bug listed
here; the quick profile (test_fuzz_quick.py) expects those seeds to fail (strict xfail).
"""

import math
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import moonlite

from .check import check_case
from .generator import generate_kernel
from .run import ROOT, _env

# what the bug was (fixed): kept as the description of what the tests below guard against
LONG_LOOP_BUG = (
    "capture of a for-loop whose body is longer than 255 bytecode units: CPython 3.11 gives its "
    "FOR_ITER/JUMP_BACKWARD an EXTENDED_ARG prefix, numba then puts an empty block between the "
    "back edge and the block holding iternext, and Importer._fill_phis "
    "(capture/importer.py) only gives the loop-index phi the incremented index for predecessors "
    "the iternext block dominates; that block's only predecessor is the empty join block, so the "
    "phi gets just the start value, the increment is dead code and the captured loop never ends "
    "(every moonlite mode hangs, including moonlite.lower(moonlite.capture(f)))")

KNOWN_FAILURES: dict = {}  # seed -> reason, for open bugs


def _runs(code: str, timeout: float = 120.0) -> str:
    """Run `code` in a fresh interpreter (a hang must not hang the test run); its stdout, or
    raise AssertionError on a timeout or an error."""
    try:
        p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), text=True,
                           capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"did not finish within {timeout} s (the captured code hangs)")
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


def _long_loop_source(lines: int) -> str:
    body = "\n".join(f"        s = s + math.sin(x * {k}.0 + a[i])" for k in range(1, lines + 1))
    return ("import math\nimport numba\nimport numpy as np\n\n\n@numba.njit\n"
            f"def long_body(x, a):\n    s = 0.0\n    for i in range(a.shape[0]):\n{body}\n"
            "    return s\n")


_LONG_LOOP_CHECK = """
import sys, numpy as np, moonlite
from tests.fuzz.generator import case_from_source
src = {src!r}
case = case_from_source(src, "long_body", ("float", "array"), 3)
args = (0.3, np.array([0.1, -0.4, 0.7]))
expected = case.func(*args)
low = moonlite.lower(moonlite.capture(case.func, *args))
assert abs(low(*args) - expected) < 1e-12, (low(*args), expected)
out, dout = moonlite.jvp(case.func, args, (1.0, np.zeros(3)))
g = moonlite.grad(case.func)(*args)
assert abs(dout - g) < 1e-9 * (1 + abs(g)), (dout, g)
print("ok")
"""


def test_short_for_loop_body_control():
    """The same kernel with a body short enough to need no EXTENDED_ARG works."""
    assert "ok" in _runs(_LONG_LOOP_CHECK.format(src=_long_loop_source(4)))


def _assert_loop_phis_have_back_edges(fn) -> None:
    """Every phi of a captured function has an incoming value per predecessor of its block, and
    no phi is fed by one block only (the symptom of the long-loop bug: the index phi gets just the
    start value). Checked on the IR first, so a regression fails at once instead of hanging."""
    from moonlite.ir import ops
    for op in fn.ops():
        if isinstance(op, ops.Phi):
            assert len(op.incoming_blocks) >= 2, f"phi with a single incoming edge:\n{fn}"


def test_long_for_loop_body_minimal():
    """Found by seed 34 (and 12); minimised: one for-loop with 30 statements in its body."""
    from .generator import case_from_source
    case = case_from_source(_long_loop_source(30), "long_body", ("float", "array"), 3)
    args = (0.3, np.array([0.1, -0.4, 0.7]))
    _assert_loop_phis_have_back_edges(moonlite.capture(case.func, *args))
    assert "ok" in _runs(_LONG_LOOP_CHECK.format(src=_long_loop_source(30)))


@pytest.mark.parametrize("seed", [12, 34])
def test_seed_long_for_loop(seed):
    """Generated kernels whose outer loop body needs EXTENDED_ARG (seed 34: four loops nested in
    one outer loop; seed 12: nested loops calling helpers): their lowered capture never
    returns."""
    case = generate_kernel(seed)
    args = case.make_args(np.random.default_rng(0))
    _assert_loop_phis_have_back_edges(moonlite.capture(case.func, *args))
    code = textwrap.dedent("""
        import numpy as np, moonlite
        from tests.fuzz.generator import generate_kernel
        case = generate_kernel(%d)
        args = case.make_args(np.random.default_rng(0))
        expected = case.func(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        low = moonlite.lower(moonlite.capture(case.func, *args))
        assert abs(low(*args) - expected) < 1e-9 * (1 + abs(expected))
        print("ok")
    """) % seed
    assert "ok" in _runs(code)


def test_seed_34_checks_pass():
    """Seed 34 through the whole differential check (jvp, grad) now that its loop ends."""
    result = check_case(generate_kernel(34))
    assert result.status == "ok", result


def test_seed_3028_cancellation_of_huge_values_is_skipped_as_ill_conditioned():
    """Found by the campaign at seed 3028: jvp -67386.8, grad -68735.9 and finite differences
    -67349.4 along one direction. jvp(t1) + jvp(t2) differs from jvp(t1 + t2) by about 40 there,
    so no comparison at this point can hold to 2e-4."""
    result = check_case(generate_kernel(3028))
    assert (result.status, result.kind) == ("skip", "ill_conditioned"), result
    assert "wrong_jvp" in result.message


def _cancelling_source(big: str) -> str:
    return f"""
import math
import numba


@numba.njit
def cancelling(a, x):
    n = len(a)
    for i in range(n):
        a[i] = a[i] * {big} * math.exp(x)
        a[i] += math.sin(x) - (x + a[i])
    return a.sum() + x
"""


def _cancelling_case(big: str):
    from .generator import case_from_source
    return case_from_source(_cancelling_source(big), "cancelling", ("array", "float"), 3)


def test_cancellation_minimal_is_skipped_as_ill_conditioned():
    """Minimised from seed 3028: a value of about 1e13 that depends on x cancels against itself
    (written math: a[i] = sin x - x; float64 keeps x only to about 1e-3). Forward mode's
    tangents of 1e13 cancel too, with noise above the tolerance, so the point is skipped."""
    result = check_case(_cancelling_case("1e13"))
    assert (result.status, result.kind) == ("skip", "ill_conditioned"), result


@pytest.mark.xfail(strict=True, reason=(
    "the checker cannot tell this cancellation from a reverse-mode bug: with values of 1e40, "
    "float64 computes a[i] = 0 exactly and so does forward mode's tangent (it rounds like the "
    "primal, no noise), so jvp agrees with finite differences of the computed function while "
    "grad gives the derivative of the written math; the checker reports wrong_grad, which a "
    "person has to read (docs/fuzzing.md, Triage)"))
def test_clean_cancellation_is_skipped_as_ill_conditioned():
    result = check_case(_cancelling_case("1e40"))
    assert (result.status, result.kind) == ("skip", "ill_conditioned"), result


_WRONG_RULE = """
import math
import numba


@numba.njit
def inner(x):
    return math.sin(x) * x


@numba.njit
def outer(a, x):
    s = 0.0
    for i in range(len(a)):
        s += inner(a[i] * x)
    return s
"""


def test_rounding_test_does_not_hide_a_wrong_derivative():
    """A forward rule 1% off is a wrong linear map: its jvp stays linear, so the rounding test
    finds no noise and the failure stands (the guard against skipping real bugs)."""
    from .generator import case_from_source
    case = case_from_source(_WRONG_RULE, "outer", ("array", "float"), 4)
    inner = case.func.py_func.__globals__["inner"]

    @numba.njit
    def off_by_one_percent(primals, tangents):
        (x,), (dx,) = primals, tangents
        return math.sin(x) * x, 1.01 * dx * (math.cos(x) * x + math.sin(x))

    moonlite.custom_jvp(inner, off_by_one_percent)
    result = check_case(case)
    assert (result.status, result.stage, result.kind) == ("fail", "jvp", "wrong_jvp"), result


@pytest.mark.parametrize("seed", [78, 174])
def test_wide_seed_checks_pass(seed):
    """Wide-profile failures of the campaign on 71f3e21 (docs/fuzzing.md, Findings): 78 gave a
    nan gradient (0 * nan from entries `np.where` masks), 174 a wrong one (the adjoint of
    `np.tril(A, k=-1)` ignored k)."""
    result = check_case(generate_kernel(seed, "wide"))
    assert result.status == "ok", result


def test_wide_seed_20036_checks_pass():
    """A regression of the reverse-speed work, caught by the wide campaign from seed 20000
    (docs/fuzzing.md, Findings): a read recomputed after only some writes were undone."""
    result = check_case(generate_kernel(20036, "wide"))
    assert result.status == "ok", result


def test_wide_seed_20221_checks_pass():
    """grad returned nan where central differences give 28.5 (wide seed 20221): x0 overflows
    to -inf in a double loop, the result reads it only through tanh(min(x0, 0)), whose
    derivative there is 0, and the pullback multiplied that zero adjoint by infinite partials.
    Fixed by the rerun with zero-guarded products (ad/nan_retry.py)."""
    result = check_case(generate_kernel(20221, "wide"))
    assert result.status == "ok", result


@pytest.mark.parametrize("seed", [40, 57])
def test_wide_seeds_writing_overlapping_slices_pass(seed):
    """The slices group (gen_slices.py) was added after a reverse-mode bug in kernels we did not
    generate: a write whose value views the region it overwrites (`M[i][:] += c * M[i - 1]`,
    `a[1:] = a[:-1]`) lost its adjoint. On the code before the fix (07beed9) seeds 9, 40 and 57
    failed the dot-product identity (grad -8.56 against -4.17 for seed 40)."""
    result = check_case(generate_kernel(seed, "wide"))
    assert result.status == "ok", result
