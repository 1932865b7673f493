"""The differential checker: one generated kernel through every moonlite mode.

`check_case(case)` checks, at a random point where the kernel is smooth:

- forward mode: `jvp` along a random direction gives the kernel's output and a tangent that
  agrees with central finite differences; input arrays the kernel writes hold what the kernel
  leaves in them, and their tangents agree with finite differences of those final values;
- reverse mode: `grad` (over all differentiable arguments, or a random subset) satisfies the
  dot-product identity <grad, t> = d/dh f(x + h t) against finite differences, agrees with the
  forward tangent along the same direction, and leaves every input array as it found it;
- optionally `vjp` (the split sweep and pullback) agrees with `grad` and restores the inputs;
- optionally `hvp` is symmetric (<u, H v> = <v, H u>) and agrees with finite differences of the
  gradient, and `hessian` is symmetric and agrees with `hvp`.

Kinks: kernels branch on data, clamp with `min`, and run while-loops whose trip counts depend on
data, so a point may sit within a finite-difference step of a discontinuity. Every finite
difference is taken at three step sizes; when they disagree the point is "near a kink" and
another point is drawn (up to `MAX_POINTS`); when no smooth point is found the kernel is skipped
(reason "kink"), which the campaign counts. Points where the output is not finite or is huge are
redrawn the same way (reason "nonfinite").

Rounding: a generated kernel can blow a value up to 1e59 and then cancel it (`a + (e - (x + a))`).
float64 then computes a different function from the one written (x is lost in `x + a`), finite
differences differentiate the computed function and AD the written one, and the two disagree
although neither is wrong. When an AD result disagrees with finite differences (or with another
AD result), the checker measures forward mode's own rounding noise at the point: the jvp is linear
in its direction, so jvp(t1) + jvp(t2) - jvp(t1 + t2) is rounding alone (an AD bug is a wrong
linear map and stays linear). If that noise exceeds the comparison's tolerance (and for second
derivatives the same for hvp), float64 cannot carry the derivative there: the kernel is skipped
(reason "ill_conditioned", with the failure it would have been in the message). Otherwise the
failure stands. The test runs only after a disagreement, so it never turns a pass into a skip.

Refusals: moonlite refuses what it cannot differentiate with a `MoonliteError` (an
`UnsupportedError` naming the construct). Each mode (jvp, grad, vjp, hvp, hessian) is checked on
its own: a mode that raises such an error with a message is recorded as refused (stage, error,
message in `FuzzResult.refusals`) and the other modes are still checked against finite
differences (a mode whose cross-check partner refused is checked against finite differences
directly: vjp's gradient by the dot-product identity, hvp and the Hessian by second differences
of the kernel). The outcome:

- every mode ran and agreed: status "ok";
- some modes refused and every number returned agreed with finite differences: status
  "refused" (kind "refused"), not a failure; `checks` lists the modes that passed;
- a mode returned a wrong number: status "fail", kind `wrong_*` (and the other kinds below);
  but when another mode refused the same kernel, kind "modes_disagree_on_refusal" (the
  message names both), so the two are counted apart;
- any other exception, a numba error leaking out of moonlite, a TypeError, ...: "crash";
  `VerificationError`, `LoweringError` and `ArgumentError` are moonlite's own failures (broken
  IR, derived code numba cannot compile, arguments the checker passes correctly):
  "internal_error"; a `MoonliteError` with an empty message: "unclear_refusal".

The default profile's generator writes only constructs moonlite supports, so there a refusal is
a failure (kind "refused"), and the checker stops at the first failing mode as it always did
(`check_case(..., refusals_fail=None)` decides by `case.profile`). In the wide profile every
mode runs, so that a wrong number next to a refusal can be classified.

Exact zeros: a case's `fixed` entries (wide profile) are held at exactly 0.0: every random
direction (for finite differences, jvp, grad's dot product, hvp, the Hessian) is 0 there, so the
kernel is smooth along every direction checked even where a derivative at that entry is not
defined; an AD result of nan or inf there still shows, since nan * 0 is nan.

Failures are reported, not raised: `FuzzResult.status` is "ok", "refused", "skip" or "fail",
with the stage ("primal", "jvp", "grad", "vjp", "hvp", "hessian"), a kind and a message.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

import moonlite
from moonlite.errors import ArgumentError, LoweringError, MoonliteError, VerificationError

STEPS = (1e-4, 1e-5, 1e-6)  # finite-difference steps for first derivatives
HSTEPS = (1e-3, 1e-4, 1e-5)  # for differences of the gradient (second derivatives)
RTOL = 1e-5  # finite differences against AD (and against each other)
ATOL = 1e-8  # times (1 + |f|): rounding in the difference quotient
TIGHT = 1e-8  # two AD results that should agree up to rounding
MAX_POINTS = 4
HUGE = 1e6
NOISE_SPLITS = 3  # random splits t = t1 + t2 used to measure rounding noise
STEPS2 = (2e-3, 1e-3, 5e-4)  # second differences of the kernel (hvp/Hessian when grad refused)
ATOL2 = 1e-7  # times (1 + |f|): rounding in a second difference at those steps
ARRAY_KINDS = ("array", "matrix")

# failures that compare numbers, which rounding at an ill-conditioned point can explain
NUMERIC = {"wrong_jvp", "wrong_jvp_array", "wrong_grad", "grad_vs_jvp", "vjp_vs_grad"}
SECOND_ORDER = {"wrong_hvp", "hvp_asymmetric", "hessian_asymmetric", "hessian_vs_hvp"}
# failures that are a number (or an input array) moonlite returned wrong
WRONG_NUMBER = NUMERIC | SECOND_ORDER | {"wrong_primal", "not_restored", "wrong_vjp",
                                         "wrong_hessian"}
# moonlite errors that are moonlite's own failures, not refusals of a construct
INTERNAL_ERRORS = (VerificationError, LoweringError, ArgumentError)


def classify_error(e: BaseException) -> tuple:
    """("refused", message) for a moonlite refusal (a `MoonliteError` with a message, other
    than the internal ones); else (failure kind, message): "unclear_refusal",
    "internal_error" or "crash"."""
    if isinstance(e, MoonliteError) and not isinstance(e, INTERNAL_ERRORS):
        message = str(e).strip()
        if message:
            return "refused", message
        return "unclear_refusal", f"{type(e).__name__} raised with an empty message"
    tb = traceback.format_exc(limit=-4)
    name = f"{type(e).__module__}.{type(e).__name__}"
    kind = "internal_error" if isinstance(e, MoonliteError) else "crash"
    return kind, f"{name}: {e}\n{tb}"[-4000:]


@dataclass
class FuzzResult:
    seed: int
    status: str = "ok"  # ok, refused, skip, fail
    stage: str = ""
    kind: str = ""
    message: str = ""
    checks: list = field(default_factory=list)
    seconds: float = 0.0
    features: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)  # seconds per stage (compilation included)
    refusals: list = field(default_factory=list)  # dict(stage, error, message) per refused mode
    profile: str = "default"

    def as_dict(self) -> dict:
        return asdict(self)


class _Fail(Exception):
    def __init__(self, kind: str, message: str, stage: str = ""):
        super().__init__(message)
        self.kind, self.message, self.stage = kind, message, stage


class _Refused(Exception):
    """Some modes refused, every number returned was right."""


class _Skip(Exception):
    def __init__(self, kind: str, message: str = ""):
        super().__init__(message)
        self.kind, self.message = kind, message


# --------------------------------------------------------------------------------------------
# small tools


def copy_args(args: tuple) -> tuple:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _shift(args, dirs, h):
    return tuple(a + h * d if d is not None else (a.copy() if isinstance(a, np.ndarray) else a)
                 for a, d in zip(args, dirs))


def _flat(values) -> np.ndarray:
    parts = [np.ravel(np.asarray(v, dtype=float)) for v in values if v is not None]
    return np.concatenate(parts) if parts else np.zeros(0)


def _inner(gs, ts) -> float:
    return float(sum(np.sum(np.asarray(g, dtype=float) * np.asarray(t, dtype=float))
                     for g, t in zip(gs, ts) if g is not None and t is not None))


def _agree(a, b, rtol: float, atol: float) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    scale = np.maximum(np.abs(a), np.abs(b))
    return bool(np.all(np.abs(a - b) <= rtol * scale + atol))


def _max_err(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float)), initial=0.0))


class _FD:
    """Central differences of a vector-valued map along one direction at several steps."""

    def __init__(self, fn, args, dirs, steps, atol):
        self.estimates = []
        for h in steps:
            plus, minus = fn(_shift(args, dirs, h)), fn(_shift(args, dirs, -h))
            self.estimates.append((plus - minus) / (2 * h))
        self.atol = atol
        self.consistent = all(
            np.all(np.isfinite(e)) and _agree(e, self.estimates[0], 10 * RTOL, 10 * atol)
            for e in self.estimates)

    def matches(self, ad) -> bool:
        return any(_agree(ad, e, RTOL * 20, self.atol * 20) for e in self.estimates)

    def tolerance(self) -> float:
        """The largest difference `matches` allows, at the scale of the largest estimate."""
        return RTOL * 20 * float(np.max(np.abs(self.estimates))) + self.atol * 20

    def describe(self, ad) -> str:
        errs = [_max_err(ad, e) for e in self.estimates]
        best = int(np.argmin(errs))
        return (f"moonlite {np.asarray(ad).round(10).tolist()} vs finite differences "
                f"{np.asarray(self.estimates[best]).round(10).tolist()} (max abs error "
                f"{errs[best]:.3e})")


class _FD2(_FD):
    """Second differences of the scalar kernel: estimates of <u, H v> at several steps, each
    Richardson-extrapolated from steps h and h/2 (error O(h^4) instead of O(h^2))."""

    def __init__(self, fn, args, u, v, steps, atol):
        def second(h):
            f = [fn(_shift(_shift(args, u, su * h), v, sv * h))
                 for su, sv in ((1, 1), (1, -1), (-1, 1), (-1, -1))]
            return (f[0] - f[1] - f[2] + f[3]) / (4 * h * h)
        plain = {h: second(h) for h in sorted(set(steps) | {h / 2 for h in steps})}
        self.estimates = [np.array([(4 * plain[h / 2] - plain[h]) / 3]) for h in steps]
        self.atol = atol
        self.consistent = all(
            np.all(np.isfinite(e)) and _agree(e, self.estimates[0], 10 * RTOL, 10 * atol)
            for e in self.estimates)


def _random_dirs(case, args, rng, only=None):
    """A random direction per argument (None for ints), 0 outside `only` and at the case's
    fixed entries."""
    fixed = getattr(case, "fixed", None) or {}
    dirs = []
    for i, (a, k) in enumerate(zip(args, case.arg_kinds)):
        if k == "int":
            dirs.append(None)
        elif only is not None and i not in only:
            dirs.append(np.zeros_like(a) if k in ARRAY_KINDS else 0.0)
        elif k in ARRAY_KINDS:
            d = rng.standard_normal(a.shape)
            if i in fixed:
                d.flat[list(fixed[i])] = 0.0
            dirs.append(d)
        else:
            d = float(rng.standard_normal())
            dirs.append(0.0 if i in fixed else d)
    return dirs


# --------------------------------------------------------------------------------------------
# the checker


def check_case(case, *, subset: bool = False, vjp: bool = False, hvp: bool = False,
               hessian: bool = False, refusals_fail=None) -> FuzzResult:
    """Run every check on `case` (a generator.KernelCase); see the module docstring.
    `refusals_fail`: whether a moonlite refusal is a failure (kind "refused") and the first
    failing mode ends the check; by default, true for the default profile only."""
    profile = getattr(case, "profile", "default")
    if refusals_fail is None:
        refusals_fail = profile == "default"
    result = FuzzResult(case.seed, features=sorted(case.features), profile=profile)
    start = time.perf_counter()
    try:
        _Checker(case, result, subset, vjp, hvp, hessian, refusals_fail).run(
            lambda s: _set_stage(result, s))
    except _Fail as e:
        result.status, result.kind, result.message = "fail", e.kind, e.message
        if e.stage:
            result.stage = e.stage
    except _Skip as e:
        result.status, result.kind, result.message = "skip", e.kind, e.message
    except _Refused:
        first = result.refusals[0]
        result.status, result.kind, result.stage = "refused", "refused", first["stage"]
        stages = ", ".join(r["stage"] for r in result.refusals)
        result.message = f"refused by {stages}: {first['error']}: {first['message']}"[:4000]
    except Exception as e:  # the kernel itself, or the checker (outside the modes' checks)
        kind, message = classify_error(e)
        result.status, result.kind, result.message = "fail", kind, message
    result.seconds = round(time.perf_counter() - start, 3)
    return result


def _set_stage(result, stage):
    now = time.perf_counter()
    if result.stage:
        result.timings[result.stage] = round(now - result._t, 3)
    result.stage, result._t = stage, now


class _Checker:
    def __init__(self, case, result, subset, vjp, hvp, hessian, refusals_fail=True):
        self.case, self.result = case, result
        self.f = case.func
        self.want_subset, self.want_vjp = subset, vjp
        self.want_hvp, self.want_hessian = hvp, hessian
        self.refusals_fail = refusals_fail
        self.rng = np.random.default_rng([case.seed, 7])
        self.outcome: dict = {}  # stage -> "ok", "refused" or "fail"
        self.failures: list = []  # (stage, _Fail), in the order found
        self.grads = None  # grad's result, when grad passed

    def call(self, args):
        return float(self.f(*copy_args(args)))

    def final_arrays(self, args):
        ours = copy_args(args)
        self.f(*ours)
        return _flat([a for a, k in zip(ours, self.case.arg_kinds) if k in ARRAY_KINDS])

    def run(self, set_stage):
        case = self.case
        diff = case.diff_argnums
        S = diff
        if self.want_subset and len(diff) > 1:
            k = int(self.rng.integers(1, len(diff)))
            S = tuple(sorted(self.rng.choice(diff, size=k, replace=False).tolist()))
        self.S = S
        set_stage("primal")
        try:
            case.func(*case.make_args(np.random.default_rng(0)))
        except Exception as e:
            raise _Fail("generator", f"the generated kernel does not run: {type(e).__name__}: "
                                     f"{str(e)[:2000]}")
        # find a smooth point
        reason = "nonfinite"
        for _ in range(MAX_POINTS):
            args = case.make_args(self.rng)
            value = self.call(args)
            if not np.isfinite(value) or abs(value) > HUGE:
                reason = "nonfinite"
                continue
            atol = ATOL * (1.0 + abs(value))
            t = _random_dirs(case, args, self.rng)
            tS = t if S == diff else _random_dirs(case, args, self.rng, only=S)
            fd_t = _FD(lambda a: np.array([self.call(a)]), args, t, STEPS, atol)
            fd_arr = _FD(self.final_arrays, args, t, STEPS, atol)
            fd_tS = fd_t if tS is t else _FD(lambda a: np.array([self.call(a)]), args, tS,
                                             STEPS, atol)
            if fd_t.consistent and fd_arr.consistent and fd_tS.consistent:
                break
            reason = "kink"
        else:
            raise _Skip(reason, f"no smooth point found in {MAX_POINTS} tries")
        self.args, self.value, self.atol = args, value, atol
        self.jvp_check = (t, fd_t)
        self.run_checks(set_stage, args, t, tS, fd_t, fd_arr, fd_tS)
        self.conclude()

    def run_checks(self, set_stage, args, t, tS, fd_t, fd_arr, fd_tS):
        """Each mode in turn; its outcome (ok, refused, failed) is recorded. With
        `refusals_fail` the first failure or refusal ends the run."""
        plan = [("jvp", lambda: self.check_jvp(args, t, fd_t, fd_arr)),
                ("grad", lambda: self.check_grad(args, tS, fd_tS))]
        if self.want_vjp:
            plan.append(("vjp", lambda: self.check_vjp(args, t, fd_t)))
        if self.want_hvp or self.want_hessian:
            plan.append(("hvp", lambda: self.check_hvp(args)))
        if self.want_hessian:
            plan.append(("hessian", lambda: self.check_hessian(args)))
        for stage, check in plan:
            set_stage(stage)
            try:
                check()
                self.outcome[stage] = "ok"
            except _Fail as failure:
                self.outcome[stage] = "fail"
                if failure.kind in NUMERIC | SECOND_ORDER and not any(
                        f.kind in NUMERIC | SECOND_ORDER for _, f in self.failures):
                    self.skip_if_rounding_explains(failure)
                self.failures.append((stage, failure))
            except Exception as e:  # moonlite's refusals, and everything else
                kind, message = classify_error(e)
                if kind == "refused":
                    self.outcome[stage] = "refused"
                    self.result.refusals.append(dict(stage=stage, error=type(e).__name__,
                                                     message=message[:3000]))
                else:
                    self.outcome[stage] = "fail"
                    self.failures.append((stage, _Fail(kind, message)))
            if self.refusals_fail and (self.failures or self.result.refusals):
                break
        set_stage("")

    def conclude(self):
        """Raise the outcome: _Fail (the first failure; "modes_disagree_on_refusal" when a mode
        returned a wrong number and another refused; "refused" where refusals fail), _Refused,
        or nothing when every mode passed."""
        refusals = self.result.refusals
        if self.failures:
            stage, first = self.failures[0]
            wrong = [(st, f) for st, f in self.failures if f.kind in WRONG_NUMBER]
            if refusals and wrong:
                st, f = wrong[0]
                r = refusals[0]
                which = ", ".join(x["stage"] for x in refusals)
                raise _Fail("modes_disagree_on_refusal",
                            f"{which} refused ({r['error']}: {r['message'].splitlines()[0]}) "
                            f"but {st} returned a wrong number: {f.kind}: {f.message}", st)
            also = "; ".join(f"{st}: {f.kind}" for st, f in self.failures[1:])
            raise _Fail(first.kind, first.message + (f"\n(also failed: {also})" if also else ""),
                        stage)
        if refusals:
            if self.refusals_fail:
                r = refusals[0]
                raise _Fail("refused", f"moonlite refused a construct the default profile only "
                                       f"writes when it is supported: {r['error']}: "
                                       f"{r['message']}", r["stage"])
            raise _Refused()

    # ---- rounding
    def skip_if_rounding_explains(self, failure):
        """Raise _Skip("ill_conditioned") when forward mode's rounding noise along the checked
        direction (or hvp's, for a second-order failure) exceeds the tolerance the failed
        comparison used; see the module docstring."""
        checks = [("jvp", lambda d: np.array([self.jvp_out(d)]), *self.jvp_check)]
        if failure.kind in SECOND_ORDER and hasattr(self, "hvp_check"):
            checks.append(("hvp", lambda d: _flat(self.hvp(self.args, d)), *self.hvp_check))
        for what, linear_map, direction, fd in checks:
            try:
                noise = self.linearity_noise(linear_map, direction)
            except Exception:  # the mode refuses or fails here: no noise measured, the
                continue       # failure stands
            tol = fd.tolerance()
            if noise > tol:
                raise _Skip("ill_conditioned",
                            f"{what}(t1) + {what}(t2) - {what}(t1 + t2) is {noise:.3g} here, "
                            f"above the tolerance {tol:.3g}: float64 rounding (cancellation of "
                            f"large values) swamps the derivative at this point. The failure it "
                            f"explains: {failure.kind}: {failure.message[:1500]}")

    def linearity_noise(self, linear_map, t) -> float:
        """Largest |L(t1) + L(t2) - L(t)| over random splits t = t1 + t2 of a direction: zero up
        to rounding for a linear map L such as a jvp or an hvp."""
        base = linear_map(t)
        noise = 0.0
        for _ in range(NOISE_SPLITS):
            t1 = _random_dirs(self.case, self.args, self.rng)
            t1 = [None if d is None else d1 for d, d1 in zip(t, t1)]
            t2 = [None if d is None else d - d1 for d, d1 in zip(t, t1)]
            noise = max(noise, _max_err(linear_map(t1) + linear_map(t2), base))
        return noise

    def jvp_out(self, dirs) -> float:
        return moonlite.jvp(self.f, copy_args(self.args), copy_args(dirs))[1]

    # ---- forward
    def check_jvp(self, args, t, fd_t, fd_arr):
        case = self.case
        primals = copy_args(args)
        tangents = tuple(None if d is None else (d.copy() if isinstance(d, np.ndarray) else d)
                         for d in t)
        out, dout = moonlite.jvp(self.f, primals, tangents)
        if not _agree(out, self.value, 1e-10, 1e-12 * (1 + abs(self.value))):
            raise _Fail("wrong_primal", f"jvp's primal output {out!r} differs from the "
                                        f"kernel's {self.value!r}")
        if not fd_t.matches(np.array([dout])):
            raise _Fail("wrong_jvp", "the forward tangent of the output disagrees with finite "
                                     "differences: " + fd_t.describe(np.array([dout])))
        expected = copy_args(args)
        self.f(*expected)
        for i, k in enumerate(case.arg_kinds):
            if k in ARRAY_KINDS and not _agree(primals[i], expected[i], 1e-10, 1e-12):
                raise _Fail("wrong_primal", f"after jvp, argument {case.arg_names[i]} holds "
                                            f"{primals[i]} instead of {expected[i]}")
        dfinal = _flat([tangents[i] for i, k in enumerate(case.arg_kinds) if k in ARRAY_KINDS])
        if not fd_arr.matches(dfinal):
            raise _Fail("wrong_jvp_array", "the tangents of the arrays after jvp disagree with "
                                           "finite differences of their final values: "
                        + fd_arr.describe(dfinal))
        self.result.checks.append("jvp")
        self.dout_t = dout

    # ---- reverse
    def check_grad(self, args, tS, fd_tS):
        case, S = self.case, self.S
        ours = copy_args(args)
        g = moonlite.grad(self.f, argnums=S)(*ours)
        self.assert_restored(args, ours, "grad")
        if not isinstance(g, tuple) or len(g) != len(S):
            raise _Fail("wrong_grad", f"grad with argnums={S} returned {g!r}")
        for i, gi in zip(S, g):
            shape = np.shape(args[i])
            if np.shape(gi) != shape:
                raise _Fail("wrong_grad", f"the gradient for {case.arg_names[i]} has shape "
                                          f"{np.shape(gi)}, the argument {shape}")
        lhs = _inner(g, [tS[i] for i in S])
        if not fd_tS.matches(np.array([lhs])):
            raise _Fail("wrong_grad", f"grad (argnums={S}) fails the dot-product identity: "
                        + fd_tS.describe(np.array([lhs])))
        if self.outcome.get("jvp") == "ok":  # (a refused or wrong jvp is no reference)
            _, dout = moonlite.jvp(self.f, copy_args(args), copy_args(tS))
            if not _agree(lhs, dout, 1e-7, TIGHT * (1 + abs(self.value))):
                raise _Fail("grad_vs_jvp", f"<grad, t> = {lhs!r} but jvp along t gives {dout!r}")
        self.result.checks.append("grad" if S == case.diff_argnums else "grad_subset")
        self.grads = dict(zip(S, g))
        return self.grads

    def assert_restored(self, args, ours, api):
        for i, k in enumerate(self.case.arg_kinds):
            if k in ARRAY_KINDS and not np.array_equal(args[i], ours[i]):
                raise _Fail("not_restored", f"after {api}, argument {self.case.arg_names[i]} "
                                            f"holds {ours[i]} instead of {args[i]}")

    def check_vjp(self, args, t, fd_t):
        ours = copy_args(args)
        out, pullback = moonlite.vjp(self.f, *ours)
        if not _agree(out, self.value, 1e-10, 1e-12 * (1 + abs(self.value))):
            raise _Fail("wrong_primal", f"vjp's output {out!r} differs from the kernel's "
                                        f"{self.value!r}")
        grads = pullback(1.0)
        # the caller's arrays hold what the kernel leaves in them; the pullback restores its own
        # private copies of them
        left = copy_args(args)
        self.f(*left)
        self.assert_restored(left, ours, "vjp (what the kernel leaves)")
        self.assert_restored(args, pullback.arguments, "vjp's pullback (its private arrays)")
        if self.grads is not None:
            for i, gi in self.grads.items():
                if not _agree(grads[i], gi, 1e-7, TIGHT * (1 + abs(self.value))):
                    raise _Fail("vjp_vs_grad", f"vjp's gradient for {self.case.arg_names[i]} "
                                               f"is {grads[i]}, grad's {gi}")
        else:  # grad refused or failed: the dot-product identity against finite differences
            diff = self.case.diff_argnums
            lhs = _inner([grads[i] for i in diff], [t[i] for i in diff])
            if not fd_t.matches(np.array([lhs])):
                raise _Fail("wrong_vjp", "vjp's gradient fails the dot-product identity: "
                            + fd_t.describe(np.array([lhs])))
        self.result.checks.append("vjp")

    # ---- second order
    def full_grad(self, args):
        g = moonlite.grad(self.f, argnums=self.case.diff_argnums)(*copy_args(args))
        return _flat(g)

    def hvp(self, args, dirs):
        return moonlite.hvp(self.f, copy_args(args), tuple(
            None if d is None else (d.copy() if isinstance(d, np.ndarray) else d) for d in dirs))

    def second_differences(self, args, u, v):
        return _FD2(self.call, args, u, v, STEPS2, ATOL2 * (1.0 + abs(self.value)))

    def check_hvp(self, args):
        case = self.case
        u = _random_dirs(case, args, self.rng)
        v = _random_dirs(case, args, self.rng)
        full = None
        if self.outcome.get("grad") == "ok":
            try:
                full = self.full_grad(args)
            except MoonliteError:
                full = None
        if full is None:  # grad refused or failed: second differences of the kernel
            return self.check_hvp_by_second_differences(args, u, v)
        gscale = 1.0 + float(np.max(np.abs(full), initial=0.0))
        fd = _FD(self.full_grad, args, v, HSTEPS, 1e-6 * gscale)
        if not fd.consistent:
            self.result.checks.append("hvp_skipped_kink")
            return
        self.hvp_check = (v, fd)
        Hv, Hu = self.hvp(args, v), self.hvp(args, u)
        for i, k in enumerate(case.arg_kinds):
            if (k == "int") != (Hv[i] is None) or (Hv[i] is not None
                                                   and np.shape(Hv[i]) != np.shape(args[i])):
                raise _Fail("wrong_hvp", f"hvp entry {i} is {Hv[i]!r} for argument {args[i]!r}")
        hv = _flat([Hv[i] for i in case.diff_argnums])
        if not fd.matches(hv):
            raise _Fail("wrong_hvp", "hvp disagrees with finite differences of the gradient: "
                        + fd.describe(hv))
        a, b = _inner(Hv, u), _inner(Hu, v)
        if not _agree(a, b, 1e-6, 1e-8 * gscale):
            raise _Fail("hvp_asymmetric", f"<u, H v> = {a!r} but <v, H u> = {b!r}")
        self.result.checks.append("hvp")
        self.hv_dirs = v

    def check_hvp_by_second_differences(self, args, u, v):
        case = self.case
        fd2 = self.second_differences(args, u, v)
        if not fd2.consistent:
            self.result.checks.append("hvp_skipped_kink")
            return
        Hv, Hu = self.hvp(args, v), self.hvp(args, u)
        for i, k in enumerate(case.arg_kinds):
            if (k == "int") != (Hv[i] is None) or (Hv[i] is not None
                                                   and np.shape(Hv[i]) != np.shape(args[i])):
                raise _Fail("wrong_hvp", f"hvp entry {i} is {Hv[i]!r} for argument {args[i]!r}")
        a, b = _inner(Hv, u), _inner(Hu, v)
        if not fd2.matches(np.array([a])):
            raise _Fail("wrong_hvp", "<u, hvp(v)> disagrees with second differences of the "
                                     "kernel: " + fd2.describe(np.array([a])))
        if not _agree(a, b, 1e-6, 1e-8 * (1.0 + abs(a))):
            raise _Fail("hvp_asymmetric", f"<u, H v> = {a!r} but <v, H u> = {b!r}")
        self.result.checks.append("hvp")

    def check_hessian(self, args):
        case = self.case
        k = int(self.rng.choice(case.diff_argnums))
        H = moonlite.hessian(self.f, k)(*copy_args(args))
        size = int(np.size(args[k]))
        Hm = np.asarray(H, dtype=float).reshape(size, size)
        scale = 1.0 + float(np.max(np.abs(Hm), initial=0.0))
        if not _agree(Hm, Hm.T, 1e-7, 1e-9 * scale):
            raise _Fail("hessian_asymmetric", f"hessian wrt {case.arg_names[k]} is not "
                                              f"symmetric:\n{Hm}")
        only = _random_dirs(case, args, self.rng, only=(k,))
        if self.outcome.get("hvp") != "ok":  # hvp refused, failed or not run: second differences
            u = _random_dirs(case, args, self.rng, only=(k,))
            fd2 = self.second_differences(args, u, only)
            if not fd2.consistent:
                self.result.checks.append("hessian_skipped_kink")
                return
            uHv = float(np.ravel(np.asarray(u[k], float)) @ Hm
                        @ np.ravel(np.asarray(only[k], float)))
            if not fd2.matches(np.array([uHv])):
                raise _Fail("wrong_hessian", f"<u, H v> from the hessian wrt "
                                             f"{case.arg_names[k]} disagrees with second "
                                             f"differences: " + fd2.describe(np.array([uHv])))
            self.result.checks.append("hessian")
            return
        hv = self.hvp(args, only)[k]
        if not _agree(Hm @ np.ravel(np.asarray(only[k], float)), np.ravel(hv), 1e-7,
                      1e-9 * scale):
            raise _Fail("hessian_vs_hvp", f"hessian wrt {case.arg_names[k]} times v is "
                                          f"{Hm @ np.ravel(only[k])}, hvp gives {hv}")
        self.result.checks.append("hessian")
