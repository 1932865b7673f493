"""moonlite's demo: `python -m moonlite.demo`.

Differentiates real numba kernels as they are written (a loop with a branch, rosenbrock in loop
form by reverse mode, an ODE integrator that updates its state in place, a numpy MLP, and the
Hessian of rosenbrock by forward over reverse), prints
the derivatives, their agreement with central finite differences, and timings: derivative over
primal time, and moonlite against finite differences. It also prints the moonlite IR captured
from one kernel.
"""

from __future__ import annotations

import time

import numba
import numpy as np

import moonlite
from moonlite.api import copy_arguments as _copied
from moonlite.testing import finite_difference_hessian


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
    return W2 @ h


@numba.njit
def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def _mlp_args():
    rng = np.random.default_rng(0)  # fresh and seeded: every call gives the same arguments
    return (rng.standard_normal((32, 16)), rng.standard_normal(32),
            rng.standard_normal((4, 32)), rng.standard_normal(16))


def _best(fn, make_args, repeat=5):
    times = []
    for _ in range(repeat):
        args = make_args()
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def _central_difference(f, args, argnum, h=1e-6):
    """Central differences of f with respect to argument `argnum` (a float or an array)."""
    x = np.asarray(args[argnum], dtype=float)
    columns = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        e = e.reshape(x.shape)
        plus, minus = list(_copied(args)), list(_copied(args))
        plus[argnum] = x + e if x.ndim else float(x + e)
        minus[argnum] = x - e if x.ndim else float(x - e)
        columns.append((np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * h))
    out = np.asarray(f(*_copied(args)))
    return np.stack(columns, axis=-1).reshape(out.shape + x.shape)


def _relative(ours, fd) -> float:
    """Largest difference relative to the size of the derivative (finite differences carry
    about 1e-8 relative error here)."""
    ours, fd = np.asarray(ours, dtype=float), np.asarray(fd, dtype=float)
    return float(np.max(np.abs(ours - fd)) / max(1.0, np.max(np.abs(fd))))


def _section(title: str) -> None:
    print(f"\n## {title}\n")


def _jvp_example():
    x, n = 0.7, 100_000
    out, dout = moonlite.jvp(sum_sin_loop, (x, n), (1.0, None))
    fd = _central_difference(sum_sin_loop, (x, n), 0)
    t_primal = _best(sum_sin_loop, lambda: (x, n))
    t_jvp = _best(lambda *a: moonlite.jvp(sum_sin_loop, a, (1.0, None)), lambda: (x, n))
    return ("sum_sin_loop: d/dx (loop of 1e5 with a branch)", f"{dout:.10g}", f"{float(fd):.10g}",
            _relative(dout, fd), t_jvp / t_primal, None)


def _grad_example():
    make = lambda: (np.linspace(-1.0, 1.0, 200),)  # noqa: E731
    g = moonlite.grad(rosenbrock)
    ours = g(*make())
    fd = _central_difference(rosenbrock, make(), 0)
    t_primal = _best(rosenbrock, make)
    t_grad = _best(g, make)
    t_fd = _best(lambda *a: _central_difference(rosenbrock, a, 0), make, repeat=2)
    return ("rosenbrock: gradient by reverse mode (200 entries, loop form)",
            np.array2string(ours[:4], precision=6) + " ...",
            np.array2string(fd[:4], precision=6) + " ...", _relative(ours, fd),
            t_grad / t_primal, t_fd / t_grad)


def _ode_example():
    make = lambda: (np.linspace(0.0, 1.0, 16), 0.3, 1e-3, 2000)  # noqa: E731
    jac = moonlite.jacfwd(euler_ode, argnums=0)(*make())
    fd = _central_difference(euler_ode, make(), 0)
    t_primal = _best(euler_ode, make)
    t_jac = _best(moonlite.jacfwd(euler_ode, argnums=0), make)
    t_fd = _best(lambda *a: _central_difference(euler_ode, a, 0), make, repeat=2)
    shown = np.array2string(jac[:4], precision=5) + " ..."
    return ("euler_ode: gradient wrt the initial state (2000 in-place steps)", shown,
            np.array2string(fd[:4], precision=5) + " ...", _relative(jac, fd),
            t_jac / t_primal, t_fd / t_jac)


def _mlp_example():
    jac = moonlite.jacfwd(mlp, argnums=3)(*_mlp_args())
    fd = _central_difference(mlp, _mlp_args(), 3)
    t_primal = _best(mlp, _mlp_args)
    t_jac = _best(moonlite.jacfwd(mlp, argnums=3), _mlp_args)
    t_fd = _best(lambda *a: _central_difference(mlp, a, 3), _mlp_args, repeat=2)
    return ("mlp: Jacobian of the 4 outputs wrt the 16 inputs", f"shape {jac.shape}, "
            f"J[0, :3] = {np.array2string(jac[0, :3], precision=5)}",
            f"J[0, :3] = {np.array2string(fd[0, :3], precision=5)}", _relative(jac, fd),
            t_jac / t_primal, t_fd / t_jac)


def _hessian_example():
    make = lambda: (np.linspace(-1.0, 1.0, 12),)  # noqa: E731
    H = moonlite.hessian(rosenbrock)
    ours = H(*make())
    fd = finite_difference_hessian(rosenbrock, *make())
    t_primal = _best(rosenbrock, make)
    t_hess = _best(H, make)
    t_fd = _best(lambda x: finite_difference_hessian(rosenbrock, x), make, repeat=2)
    return ("rosenbrock Hessian: 12 x 12, dense, by forward over reverse",
            f"H[0, :3] = {np.array2string(ours[0, :3], precision=4)}, max asymmetry "
            f"{np.max(np.abs(ours - ours.T)):.0e}",
            f"H[0, :3] = {np.array2string(fd[0, :3], precision=4)} (second-order differences)",
            _relative(ours, fd), t_hess / t_primal, t_fd / t_hess)


def main() -> None:
    print(f"moonlite {moonlite.__version__} (numba {numba.__version__})")
    _section("The moonlite IR of sum_sin_loop (captured from numba's typed IR)")
    print(moonlite.capture(sum_sin_loop, 0.7, 10))

    rows = []
    for example in (_jvp_example, _grad_example, _ode_example, _mlp_example, _hessian_example):
        t0 = time.perf_counter()
        row = example()
        rows.append(row + (time.perf_counter() - t0,))

    _section("Derivatives of real kernels, against central finite differences")
    for name, ours, fd, diff, ratio, speedup, _ in rows:
        print(f"{name}\n  moonlite:           {ours}\n  finite differences: {fd}\n"
              f"  max |difference| relative to the largest entry: {diff:.1e}\n")

    _section("Timings (best of several runs, this machine)")
    print("| kernel | derivative / primal time | moonlite speed-up over finite differences |"
          " first call incl. compile |")
    print("|---|---|---|---|")
    for name, _, _, _, ratio, speedup, total in rows:
        short = name.split(":")[0]
        faster = f"{speedup:.1f}x" if speedup is not None else "n/a (one direction)"
        print(f"| {short} | {ratio:.2f} | {faster} | {total:.1f} s (whole example) |")

    print("\n(derivative / primal: one JVP for sum_sin_loop, one gradient for rosenbrock, a "
          "whole Jacobian by jacfwd, 8 directions per evaluation, for euler_ode and mlp, and the "
          "whole Hessian, 4 directions per evaluation of the forward-over-reverse rule)")
    # second-order differences (the Hessian row) carry about 1e-6 relative error, first-order
    # ones about 1e-8
    tolerances = [1e-6] * (len(rows) - 1) + [1e-4]
    if any(row[3] > tol for row, tol in zip(rows, tolerances)):
        raise SystemExit("derivatives disagree with finite differences: please report this")


if __name__ == "__main__":
    main()
