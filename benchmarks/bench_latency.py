"""Latency: where the first call of a derivative goes, and what a call from Python costs.

Run: python benchmarks/bench_latency.py [--quick] [--hessian] [--hvp]

First calls: each kernel in a fresh Python process (nothing compiled yet but the primal, which
the process calls once first, as a user would), timed with `moonlite.compile_timings()`: the
wall time of the first `grad` call (and of the first `hessian` or `hvp` call with `--hessian`,
`--hvp`; hvp along ones in the first argument) with an
empty disk cache, split into moonlite's phases (capture, AD passes, verify, emit numba IR) and numba's (typing of the
emitted IR, lowering to LLVM IR, LLVM optimisation and code generation, other passes).
"a later call" is the second call's time (a first call runs the derivative too: seconds for a
dense Hessian of 10,000 entries); "unattributed" is the rest, less that: numba compiling its own overload implementations and moonlite's
helpers outside any pass, Python-level dispatch, first imports. "warm cache" is the first call
in a second fresh process that finds what the first one wrote (`MOONLITE_CACHE_DIR`), running
the derivative included. Kernels:
the comparison suite (`suite_kernels.py`) and the loop family (`loop_kernels.py`, smallest
size).

Per call: a call from Python of each API on a tiny kernel after its first call, against the
compiled kernel's own call (best of many; microseconds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PHASES = ["capture", "AD passes", "verify", "emit numba IR", "numba typing", "numba lowering",
          "LLVM", "numba other"]


def _cases(quick: bool) -> dict:
    """name -> (kernel, args); derivatives are taken in the first argument."""
    from suite_kernels import kernels
    from bench_loops import _cases as loop_cases
    out = {}
    for k in kernels(quick):
        out[k.name] = (k.numba_fn, (k.theta,) + tuple(k.data))
    for name, f, _, sizes, maker in loop_cases(quick):
        out[name] = (f, maker(sizes[0])())
    from loop_kernels import rk4
    # the example: a two-state RK4 integrator with four parameters, 100 steps
    out["RK4, 2 states, 100 steps"] = (rk4, (np.array([0.3, 0.8, 0.05, 0.1]),
                                             np.array([1.0, 0.5]), 0.01, 100))
    return out


def _one(name: str, api: str, quick: bool) -> dict:
    """In a fresh process: the first call of `api` on kernel `name`."""
    import moonlite
    f, args = _cases(quick)[name]
    f(*args)  # the primal compiled, as a user's process would have it
    fn = {"grad": moonlite.grad, "hessian": moonlite.hessian, "hvp": _hvp_along_ones}[api](f)
    with moonlite.compile_timings() as t:
        fn(*args)
    start = time.perf_counter()
    fn(*args)  # a later call: what the first one spent running rather than compiling
    return {"wall": t.wall, "run": time.perf_counter() - start, **t.seconds}


def _hvp_along_ones(f):
    """`hvp` of `f` along ones in its first argument (zero in the others)."""
    import moonlite
    from moonlite.testing import zero_tangent_like

    def call(*args):
        tangents = (np.ones_like(args[0]),) + tuple(zero_tangent_like(a) for a in args[1:])
        return moonlite.hvp(f, args, tangents)

    return call


def first_calls(quick: bool, apis: list) -> list:
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for name in _cases(quick):
            for api in apis:
                cmd = [sys.executable, __file__, "--one", name, "--api", api] + \
                    (["--quick"] if quick else [])
                env = dict(os.environ, MOONLITE_CACHE_DIR=os.path.join(cache, api + name))
                runs = []
                for _ in range(2):  # an empty cache, then the entry the first run wrote
                    start = time.perf_counter()
                    res = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE, env=env)
                    if res.returncode != 0:
                        runs.append(None)
                        break
                    data = json.loads(res.stdout.strip().splitlines()[-1])
                    data["process"] = time.perf_counter() - start
                    runs.append(data)
                if runs[-1] is None:
                    rows.append((name, api, None, None, res.stderr.strip().splitlines()[-1:]))
                    continue
                rows.append((name, api, runs[0], runs[1], None))
                print(f"  {name} {api}: {runs[0]['wall']:.2f} s, warm {runs[1]['wall']:.3f} s",
                      file=sys.stderr, flush=True)
    return rows


LOOP = 100  # calls per njit loop in the rows "each in an njit loop"


def per_call() -> list:
    import numba
    import moonlite

    @numba.njit
    def f(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(0.1, 1.0, 4)
    v = np.ones(4)
    g = moonlite.grad(f)
    rule = moonlite.build_frule(f, x)  # the compiled forward rule jvp's overhead is measured on

    @numba.njit
    def vjp_in_njit(x):  # moonlite.vjp and its pullback inside njit code (api_njit.py)
        return moonlite.vjp(f, x)[1](1.0)

    @numba.njit
    def sweep_in_njit(x):  # vjp alone: the pullback made and dropped
        return moonlite.vjp(f, x)[0]

    @numba.njit
    def vjp_in_njit_loop(x, n):
        s = 0.0
        for _ in range(n):
            s += moonlite.vjp(f, x)[1](1.0)[0][0]
        return s

    @numba.njit
    def jvp_in_njit_loop(x, v, n):
        s = 0.0
        for _ in range(n):
            s += moonlite.jvp(f, (x,), (v,))[1]
        return s
    calls = [
        ("primal f(x)", lambda: f(x)),
        ("forward rule(x, v), held (build_frule)", lambda: rule(x, v)),
        ("grad(f)(x), held", lambda: g(x)),
        ("grad(f)(x), inline", lambda: moonlite.grad(f)(x)),
        ("value_and_grad(f)(x)", lambda: moonlite.value_and_grad(f)(x)),
        ("jvp(f, (x,), (v,))", lambda: moonlite.jvp(f, (x,), (v,))),
        ("vjp(f, x)", lambda: moonlite.vjp(f, x)),
        ("vjp(f, x), in an njit function", lambda: sweep_in_njit(x)),
        ("vjp(f, x) + pullback", lambda: moonlite.vjp(f, x)[1](1.0)),
        ("vjp(f, x) + pullback, in an njit function", lambda: vjp_in_njit(x)),
        ("vjp(f, x) + pullback, each in an njit loop", lambda: vjp_in_njit_loop(x, LOOP)),
        ("jvp(f, (x,), (v,)), each in an njit loop", lambda: jvp_in_njit_loop(x, v, LOOP)),
        ("hvp(f, (x,), (v,))", lambda: moonlite.hvp(f, (x,), (v,))),
        ("jacfwd(f)(x)", lambda: moonlite.jacfwd(f)(x)),
        ("jacrev(f)(x)", lambda: moonlite.jacrev(f)(x)),
        ("hessian(f)(x)", lambda: moonlite.hessian(f)(x)),
    ]
    rows = []
    for name, call in calls:
        call()
        best = float("inf")
        for _ in range(7):
            n = 2000
            t = time.perf_counter()
            for _ in range(n):
                call()
            best = min(best, (time.perf_counter() - t) / n)
        rows.append((name, best * 1e6 / (LOOP if "njit loop" in name else 1)))
    return rows


def print_first_calls(rows: list, apis: list) -> None:
    print("## First call of a derivative (fresh process, primal already compiled)\n")
    print("| kernel | api | first call | " + " | ".join(PHASES) +
          " | unattributed | a later call | whole process | warm cache: first call |")
    print("|---|---|---|" + "---|" * (len(PHASES) + 4))
    walls = {api: [] for api in apis}
    warms = {api: [] for api in apis}
    for name, api, data, warm, err in rows:
        if data is None:
            print(f"| {name} | {api} | failed: {err} |" + " |" * (len(PHASES) + 4))
            continue
        walls[api].append(data["wall"])
        warms[api].append(warm["wall"])
        parts = [data.get(p, 0.0) for p in PHASES]
        rest = data["wall"] - sum(parts)
        print(f"| {name} | {api} | {data['wall']:.2f} s | " +
              " | ".join(f"{p:.2f}" for p in parts) +
              f" | {rest - data['run']:.2f} | {data['run']:.3f} s | {data['process']:.1f} s | "
              f"{warm['wall']:.3f} s |")
    for api, w in walls.items():
        if w:
            print(f"\nfirst {api} call: median {np.median(w):.2f} s, largest {max(w):.2f} s; "
                  f"from a warm cache: median {np.median(warms[api]):.3f} s, largest "
                  f"{max(warms[api]):.3f} s")
    print_compile_ratios(rows, [api for api in apis if api != "grad"])


def print_compile_ratios(rows: list, apis: list) -> None:
    """A second-order derivative's compile over its gradient's, per kernel (compile: the first
    call less a later call, which is what the first spent running)."""
    if not apis:
        return
    compile_ = {(name, api): data["wall"] - data["run"]
                for name, api, data, _, _ in rows if data is not None}
    print("\n| kernel | " + " | ".join(f"{api} / grad (compile)" for api in apis) + " |")
    print("|---|" + "---|" * len(apis))
    worst = {api: 0.0 for api in apis}
    for name in dict.fromkeys(name for name, *_ in rows):
        grad = compile_.get((name, "grad"))
        ratios = [compile_.get((name, api), float("nan")) / grad if grad else float("nan")
                  for api in apis]
        for api, r in zip(apis, ratios):
            worst[api] = max(worst[api], r) if r == r else worst[api]
        print(f"| {name} | " + " | ".join(f"{r:.1f}" for r in ratios) + " |")
    print("\n" + "; ".join(f"{api} / grad at most {worst[api]:.1f}" for api in apis))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--hessian", action="store_true")
    parser.add_argument("--hvp", action="store_true")
    parser.add_argument("--one")
    parser.add_argument("--api", default="grad")
    parser.add_argument("--per-call", action="store_true", help="only the per-call table")
    opts = parser.parse_args()
    sys.path.insert(0, HERE)
    if opts.one:
        print(json.dumps(_one(opts.one, opts.api, opts.quick)))
        return
    apis = ["grad"] + (["hessian"] if opts.hessian else []) + (["hvp"] if opts.hvp else [])
    rows = [] if opts.per_call else first_calls(opts.quick, apis)
    if rows:
        print_first_calls(rows, apis)
    print("\n## A call from Python (tiny kernel, 4 entries; microseconds)\n")
    print("| call | us |")
    print("|---|---|")
    rows = per_call()
    for name, us in rows:
        print(f"| {name} | {us:.2f} |")
    print_vjp_overheads(dict(rows))


def print_vjp_overheads(us: dict) -> None:
    """What each of vjp's two Python calls costs over the same call made inside njit code (the
    njit function's own call from Python, about 0.2 us, counts against the Python side)."""
    sweep = us["vjp(f, x)"] - us["vjp(f, x), in an njit function"]
    both_py = us["vjp(f, x) + pullback"] - us["vjp(f, x)"]
    both_njit = us["vjp(f, x) + pullback, in an njit function"] - \
        us["vjp(f, x), in an njit function"]
    print(f"\nPython over njit: vjp {sweep:.2f} us, its pullback {both_py - both_njit:.2f} us")


if __name__ == "__main__":
    main()
