"""Regression tests for failures the differential fuzzer found (tests/fuzz, docs/fuzzing.md).

Each failure found keeps its seed here, with a hand-minimised kernel where there is one. Bugs not
fixed yet are strict xfails whose reason says what is wrong; when a fix lands the xfail turns into
an unexpected pass, and the mark (and the seed's entry in KNOWN_FAILURES) should go.

Found so far:

- LONG_LOOP_BUG (seeds 12, 34, 52, 59, ...: about one generated kernel in ten), fixed in
  capture/importer.py (`Importer._move_to_loop_header`) while the fuzzer was being written.

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
