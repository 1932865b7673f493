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

Failures are reported, not raised: `FuzzResult.status` is "ok", "skip" or "fail", with the stage
("primal", "jvp", "grad", "vjp", "hvp", "hessian"), a kind and a message.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

import moonlite
from moonlite.errors import MoonliteError

STEPS = (1e-4, 1e-5, 1e-6)  # finite-difference steps for first derivatives
HSTEPS = (1e-3, 1e-4, 1e-5)  # for differences of the gradient (second derivatives)
RTOL = 1e-5  # finite differences against AD (and against each other)
ATOL = 1e-8  # times (1 + |f|): rounding in the difference quotient
TIGHT = 1e-8  # two AD results that should agree up to rounding
MAX_POINTS = 4
HUGE = 1e6
NOISE_SPLITS = 3  # random splits t = t1 + t2 used to measure rounding noise

# failures that compare numbers, which rounding at an ill-conditioned point can explain
NUMERIC = {"wrong_jvp", "wrong_jvp_array", "wrong_grad", "grad_vs_jvp", "vjp_vs_grad"}
SECOND_ORDER = {"wrong_hvp", "hvp_asymmetric", "hessian_asymmetric", "hessian_vs_hvp"}


@dataclass
class FuzzResult:
    seed: int
    status: str = "ok"  # ok, skip, fail
    stage: str = ""
    kind: str = ""
    message: str = ""
    checks: list = field(default_factory=list)
    seconds: float = 0.0
    features: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)  # seconds per stage (compilation included)

    def as_dict(self) -> dict:
        return asdict(self)


class _Fail(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


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


def _random_dirs(case, args, rng, only=None):
    dirs = []
    for i, (a, k) in enumerate(zip(args, case.arg_kinds)):
        if k == "int":
            dirs.append(None)
        elif only is not None and i not in only:
            dirs.append(np.zeros_like(a) if k == "array" else 0.0)
        elif k == "array":
            dirs.append(rng.standard_normal(a.shape))
        else:
            dirs.append(float(rng.standard_normal()))
    return dirs


# --------------------------------------------------------------------------------------------
# the checker


def check_case(case, *, subset: bool = False, vjp: bool = False, hvp: bool = False,
               hessian: bool = False) -> FuzzResult:
    """Run every check on `case` (a generator.KernelCase); see the module docstring."""
    result = FuzzResult(case.seed, features=sorted(case.features))
    start = time.perf_counter()
    stage = "primal"
    try:
        stage = "primal"
        _Checker(case, result, subset, vjp, hvp, hessian).run(lambda s: _set_stage(result, s))
    except _Fail as e:
        result.status, result.kind, result.message = "fail", e.kind, e.message
    except _Skip as e:
        result.status, result.kind, result.message = "skip", e.kind, e.message
    except MoonliteError as e:
        result.status = "fail"
        result.kind = f"{type(e).__name__}"
        result.message = str(e)
    except Exception as e:  # numba errors, crashes in generated code, bugs anywhere
        result.status = "fail"
        result.kind = f"{type(e).__module__}.{type(e).__name__}"
        tb = traceback.format_exc(limit=-4)
        result.message = f"{e}\n{tb}"[-4000:]
    del stage
    result.seconds = round(time.perf_counter() - start, 3)
    return result


def _set_stage(result, stage):
    now = time.perf_counter()
    if result.stage:
        result.timings[result.stage] = round(now - result._t, 3)
    result.stage, result._t = stage, now


class _Checker:
    def __init__(self, case, result, subset, vjp, hvp, hessian):
        self.case, self.result = case, result
        self.f = case.func
        self.want_subset, self.want_vjp = subset, vjp
        self.want_hvp, self.want_hessian = hvp, hessian
        self.rng = np.random.default_rng([case.seed, 7])

    def call(self, args):
        return float(self.f(*copy_args(args)))

    def final_arrays(self, args):
        ours = copy_args(args)
        self.f(*ours)
        return _flat([a for a, k in zip(ours, self.case.arg_kinds) if k == "array"])

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
        try:
            self.run_checks(set_stage, args, t, tS, fd_t, fd_arr, fd_tS)
        except _Fail as failure:
            if failure.kind in NUMERIC | SECOND_ORDER:
                self.skip_if_rounding_explains(failure)
            raise

    def run_checks(self, set_stage, args, t, tS, fd_t, fd_arr, fd_tS):
        set_stage("jvp")
        self.check_jvp(args, t, fd_t, fd_arr)
        set_stage("grad")
        g = self.check_grad(args, tS, fd_tS)
        if self.want_vjp:
            set_stage("vjp")
            self.check_vjp(args, g)
        if self.want_hvp or self.want_hessian:
            set_stage("hvp")
            self.check_hvp(args)
        if self.want_hessian:
            set_stage("hessian")
            self.check_hessian(args)
        set_stage("")

    # ---- rounding
    def skip_if_rounding_explains(self, failure):
        """Raise _Skip("ill_conditioned") when forward mode's rounding noise along the checked
        direction (or hvp's, for a second-order failure) exceeds the tolerance the failed
        comparison used; see the module docstring."""
        checks = [("jvp", lambda d: np.array([self.jvp_out(d)]), *self.jvp_check)]
        if failure.kind in SECOND_ORDER and hasattr(self, "hvp_check"):
            checks.append(("hvp", lambda d: _flat(self.hvp(self.args, d)), *self.hvp_check))
        for what, linear_map, direction, fd in checks:
            noise, tol = self.linearity_noise(linear_map, direction), fd.tolerance()
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
            if k == "array" and not _agree(primals[i], expected[i], 1e-10, 1e-12):
                raise _Fail("wrong_primal", f"after jvp, argument {case.arg_names[i]} holds "
                                            f"{primals[i]} instead of {expected[i]}")
        dfinal = _flat([tangents[i] for i, k in enumerate(case.arg_kinds) if k == "array"])
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
        _, dout = moonlite.jvp(self.f, copy_args(args), tuple(
            None if d is None else (d.copy() if isinstance(d, np.ndarray) else d) for d in tS))
        if not _agree(lhs, dout, 1e-7, TIGHT * (1 + abs(self.value))):
            raise _Fail("grad_vs_jvp", f"<grad, t> = {lhs!r} but jvp along t gives {dout!r}")
        self.result.checks.append("grad" if S == case.diff_argnums else "grad_subset")
        return dict(zip(S, g))

    def assert_restored(self, args, ours, api):
        for i, k in enumerate(self.case.arg_kinds):
            if k == "array" and not np.array_equal(args[i], ours[i]):
                raise _Fail("not_restored", f"after {api}, argument {self.case.arg_names[i]} "
                                            f"holds {ours[i]} instead of {args[i]}")

    def check_vjp(self, args, g):
        ours = copy_args(args)
        out, pullback = moonlite.vjp(self.f, *ours)
        if not _agree(out, self.value, 1e-10, 1e-12 * (1 + abs(self.value))):
            raise _Fail("wrong_primal", f"vjp's output {out!r} differs from the kernel's "
                                        f"{self.value!r}")
        grads = pullback(1.0)
        self.assert_restored(args, ours, "vjp's pullback")
        for i, gi in g.items():
            if not _agree(grads[i], gi, 1e-7, TIGHT * (1 + abs(self.value))):
                raise _Fail("vjp_vs_grad", f"vjp's gradient for {self.case.arg_names[i]} is "
                                           f"{grads[i]}, grad's {gi}")
        self.result.checks.append("vjp")

    # ---- second order
    def full_grad(self, args):
        g = moonlite.grad(self.f, argnums=self.case.diff_argnums)(*copy_args(args))
        return _flat(g)

    def hvp(self, args, dirs):
        return moonlite.hvp(self.f, copy_args(args), tuple(
            None if d is None else (d.copy() if isinstance(d, np.ndarray) else d) for d in dirs))

    def check_hvp(self, args):
        case = self.case
        u = _random_dirs(case, args, self.rng)
        v = _random_dirs(case, args, self.rng)
        gscale = 1.0 + float(np.max(np.abs(self.full_grad(args)), initial=0.0))
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
        hv = self.hvp(args, only)[k]
        if not _agree(Hm @ np.ravel(np.asarray(only[k], float)), np.ravel(hv), 1e-7,
                      1e-9 * scale):
            raise _Fail("hessian_vs_hvp", f"hessian wrt {case.arg_names[k]} times v is "
                                          f"{Hm @ np.ravel(only[k])}, hvp gives {hv}")
        self.result.checks.append("hessian")
