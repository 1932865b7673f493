"""Foundation benchmark: capture + lower time over the corpus, and call overhead of lowered code.

Run: python benchmarks/bench_foundation.py [--quick]
Prints markdown tables. Ratios are taken in one run on the same machine; the numbers are
measurements, never test assertions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import timeit

import numba

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import moonlite  # noqa: E402
from tests.corpus.kernels import CASES  # noqa: E402


def time_capture_and_lower(cases) -> list:
    rows = []
    for case in cases:
        args = case.make_args()
        case.kernel(*args)  # numba compiles the original first, as a user's code would have
        fresh = numba.njit(case.kernel.py_func)
        t = time.perf_counter()
        fresh(*case.make_args())  # numba's own compile time of the same kernel, for scale
        njit_compile = time.perf_counter() - t
        t0 = time.perf_counter()
        fn = moonlite.capture(case.kernel, *case.make_args())
        t1 = time.perf_counter()
        moonlite.lower(fn)
        t2 = time.perf_counter()
        rows.append((case.name, t1 - t0, t2 - t1, njit_compile))
    return rows


@numba.njit
def axpy(a, x, y):
    return a * x + y


def call_overhead(repeats: int) -> list:
    lowered = moonlite.lower(moonlite.capture(axpy, 2.0, 3.0, 4.0))
    lowered(2.0, 3.0, 4.0)

    def per_call(fn):
        return min(timeit.repeat(lambda: fn(2.0, 3.0, 4.0), number=repeats, repeat=5)) / repeats

    def inner_loop(fn):
        @numba.njit
        def loop(n):
            s = 0.0
            for i in range(n):
                s += fn(1.0000001, s, 1.0)
            return s
        loop(10)
        n = repeats * 10
        return min(timeit.repeat(lambda: loop(n), number=1, repeat=5)) / n

    return [("from Python", per_call(axpy), per_call(lowered)),
            ("inside an njit loop", inner_loop(axpy), inner_loop(lowered))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer kernels and repeats (CI)")
    opts = parser.parse_args()
    cases = CASES[:10] if opts.quick else CASES
    repeats = 20_000 if opts.quick else 200_000

    rows = time_capture_and_lower(cases)
    totals = [r[1] + r[2] for r in rows]
    worst = max(rows, key=lambda r: r[1] + r[2])
    ratios = [(r[1] + r[2]) / r[3] for r in rows]
    print(f"## Capture + lower over {len(rows)} corpus kernels\n")
    print("| | capture | lower (numba compile) | total | plain njit compile | total / njit |")
    print("|---|---|---|---|---|---|")
    print(f"| median | {statistics.median(r[1] for r in rows) * 1e3:.1f} ms | "
          f"{statistics.median(r[2] for r in rows) * 1e3:.1f} ms | "
          f"{statistics.median(totals) * 1e3:.1f} ms | "
          f"{statistics.median(r[3] for r in rows) * 1e3:.1f} ms | "
          f"{statistics.median(ratios):.2f} |")
    print(f"| worst ({worst[0]}) | {worst[1] * 1e3:.1f} ms | {worst[2] * 1e3:.1f} ms | "
          f"{(worst[1] + worst[2]) * 1e3:.1f} ms | {worst[3] * 1e3:.1f} ms | "
          f"{(worst[1] + worst[2]) / worst[3]:.2f} |")

    print("\n## Call overhead of a lowered callable against the njit original\n")
    print("| called | njit original | moonlite lowered | ratio |")
    print("|---|---|---|---|")
    for where, ref, ours in call_overhead(repeats):
        print(f"| {where} | {ref * 1e9:.1f} ns | {ours * 1e9:.1f} ns | {ours / ref:.2f} |")


if __name__ == "__main__":
    main()
