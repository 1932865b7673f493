"""Memory benchmark: what the reverse-mode tape costs on a loop of 10^7 iterations.

Run: python benchmarks/bench_memory.py [--quick]

Each measurement runs in a fresh subprocess (so peak RSS belongs to that call alone): compile
and warm up on a short loop, then time one call on the long loop and read
- the peak RSS growth during the call (VmHWM after minus VmRSS before, from /proc/self/status),
- the RSS left over once the result is dropped (a leak would show here),
- numba's NRT allocation and free counts during the call (NUMBA_NRT_STATS=1).
numba's lists (the tapes) grow by reallocation, so NRT counts calls, not bytes: bytes come from
RSS. Figures are measurements on this machine, never test assertions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from common import sizes_from_command_line

CHILD = r'''
import gc, json, math, os, sys, time
import numpy as np
from numba import njit
from numba.core.runtime import rtsys
import moonlite


def status(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


@njit
def decay(y0, k, dt, steps):
    # an ODE-like loop: y is carried through a nonlinear update, so the pullback needs every y
    y = y0
    for _ in range(steps):
        y = y + dt * (-k * y * y + math.sin(y))
    return y


@njit
def no_tape(x, steps):
    # nothing carried: the pullback recomputes what it needs from the loop counter
    s = 0.0
    for i in range(steps):
        s += math.sin(x * (i % 100))
    return s


kernel, mode, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if kernel == "decay":
    f, args = decay, (0.5, 0.3, 1e-7)
else:
    f, args = no_tape, (0.7,)
if mode == "primal":
    call = f
elif mode == "grad":
    call = moonlite.grad(f)
else:
    def call(*a):
        return moonlite.vjp(f, *a)[1](1.0)
call(*args, 1000)  # compile, warm up
gc.collect()
rss0 = status("VmRSS")
stats0 = rtsys.get_allocation_stats()
t = time.perf_counter()
out = call(*args, steps)
elapsed = time.perf_counter() - t
stats1 = rtsys.get_allocation_stats()
peak = status("VmHWM")
del out
gc.collect()
rss1 = status("VmRSS")
print(json.dumps({"time": elapsed, "peak": peak - rss0, "left": rss1 - rss0,
                  "allocs": stats1.alloc - stats0.alloc, "frees": stats1.free - stats0.free}))
'''


def measure(kernel: str, mode: str, steps: int) -> dict:
    env = dict(os.environ, NUMBA_NRT_STATS="1")
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", CHILD, kernel, mode, str(steps)], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    scale, _ = sizes_from_command_line(__doc__.splitlines()[0])
    steps = 10_000_000 // scale
    mb = 1024 * 1024
    print(f"loop of {steps:,} iterations\n")
    print("| kernel | call | time (s) | peak RSS growth (MB) | bytes / iteration | "
          "RSS left after (MB) | NRT allocs / frees |")
    print("|---|---|---|---|---|---|---|")
    for kernel in ("decay", "no_tape"):
        for mode in ("primal", "grad", "vjp"):
            m = measure(kernel, mode, steps)
            print(f"| {kernel} | {mode} | {m['time']:.3f} | {m['peak'] / mb:.1f} | "
                  f"{m['peak'] / steps:.1f} | {m['left'] / mb:.1f} | "
                  f"{m['allocs']} / {m['frees']} |")


if __name__ == "__main__":
    main()
