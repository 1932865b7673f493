"""Second derivatives: Hessian-vector products and dense Hessians by forward over reverse.

Prints, from one run on this machine:
1. HVP time over primal time (rosenbrock in loop form, an in-place ODE, logsumexp), with the
   gradient's for scale, and rosenbrock's HVP written by hand (forward over reverse, and the
   analytic formula) as the reference for what the derived rule could reach;
2. the dense Hessian of rosenbrock (n = 100) against a Hessian of second-order central
   differences of the primal: time and maximum difference; the first-call latency of `hessian`;
3. scipy.optimize.minimize on rosenbrock in 1000 dimensions: trust-ncg with moonlite's grad as
   `jac` and hvp as `hessp`, against BFGS with finite-difference gradients.

Run: python benchmarks/bench_hessian.py [--quick]
"""

import sys
import time
from pathlib import Path

import numba
import numpy as np
import scipy.optimize

sys.path.insert(0, str(Path(__file__).parent))
import moonlite  # noqa: E402
from common import best_time, logsumexp, ode, rosenbrock, sizes_from_command_line  # noqa: E402
from moonlite.testing import finite_difference_hessian  # noqa: E402


def hvp_row(name, f, make_args, repeat):
    args = make_args()
    v = np.random.default_rng(2).standard_normal(args[0].shape)
    tangents = (v,) + tuple(0.0 if isinstance(a, float) else None for a in args[1:])
    t0 = time.perf_counter()
    moonlite.hvp(f, args, tangents)
    first = time.perf_counter() - t0
    primal = best_time(f, make_args, repeat)
    g = moonlite.grad(f, argnums=0)
    g(*make_args())
    grad = best_time(g, make_args, repeat)
    hvp = best_time(lambda *a: moonlite.hvp(f, a, tangents), make_args, repeat)
    return name, primal, grad, hvp, first


@numba.njit
def rosenbrock_hvp_by_hand(x, v):
    """Forward over reverse written by hand, as a reference for the derived rule: a forward
    sweep with tangents, then a reverse sweep updating the gradient and its tangent (one block
    for both, as moonlite allocates them)."""
    n = x.shape[0]
    s, ds = 0.0, 0.0
    for i in range(n - 1):
        a = x[i + 1] - x[i] * x[i]
        da = v[i + 1] - 2.0 * x[i] * v[i]
        s += 100.0 * a * a + (1.0 - x[i]) ** 2
        ds += 200.0 * a * da - 2.0 * (1.0 - x[i]) * v[i]
    block = np.zeros((2, n))
    g, dg = block[0], block[1]
    for i in range(n - 2, -1, -1):
        a = x[i + 1] - x[i] * x[i]
        da = v[i + 1] - 2.0 * x[i] * v[i]
        g[i] += -400.0 * a * x[i] - 2.0 * (1.0 - x[i])
        dg[i] += -400.0 * (da * x[i] + a * v[i]) + 2.0 * v[i]
        g[i + 1] += 200.0 * a
        dg[i + 1] += 200.0 * da
    return s, ds, g, dg


@numba.njit
def rosenbrock_hvp_analytic(x, v):
    """H v from the Hessian's formula in one pass: what no AD tool derives, the floor."""
    n = x.shape[0]
    out = np.zeros(n)
    for i in range(n - 1):
        a = x[i + 1] - x[i] * x[i]
        da = v[i + 1] - 2.0 * x[i] * v[i]
        out[i] += -400.0 * (da * x[i] + a * v[i]) + 2.0 * v[i]
        out[i + 1] += 200.0 * da
    return out


def hand_written_rows(x, repeat):
    v = np.random.default_rng(2).standard_normal(x.shape)
    expected = moonlite.hvp(rosenbrock, (x,), (v,))[0]
    rows = []
    for name, f in [("forward over reverse by hand", rosenbrock_hvp_by_hand),
                    ("analytic H v, one pass", rosenbrock_hvp_analytic)]:
        out = f(x, v)
        hv = out[3] if isinstance(out, tuple) else out
        assert np.allclose(hv, expected, rtol=1e-10, atol=1e-8), name
        rows.append((name, best_time(f, lambda: (x, v), repeat)))
    return rows


def dense_hessian_rows(n):
    x = np.random.default_rng(3).uniform(-1.0, 1.0, n)
    H = moonlite.hessian(rosenbrock)
    t0 = time.perf_counter()
    ours = H(x)
    first = time.perf_counter() - t0
    ours_time = best_time(H, lambda: (x,), 5)
    t0 = time.perf_counter()
    fd = finite_difference_hessian(rosenbrock, x)
    fd_time = time.perf_counter() - t0
    return ours_time, fd_time, np.max(np.abs(ours - fd)), np.max(np.abs(ours - ours.T)), first


def optimise(n, bfgs_iterations):
    # from (-1.2, 1, -1.2, ...) the chained rosenbrock takes thousands of Newton steps (the
    # solution travels one coordinate per step) whatever the derivatives; a start in [0, 1)^n
    # shows the methods rather than the problem
    x0 = np.random.default_rng(0).uniform(0.0, 1.0, n)
    g = moonlite.grad(rosenbrock)
    g(x0)  # compile before timing
    moonlite.hvp(rosenbrock, (x0,), (x0,))
    results = []
    t0 = time.perf_counter()
    r = scipy.optimize.minimize(rosenbrock, x0, jac=g, method="trust-ncg",
                                hessp=lambda x, p: moonlite.hvp(rosenbrock, (x,), (p,))[0],
                                options={"gtol": 1e-8, "maxiter": 5000})
    results.append(("trust-ncg, moonlite grad + hvp", r, time.perf_counter() - t0))
    t0 = time.perf_counter()
    r = scipy.optimize.minimize(rosenbrock, x0, method="BFGS",
                                options={"gtol": 1e-5, "maxiter": bfgs_iterations})
    results.append(("BFGS, finite-difference gradients", r, time.perf_counter() - t0))
    return results


def main() -> None:
    scale, repeat = sizes_from_command_line(__doc__.splitlines()[0])
    rng = np.random.default_rng(0)
    x_ros = rng.standard_normal(1_000_000 // scale)
    x_lse = rng.standard_normal(100_000 // scale)
    s0 = rng.standard_normal(32)
    rows = [
        hvp_row(f"rosenbrock, {x_ros.size:.0e} entries (loop)", rosenbrock, lambda: (x_ros,),
                repeat),
        hvp_row(f"ODE, 32 states, {2000 // scale} steps in place", ode,
                lambda: (s0.copy(), 0.3, 1e-3, 2000 // scale), repeat),
        hvp_row(f"logsumexp, {x_lse.size:.0e} entries (numpy)", logsumexp, lambda: (x_lse,),
                repeat),
    ]
    print("## Hessian-vector product time over primal time\n")
    print("| kernel | primal | gradient / primal | hvp | hvp / primal | hvp / gradient | "
          "first call |")
    print("|---|---|---|---|---|---|---|")
    for name, primal, grad, hvp, first in rows:
        print(f"| {name} | {primal * 1e3:.3f} ms | {grad / primal:.2f} | {hvp * 1e3:.3f} ms | "
              f"{hvp / primal:.2f} | {hvp / grad:.2f} | {first:.2f} s |")

    print("\n## Rosenbrock's HVP written by hand, for reference (time over primal time)\n")
    print("| entries | moonlite.hvp | forward over reverse by hand | analytic H v, one pass |")
    print("|---|---|---|---|")
    for n in (10_000 // scale, 1_000_000 // scale):
        x = rng.standard_normal(n)
        primal = best_time(rosenbrock, lambda: (x,), repeat)
        v = rng.standard_normal(n)
        ours = best_time(lambda a: moonlite.hvp(rosenbrock, (a,), (v,)), lambda: (x,), repeat)
        hand = hand_written_rows(x, repeat)
        print(f"| {n} | {ours / primal:.2f} | {hand[0][1] / primal:.2f} | "
              f"{hand[1][1] / primal:.2f} |")

    n = 100
    ours, fd, diff, asym, first = dense_hessian_rows(n)
    print(f"\n## Dense Hessian of rosenbrock, n = {n}\n")
    print("| method | time | max abs difference from the other | max asymmetry |")
    print("|---|---|---|---|")
    print(f"| moonlite.hessian ({moonlite.api_higher.HESSIAN_WIDTH} directions per evaluation) "
          f"| {ours * 1e3:.3f} ms | {diff:.1e} | {asym:.1e} |")
    print(f"| second-order central differences (h = 1e-4) | {fd * 1e3:.1f} ms | {diff:.1e} | "
          f"0 (symmetrised) |")
    print(f"\nspeed-up over finite differences: {fd / ours:.0f}x; first call of hessian "
          f"(capture, reverse, forward over reverse, compile): {first:.2f} s")

    dims = 1000 // scale
    print(f"\n## scipy.optimize.minimize on rosenbrock, {dims} dimensions\n")
    print("| method | iterations | function evaluations | gradient evaluations | final f | "
          "wall time |")
    print("|---|---|---|---|---|---|")
    cap = 300 if scale > 1 else 500  # --quick
    for name, r, seconds in optimise(dims, cap):
        print(f"| {name} | {r.nit} | {r.nfev} | {getattr(r, 'njev', 0)} | {r.fun:.2e} | "
              f"{seconds:.2f} s |")
    print(f"\n(BFGS stops after at most {cap} iterations: each of its gradients costs {dims + 1} "
          f"evaluations of f, so running it to convergence takes minutes)")


if __name__ == "__main__":
    main()
