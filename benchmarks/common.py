"""What the benchmark scripts share: the kernels both modes are measured on, and the timer."""

import argparse
import math
import time

import numba
import numpy as np


@numba.njit
def sum_sin(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i])
    return s


@numba.njit
def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] * x[i]) ** 2 + (1.0 - x[i]) ** 2
    return s


@numba.njit
def ode(state, k, dt, steps):
    # explicit Euler on a chain of damped oscillators, updating the state in place
    n = state.shape[0]
    for _ in range(steps):
        for i in range(n):
            state[i] += dt * (-k * state[i] + math.sin(state[(i + 1) % n]))
    return np.sum(state * state)


@numba.njit
def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def best_time(fn, make_args, repeat):
    """The fastest of `repeat` calls, each on fresh arguments (kernels may write into them)."""
    times = []
    for _ in range(repeat):
        args = make_args()
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def sizes_from_command_line(description: str) -> tuple:
    """(scale, repeat) from the command line: `--quick` divides sizes by 10 and times fewer
    repetitions (for CI)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (CI)")
    quick = parser.parse_args().quick
    return (10, 3) if quick else (1, 7)

