"""The wide fuzzing profile (docs/fuzzing.md, "The wide profile"): generated kernels that mix
the default profile's statements with constructs it never writes (keyword and default arguments
of helpers, floats in namedtuples and jitclass instances, sums along axes and cumulative sums,
arrays made from tuples of floats, `fill`, matrices with `trace`/`triu`/`tril`, square roots
masked at exact zeros, sentinels in soft minima, `x ** 0.0` at x = 0), each mode checked against
finite differences.

In this profile a moonlite refusal (an UnsupportedError naming the construct) is recorded, not
failed; a wrong number is a failure, counted apart ("modes_disagree_on_refusal") when another
mode refused the same kernel; any other exception is a "crash". Campaigns:
`python -m tests.fuzz.run --profile wide --count 1000`.

Budget: WIDE_QUICK_SEEDS are small kernels that together write every construct of
WIDE_CORE_FEATURES (those named in issue reports of silently wrong derivatives); none gets the
dense Hessian (seed % 20 == 7), one gets hvp, one vjp. About 50 s on one core (the file runs
in a process of its own) while moonlite still refuses namedtuples and jitclasses; compiling
derivatives it refuses today will add to that.
Seeds 0-199 of the profile write every construct of WIDE_FEATURES (a generator test below).
The checker's own tests patch moonlite's API to pretend refusals and wrong numbers on a tiny
kernel.
"""

import numpy as np
import pytest

import moonlite
from moonlite.errors import MoonliteError, UnsupportedError, VerificationError

from .check import _random_dirs, check_case
from .generator import WIDE_FEATURES, case_from_source, generate_kernel, generate_source
from .run import modes_for

WIDE_CORE_FEATURES = frozenset({
    "kwarg_call", "default_arg", "namedtuple_attr", "namedtuple_index", "jitclass_field",
    "jitclass_method", "sum_axis_1d", "sum_axis_2d", "sum_method_axis", "cumsum_axis",
    "array_of_tuple", "asarray_of_tuple", "sum_of_tuple", "mean_of_tuple_array", "fill",
    "trace_offset", "triu", "tril", "mask_where_sqrt", "mask_sqrt_loop", "fixed_zero_input",
    "sentinel_min", "softmin_exp", "pow_zero", "matrix_write"})

# chosen greedily (most uncovered core constructs per line of kernel) among seeds 0-299 without
# a dense Hessian, then those the others cover dropped; 235 is a small seed with hvp
WIDE_QUICK_SEEDS = [154, 60, 217, 4, 1, 85, 96, 235]


@pytest.mark.parametrize("seed", WIDE_QUICK_SEEDS, ids=lambda s: f"wide{s}")
def test_wide_quick_kernel(seed):
    case = generate_kernel(seed, "wide")
    result = check_case(case, **modes_for(seed))
    refused = "; ".join(f"{r['stage']}: {r['message'].splitlines()[0]}" for r in result.refusals)
    assert result.status != "fail", (
        f"wide seed {seed}: {result.stage} {result.kind}\n{result.message}\n"
        f"refused: {refused or 'none'}\nkernel ({case.path}):\n{case.source}")


# --------------------------------------------------------------------------------------------
# the generator


def test_wide_quick_seeds_cover_the_core_constructs():
    assert WIDE_CORE_FEATURES <= WIDE_FEATURES
    seen = set()
    for seed in WIDE_QUICK_SEEDS:
        seen |= generate_source(seed, "wide")[4]
    assert WIDE_CORE_FEATURES <= seen, sorted(WIDE_CORE_FEATURES - seen)
    assert not any(seed % 20 == 7 for seed in WIDE_QUICK_SEEDS)  # no dense Hessian: too slow


def test_every_wide_construct_appears_in_a_small_range_of_seeds():
    counts = {f: 0 for f in WIDE_FEATURES}
    for seed in range(200):
        for f in generate_source(seed, "wide")[4] & WIDE_FEATURES:
            counts[f] += 1
    rare = {f: c for f, c in counts.items() if c < 2}
    assert not rare, f"constructs written by fewer than 2 of seeds 0-199: {rare}"


def test_wide_generator_is_deterministic():
    for seed in (0, 7, 123, 9999):
        assert generate_source(seed, "wide") == generate_source(seed, "wide")
    assert generate_source(1, "wide")[0] != generate_source(2, "wide")[0]
    assert generate_source(5, "wide")[0] != generate_source(5)[0]


def test_wide_kernels_declare_their_fixed_zeros():
    """FIXED_ZEROS names arguments of the kernel and entries inside them; make_args writes 0.0
    there and every random direction of the checker is 0 there."""
    seen_fixed = False
    for seed in range(40):
        source, names, kinds, n, _ = generate_source(seed, "wide")
        assert "FIXED_ZEROS = " in source
        ns: dict = {}
        exec(source.split("FIXED_ZEROS = ", 1)[1].splitlines()[0].join(["f = ", ""]), ns)
        for name, entries in ns["f"].items():
            kind = kinds[names.index(name)]
            size = {"float": 1, "array": n, "matrix": n * n}[kind]
            assert all(0 <= e < size for e in entries), (seed, name, entries)
            seen_fixed = True
    assert seen_fixed
    case = generate_kernel(next(s for s in range(40)
                                if any(k == "array" for k in generate_source(s, "wide")[2])
                                and generate_kernel(s, "wide").fixed), "wide")
    rng = np.random.default_rng(3)
    args = case.make_args(rng)
    dirs = _random_dirs(case, args, rng)
    for i, entries in case.fixed.items():
        if case.arg_kinds[i] == "float":
            assert args[i] == 0.0 and dirs[i] == 0.0
        else:
            assert np.all(args[i].flat[list(entries)] == 0.0)
            assert np.all(dirs[i].flat[list(entries)] == 0.0)


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="unknown fuzz profile"):
        generate_source(0, "narrow")


# --------------------------------------------------------------------------------------------
# the checker: refusals, wrong numbers beside them, crashes (moonlite's API patched)

_TINY = """
import math

import numba
import numpy as np


@numba.njit
def tiny(x, a):
    return math.sin(x) * np.sum(a * a) + x * a[0]
"""


def _tiny(profile="wide", fixed=None):
    return case_from_source(_TINY, "tiny", ("float", "array"), 3, seed=11, profile=profile,
                            fixed=fixed)


def _refuse(*args, **kwargs):
    raise UnsupportedError("a construct this test pretends not to know", function="tiny",
                           hint="nothing: it is a test")


def _refusing_grad(f, argnums=0):
    return _refuse


def _scaled(api, factor):
    """moonlite's `api` (grad or hvp) with its numbers multiplied by `factor`: a wrong rule."""
    real = getattr(moonlite, api)

    def scale(out):
        if isinstance(out, tuple):
            return tuple(None if x is None else scale(x) for x in out)
        return np.asarray(out) * factor if isinstance(out, np.ndarray) else out * factor

    if api == "grad":
        return lambda f, argnums=0: (lambda *a: scale(real(f, argnums=argnums)(*a)))
    return lambda f, primals, tangents: scale(real(f, primals, tangents))


def test_refused_by_every_mode_is_refused_not_failed(monkeypatch):
    monkeypatch.setattr(moonlite, "jvp", _refuse)
    monkeypatch.setattr(moonlite, "grad", _refusing_grad)
    result = check_case(_tiny())
    assert (result.status, result.kind, result.stage) == ("refused", "refused", "jvp"), result
    assert [r["stage"] for r in result.refusals] == ["jvp", "grad"]
    assert result.refusals[0]["error"] == "UnsupportedError"
    assert "pretends not to know" in result.refusals[0]["message"]
    assert result.checks == []


def test_refusal_is_a_failure_in_the_default_profile(monkeypatch):
    monkeypatch.setattr(moonlite, "jvp", _refuse)
    result = check_case(_tiny(profile="default"))
    assert (result.status, result.kind, result.stage) == ("fail", "refused", "jvp"), result
    assert [r["stage"] for r in result.refusals] == ["jvp"]  # stops at the first failing mode


def test_right_numbers_beside_a_refusal_are_fine(monkeypatch):
    monkeypatch.setattr(moonlite, "jvp", _refuse)
    result = check_case(_tiny())
    assert (result.status, result.kind) == ("refused", "refused"), result
    assert result.checks == ["grad"]


def test_wrong_number_beside_a_refusal(monkeypatch):
    monkeypatch.setattr(moonlite, "jvp", _refuse)
    monkeypatch.setattr(moonlite, "grad", _scaled("grad", 1.01))
    result = check_case(_tiny())
    assert (result.status, result.kind, result.stage) == (
        "fail", "modes_disagree_on_refusal", "grad"), result
    assert "jvp refused" in result.message and "wrong_grad" in result.message


def test_wrong_number_without_refusal(monkeypatch):
    monkeypatch.setattr(moonlite, "grad", _scaled("grad", 1.01))
    result = check_case(_tiny())
    assert (result.status, result.kind, result.stage) == ("fail", "wrong_grad", "grad"), result


@pytest.mark.parametrize("error, kind", [
    (TypeError("an operand numba did not expect"), "crash"),
    (ZeroDivisionError("float division by zero"), "crash"),
    (VerificationError("the IR is invalid after forward mode"), "internal_error"),
    (MoonliteError(""), "unclear_refusal"),
])
def test_other_errors_are_failures(monkeypatch, error, kind):
    def raising(*args, **kwargs):
        raise error
    monkeypatch.setattr(moonlite, "jvp", raising)
    result = check_case(_tiny())
    assert (result.status, result.kind, result.stage) == ("fail", kind, "jvp"), result
    if kind != "unclear_refusal":
        assert type(error).__name__ in result.message


def test_nan_at_an_exact_zero_is_a_wrong_number(monkeypatch):
    """a[2] is held at 0.0 and never moved, yet a gradient of nan there shows (nan * 0 is nan):
    the strong-zero rule ("the derivative at a masked entry is 0, never nan")."""
    real = moonlite.grad

    def nan_at_fixed(f, argnums=0):
        def call(*args):
            out = real(f, argnums=argnums)(*args)
            return tuple(np.where(np.arange(3) == 2, np.nan, g) if np.ndim(g) else g
                         for g in out)
        return call
    monkeypatch.setattr(moonlite, "grad", nan_at_fixed)
    result = check_case(_tiny(fixed={1: (2,)}))
    assert (result.status, result.kind) == ("fail", "wrong_grad"), result
    assert "nan" in result.message


def test_vjp_and_hvp_are_checked_by_finite_differences_when_grad_refuses(monkeypatch):
    monkeypatch.setattr(moonlite, "grad", _refusing_grad)
    result = check_case(_tiny(), vjp=True, hvp=True)
    assert (result.status, result.kind) == ("refused", "refused"), result
    assert result.checks == ["jvp", "vjp", "hvp"], result
    monkeypatch.setattr(moonlite, "hvp", _scaled("hvp", 1.01))
    result = check_case(_tiny(), hvp=True)
    assert (result.status, result.kind, result.stage) == (
        "fail", "modes_disagree_on_refusal", "hvp"), result
    assert "wrong_hvp" in result.message
