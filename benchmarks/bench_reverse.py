"""Reverse-mode benchmark: gradient time over primal time, against central differences.

Run: python benchmarks/bench_reverse.py [--quick]
Ratios are taken in one run on this machine (best of several repeats); they are measurements
for the table, never test assertions. "tape bytes / iteration" counts the values the forward
sweep pushes per loop iteration (8 bytes each), read off the derived rule's IR.
"""

from __future__ import annotations

import statistics
import time

import numba
import numpy as np

import moonlite
from common import (best_time, logsumexp, ode, rosenbrock, sizes_from_command_line,
                    sum_sin)
from moonlite.ir import natural_loops, ops




@numba.njit
def mlp(W1, b1, W2, x):
    h = np.tanh(W1 @ x + b1)
    return np.sum(np.tanh(W2 @ h))



def central_difference_gradient(f, make_args, argnum, h=1e-6):
    args = make_args()
    x = args[argnum]
    g = np.zeros_like(x)
    for k in range(x.size):
        plus, minus = make_args(), make_args()
        plus[argnum].flat[k] += h
        minus[argnum].flat[k] -= h
        g.flat[k] = (f(*plus) - f(*minus)) / (2 * h)
    return g


def tape_bytes_per_iteration(f, args) -> int:
    rule = moonlite.build_rrule(f, *args)
    fn = rule.ir
    loops = natural_loops(fn)
    if not loops:
        return 0
    innermost = min(loops, key=lambda lp: len(lp.body))
    pushes = sum(isinstance(op, ops.TapePush) for b in innermost.body for op in b.ops)
    return 8 * pushes


def row(name, f, make_args, repeat, fd_points=None):
    g = moonlite.grad(f)
    t0 = time.perf_counter()
    ours = g(*make_args())
    first_call = time.perf_counter() - t0
    primal = best_time(f, make_args, repeat)
    grad_time = best_time(g, make_args, repeat)
    fd_args = fd_points or make_args
    fd = central_difference_gradient(f, fd_args, 0)
    ours_fd = g(*fd_args())
    fd_time = best_time(lambda: central_difference_gradient(f, fd_args, 0), lambda: (), 1)
    size = fd_args()[0].size
    return (name, primal, grad_time, grad_time / primal, fd_time / size,
            np.max(np.abs(ours_fd - fd)),
            size, tape_bytes_per_iteration(f, make_args()), first_call, ours)


def main() -> None:
    scale, repeat = sizes_from_command_line(__doc__.splitlines()[0])
    rng = np.random.default_rng(0)
    x_sin = rng.standard_normal(100_000 // scale)
    x_ros = rng.standard_normal(1_000_000 // scale)
    x_lse = rng.standard_normal(100_000 // scale)
    s0 = rng.standard_normal(32)
    W1, b1 = rng.standard_normal((64, 32)) / 8, rng.standard_normal(64)
    W2, xin = rng.standard_normal((10, 64)) / 8, rng.standard_normal(32)
    small = lambda n: (lambda: (rng_fixed(n),))  # noqa: E731

    rows = [
        row("sum of sin, 1e5 terms", sum_sin, lambda: (x_sin,), repeat, small(200)),
        row("rosenbrock, 1e6 entries (loop)", rosenbrock, lambda: (x_ros,), repeat, small(200)),
        row(f"ODE, 32 states, {2000 // scale} steps in place", ode,
            lambda: (s0.copy(), 0.3, 1e-3, 2000 // scale), repeat),
        row("logsumexp, 1e5 entries (numpy)", logsumexp, lambda: (x_lse,), repeat, small(200)),
        row("MLP 32-64-10 (tanh, matmul)", mlp, lambda: (W1.copy(), b1, W2, xin), repeat),
    ]
    print("## Gradient time over primal time\n")
    print("| kernel | primal | gradient | gradient / primal | speed-up over central differences "
          "| max abs diff from central differences | tape bytes / iteration | first call |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, primal, grad_time, ratio, fd_per_entry, diff, size, tape, first, _) in rows:
        fd_full = fd_per_entry * size_of(name, rows)
        print(f"| {name} | {primal * 1e3:.3f} ms | {grad_time * 1e3:.3f} ms | {ratio:.2f} | "
              f"{fd_full / grad_time:.0f}x | {diff:.1e} | {tape} | {first:.2f} s |")
    print(f"\nmedian gradient / primal: {statistics.median(r[3] for r in rows):.2f}")
    print("(speed-up: central differences over the whole input, 2n primal calls, extrapolated "
          "from the time per entry measured on the finite-difference inputs)")


def size_of(name, rows):
    for r in rows:
        if r[0] == name:
            return r[9].size if hasattr(r[9], "size") else 1
    return 1


def rng_fixed(n):
    return np.random.default_rng(1).standard_normal(n)


if __name__ == "__main__":
    main()
