"""Forward-mode benchmark: JVP time over primal time, and jacfwd against central differences.

Run: python benchmarks/bench_forward.py [--quick]
All ratios are taken in one run on this machine (best of several repeats each); they are
measurements for the table, never test assertions.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

import moonlite
from common import best_time, rosenbrock, sizes_from_command_line, sum_sin




@numba.njit
def heat_2d(u, kappa, steps):
    # explicit diffusion on a 2-D grid, in place, returning the total heat in the interior
    n, m = u.shape
    for _ in range(steps):
        v = u.copy()
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                u[i, j] = v[i, j] + kappa * (v[i + 1, j] + v[i - 1, j] + v[i, j + 1]
                                             + v[i, j - 1] - 4.0 * v[i, j])
    return np.sum(u[1:-1, 1:-1] ** 2)


@numba.njit
def vector_field(x):
    y = np.empty(x.shape[0] - 1)
    for i in range(x.shape[0] - 1):
        y[i] = x[i + 1] ** 2 - math.exp(-x[i]) * x[i]
    return y



def jvp_row(name, f, make_primals, make_tangents, repeat):
    t0 = time.perf_counter()
    moonlite.jvp(f, make_primals(), make_tangents())
    first_call = time.perf_counter() - t0
    primal = best_time(f, make_primals, repeat)
    jvp = best_time(lambda *a: moonlite.jvp(f, a[0], a[1]),
                    lambda: (make_primals(), make_tangents()), repeat)
    return name, primal, jvp, first_call


def central_difference_jacobian(f, x, h=1e-6):
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(cols, axis=-1)


def main() -> None:
    scale, repeat = sizes_from_command_line(__doc__.splitlines()[0])
    rng = np.random.default_rng(0)
    x_sin = rng.standard_normal(100_000 // scale)
    x_ros = rng.standard_normal(1_000_000 // scale)
    u0 = rng.standard_normal((64, 64))
    steps = 200 // scale

    rows = [
        jvp_row("sum of sin, 1e5 terms", sum_sin, lambda: (x_sin,),
                lambda: (np.ones_like(x_sin),), repeat),
        jvp_row("rosenbrock, 1e6 entries (loop)", rosenbrock, lambda: (x_ros,),
                lambda: (np.ones_like(x_ros),), repeat),
        jvp_row(f"2-D heat stencil 64x64, {steps} steps (in place)", heat_2d,
                lambda: (u0.copy(), 0.1, steps), lambda: (np.ones_like(u0), 0.0, None), repeat),
    ]
    print("## JVP time over primal time\n")
    print("| kernel | primal | JVP | JVP / primal | first call (capture + AD + compile) |")
    print("|---|---|---|---|---|")
    for name, primal, jvp, first in rows:
        print(f"| {name} | {primal * 1e3:.2f} ms | {jvp * 1e3:.2f} ms | {jvp / primal:.2f} | "
              f"{first:.2f} s |")

    n = 200 // (scale // 5 or 1)
    x = rng.standard_normal(n)
    jac_fn = moonlite.jacfwd(vector_field)
    jac = jac_fn(x)
    t_ad = best_time(jac_fn, lambda: (x,), repeat)
    t_fd = best_time(lambda x: central_difference_jacobian(vector_field, x), lambda: (x,), repeat)
    fd = central_difference_jacobian(vector_field, x)
    print(f"\n## jacfwd against a central-difference Jacobian ({n - 1} x {n})\n")
    print("| method | time | max abs difference from the other |")
    print("|---|---|---|")
    diff = np.max(np.abs(jac - fd))
    print(f"| moonlite.jacfwd ({moonlite.api.JACFWD_WIDTH} directions per pass) | "
          f"{t_ad * 1e3:.2f} ms | {diff:.1e} |")
    print(f"| central differences (2n calls of the njit kernel) | {t_fd * 1e3:.2f} ms | "
          f"{diff:.1e} |")
    print(f"\njacfwd speed-up over central differences: {t_fd / t_ad:.1f}x")


if __name__ == "__main__":
    main()
