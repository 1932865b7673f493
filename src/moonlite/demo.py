"""moonlite's demo: `python -m moonlite.demo`.

Takes real numba kernels (a loop with a branch, an in-place ODE integrator, a numpy MLP), captures
each into moonlite IR, prints the IR, compiles it back through numba, and checks that the compiled
IR computes exactly what the original does, at the same speed. Derivatives build on this round
trip (forward mode, reverse mode and Hessians are the next milestones; see docs/).
"""

from __future__ import annotations

import time
import timeit

import numba
import numpy as np

import moonlite


@numba.njit
def sum_sin_loop(x, n):
    s = 0.0
    for i in range(n):
        t = x * (i + 1) / n
        if t > 0.5:
            s += np.sin(t)
        else:
            s -= t * t
    return s


@numba.njit
def euler_ode(state, k, dt, steps):
    for _ in range(steps):
        for i in range(state.shape[0]):
            state[i] += dt * (-k * state[i] + np.sin(state[i - 1]))
    return state.sum()


@numba.njit
def mlp(W1, b1, W2, x):
    h = np.tanh(W1 @ x + b1)
    return np.sum(W2 @ h)


def _mlp_args():
    rng = np.random.default_rng(0)  # fresh and seeded: every call gives the same arguments
    return (rng.standard_normal((32, 16)), rng.standard_normal(32),
            rng.standard_normal((4, 32)), rng.standard_normal(16))


def _examples():
    return [
        ("sum_sin_loop", sum_sin_loop, lambda: (0.7, 100_000)),
        ("euler_ode", euler_ode, lambda: (np.linspace(0.0, 1.0, 64), 0.3, 1e-3, 2000)),
        ("mlp", mlp, _mlp_args),
    ]


def _best(fn, make_args, repeat=5):
    args = [make_args() for _ in range(repeat)]
    times = []
    for a in args:
        t = time.perf_counter()
        fn(*a)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    print(f"moonlite {moonlite.__version__} (numba {numba.__version__})\n")
    rows = []
    for name, kernel, make_args in _examples():
        kernel(*make_args())
        t0 = time.perf_counter()
        ir_fn = moonlite.verify(moonlite.capture(kernel, *make_args()))
        compiled = moonlite.lower(ir_fn)
        build = time.perf_counter() - t0
        if name == "sum_sin_loop":
            print(f"moonlite IR of {name}:\n{ir_fn}\n")
        ours, ref = compiled(*make_args()), kernel(*make_args())
        same = ours == ref
        ratio = _best(compiled, make_args) / _best(kernel, make_args)
        rows.append((name, ours, ref, same, build, ratio))
    print("| kernel | moonlite | njit original | identical | capture+lower | time ratio |")
    print("|---|---|---|---|---|---|")
    for name, ours, ref, same, build, ratio in rows:
        print(f"| {name} | {ours:.12g} | {ref:.12g} | {'yes' if same else 'NO'} | "
              f"{build * 1e3:.0f} ms | {ratio:.2f} |")
    overhead = min(timeit.repeat(lambda: sum_sin_loop(0.1, 1), number=20000, repeat=3))
    print(f"\ncall overhead of the njit original from Python: {overhead / 20000 * 1e9:.0f} ns")
    if not all(r[3] for r in rows):
        raise SystemExit("round trip mismatch: please report this as a moonlite bug")


if __name__ == "__main__":
    main()
