"""The comparison suite: moonlite against finite differences, JAX and PyTorch, on seven kernels.

Run:  python benchmarks/suite.py [--quick] [--plot PATH]

For each kernel (`suite_kernels.py`): the primal time; moonlite's JVP (one direction), gradient
and Hessian-vector product, as ratios to the primal; central finite differences as an
njit-compiled difference loop and as `scipy.optimize.approx_fprime`; `jax.jit(jax.grad)` and
`torch.func.grad` when those are installed (optional: `pip install -e ".[compare]"`); for each
tool the gradient time, its maximum difference from moonlite's gradient and its first-call
latency (tracing and compilation included). Times are the best of several calls, taken in one
run on one machine: read the ratios, not the absolute numbers. Prints markdown tables and writes
a PNG plot (with matplotlib installed).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numba
import numpy as np

import moonlite
from suite_kernels import kernels


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def first_call(fn) -> tuple:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


@numba.njit
def central_differences(f, theta, data, h):
    g = np.empty(theta.size)
    for k in range(theta.size):
        plus, minus = theta.copy(), theta.copy()
        plus[k] += h
        minus[k] -= h
        g[k] = (f(plus, *data) - f(minus, *data)) / (2.0 * h)
    return g


def _read_only(data: tuple) -> tuple:
    """Data arrays as read-only: moonlite then knows they are constants (no tangent work)."""
    out = []
    for d in data:
        if isinstance(d, np.ndarray):
            d = d.copy()
            d.setflags(write=False)
        out.append(d)
    return tuple(out)


def measure_moonlite(kern, repeat: int) -> dict:
    f, theta, data = kern.numba_fn, kern.theta, _read_only(kern.data)
    primal = best_of(lambda: f(theta, *data), repeat)
    # the data's tangents are zeros (jvp and hvp take one per float argument)
    none = tuple(0.0 if isinstance(d, float) else np.zeros_like(d) if isinstance(d, np.ndarray)
                 else None for d in data)
    direction = np.random.default_rng(1).standard_normal(theta.shape)
    g = moonlite.grad(f)
    grad, grad_first = first_call(lambda: g(theta, *data))
    _, jvp_first = first_call(lambda: moonlite.jvp(f, (theta, *data), (direction, *none)))
    _, hvp_first = first_call(lambda: moonlite.hvp(f, (theta, *data), (direction, *none)))
    return {
        "primal": primal, "grad": grad,
        "grad_time": best_of(lambda: g(theta, *data), repeat),
        "jvp_time": best_of(lambda: moonlite.jvp(f, (theta, *data), (direction, *none)), repeat),
        "hvp_time": best_of(lambda: moonlite.hvp(f, (theta, *data), (direction, *none)), repeat),
        "first": {"grad": grad_first, "jvp": jvp_first, "hvp": hvp_first},
    }


def measure_finite_differences(kern, repeat: int) -> dict:
    from scipy.optimize import approx_fprime
    f, theta, data = kern.numba_fn, kern.theta, kern.data
    h = 1e-6
    g, first = first_call(lambda: central_differences(f, theta, data, h))
    scalar = lambda t: f(t, *data)  # noqa: E731
    return {
        "njit": (g, best_of(lambda: central_differences(f, theta, data, h), max(1, repeat // 3)),
                 first),
        "scipy": (approx_fprime(theta, scalar, 1.5e-8),
                  best_of(lambda: approx_fprime(theta, scalar, 1.5e-8), 1), None),
    }


def measure_jax(kern, repeat: int):
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax
    except (ImportError, OSError):
        return None
    jax.config.update("jax_enable_x64", True)
    fn = kern.jax_fn(jnp, lax)
    data = tuple(jnp.asarray(d) if isinstance(d, np.ndarray) else d for d in kern.data)
    g = jax.jit(jax.grad(lambda t: fn(t, *data)))
    theta = jnp.asarray(kern.theta)
    try:
        out, first = first_call(lambda: g(theta).block_until_ready())
    except Exception as exc:  # noqa: BLE001  (JAX raises many kinds; the table says which)
        return _failure(exc)
    return np.asarray(out), best_of(lambda: g(theta).block_until_ready(), repeat), first


def measure_torch(kern, repeat: int):
    try:
        import torch
        from torch.func import grad
    except (ImportError, OSError):  # not installed, or a broken install
        return None
    fn = kern.torch_fn(torch)
    data = tuple(torch.as_tensor(d) if isinstance(d, np.ndarray) else d for d in kern.data)
    g = grad(lambda t: fn(t, *data))
    theta = torch.as_tensor(kern.theta)
    try:
        out, first = first_call(lambda: g(theta))
    except RuntimeError as exc:  # e.g. the in-place ODE, written as numba users write it
        return _failure(exc)
    return out.numpy(), best_of(lambda: g(theta), max(1, repeat // 3)), first


def _failure(exc) -> str:
    return f"fails: {str(exc).splitlines()[0][:90]}"


def _diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def run(quick: bool) -> list:
    repeat = 3 if quick else 7
    rows = []
    for kern in kernels(quick):
        m = measure_moonlite(kern, repeat)
        fd = measure_finite_differences(kern, repeat)
        rows.append({"kernel": kern, "moonlite": m, "fd": fd,
                     "jax": measure_jax(kern, repeat), "torch": measure_torch(kern, repeat)})
        print(f"measured {kern.name}", flush=True)
    return rows


def _ms(t: float) -> str:
    return f"{t * 1e3:.3f} ms"


def print_tables(rows: list) -> None:
    print(f"\nMachine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numba {numba.__version__}\n")
    print("## moonlite: derivative time over primal time\n")
    print("| kernel | inputs | primal | JVP / primal | gradient / primal | HVP / primal | "
          "first call: JVP, gradient, HVP |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        m, k = r["moonlite"], r["kernel"]
        first = m["first"]
        print(f"| {k.name} | {k.theta.size} | {_ms(m['primal'])} | "
              f"{m['jvp_time'] / m['primal']:.1f} | {m['grad_time'] / m['primal']:.1f} | "
              f"{m['hvp_time'] / m['primal']:.1f} | {first['jvp']:.1f} s, "
              f"{first['grad']:.1f} s, {first['hvp']:.1f} s |")
    print("\n## Gradients: time (and max abs difference from moonlite's gradient)\n")
    print("| kernel | moonlite | central differences (njit loop) | scipy approx_fprime | "
          "JAX jit(grad) | PyTorch func.grad |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        m = r["moonlite"]
        cells = [_ms(m["grad_time"])]
        for g, t, _ in (r["fd"]["njit"], r["fd"]["scipy"]):
            cells.append(f"{_ms(t)} ({t / m['grad_time']:.0f}x; {_diff(g, m['grad']):.1e})")
        for tool in ("jax", "torch"):
            res = r[tool]
            cells.append("not installed" if res is None else res if isinstance(res, str) else
                         f"{_ms(res[1])} ({res[1] / m['grad_time']:.1f}x; "
                         f"{_diff(res[0], m['grad']):.1e})")
        print(f"| {r['kernel'].name} | " + " | ".join(cells) + " |")
    print("\n(in brackets: the tool's time over moonlite's gradient time, and its largest "
          "difference from moonlite's gradient)\n")
    print("## First-call latency of the gradient (tracing and compilation included)\n")
    print("| kernel | moonlite | njit difference loop | JAX | PyTorch |")
    print("|---|---|---|---|---|")
    for r in rows:
        cells = [f"{r['moonlite']['first']['grad']:.2f} s", f"{r['fd']['njit'][2]:.2f} s"]
        cells += ["not installed" if r[t] is None else "fails" if isinstance(r[t], str)
                  else f"{r[t][2]:.2f} s" for t in ("jax", "torch")]
        print(f"| {r['kernel'].name} | " + " | ".join(cells) + " |")


def plot(rows: list, path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"\n(no plot: matplotlib is not installed)")
        return
    names = [r["kernel"].name for r in rows]
    series = {"moonlite": [r["moonlite"]["grad_time"] for r in rows],
              "central differences (njit)": [r["fd"]["njit"][1] for r in rows]}
    for tool, label in (("jax", "JAX"), ("torch", "PyTorch")):
        if any(r[tool] is not None and not isinstance(r[tool], str) for r in rows):
            series[label] = [np.nan if r[tool] is None or isinstance(r[tool], str) else r[tool][1]
                             for r in rows]  # a missing bar: the tool failed on that kernel
    primal = np.array([r["moonlite"]["primal"] for r in rows])
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(series)
    for i, (label, times) in enumerate(series.items()):
        ax.bar(np.arange(len(rows)) + i * width, np.array(times) / primal, width, label=label)
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(rows)) + 0.4 - width / 2, names, rotation=20, ha="right")
    ax.set_ylabel("gradient time / primal time")
    ax.set_title("Gradient cost relative to the numba primal (lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller kernels (CI)")
    parser.add_argument("--plot", default=os.path.join(os.path.dirname(__file__), "results",
                                                       "suite.png"))
    args = parser.parse_args()
    rows = run(args.quick)
    print_tables(rows)
    os.makedirs(os.path.dirname(os.path.abspath(args.plot)), exist_ok=True)
    plot(rows, args.plot)


if __name__ == "__main__":
    main()
