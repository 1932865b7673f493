"""Loop-kernel benchmark: the reverse-speed issue's family, gradient and JVP over primal by size.

Run: python benchmarks/bench_loops.py [--quick]
Seven kernels written the way numba users write them (benchmarks/loop_kernels.py), each at three
sizes spanning 100x in the loop trip count. Ratios are best-of-`repeat` measurements on this
machine, never test assertions. "jvp (rule)" times the compiled forward rule from
`moonlite.build_frule` (no Python dispatch); "jvp()" times the `moonlite.jvp` call, which adds
the Python overhead of finding the rule and packing tangents. "tape B/it" is the helper from
bench_reverse.py: 8 bytes per TapePush in the innermost loop of the derived reverse rule (the
loop with the fewest blocks, which may be one of several inner loops); the second number counts
the pushes in the outermost pushing loop's body once each (static, not per inner iteration).
"pushes never read" counts pushes onto tapes the pullback never reads (0: every byte kept is a
byte read). "width-8 jvp / 8 jvps" is one compiled forward evaluation carrying 8 tangent
directions of the first argument over 8 single-direction evaluations (below 1: batching pays).
The JAX column (only where `import jax` works) is `jax.jit(jax.grad(...))` of the same kernel
in jax.numpy with lax.fori_loop/scan, float64, for three kernels; it includes JAX's dispatch.
"""

from __future__ import annotations

import sys
import time
import traceback

import numpy as np

import moonlite
from bench_reverse import central_difference_gradient, tape_bytes_per_iteration
from common import best_time
from moonlite.driver import derived_forward_rule
from moonlite.ir import natural_loops, ops
from loop_kernels import (gmm_loglik, kinematic_chain, llsq, lstm, reprojection, rk4,
                          stream_lse)


def _cases(quick):
    """name -> (kernel, [(size label, make_args)] for 3 sizes spanning 100x)."""
    d = 10 if quick else 1
    rng = np.random.default_rng(0)
    x8 = rng.standard_normal(8) * 0.1

    def llsq_args(n):
        return lambda: (x8.copy(), n)

    p3 = np.array([0.3, 0.8, 0.05])
    y8 = rng.standard_normal(8)

    def rk4_args(steps):
        return lambda: (p3.copy(), y8.copy(), 0.01, steps)

    K = 4
    theta_g = np.concatenate([rng.standard_normal(K), rng.standard_normal(K) * 0.2,
                              rng.standard_normal(K) * 0.5])

    def gmm_args(n):
        X = np.random.default_rng(1).standard_normal(n) * 1.5
        return lambda: (theta_g.copy(), X)

    H = 8
    w_l = rng.standard_normal(4 * H * (H + 2) + H) * 0.3

    def lstm_args(T):
        xs = np.sin(np.arange(T) * 0.1)
        return lambda: (w_l.copy(), xs, H)

    def lse_args(n):
        x = np.random.default_rng(2).standard_normal(n)
        return lambda: (x.copy(),)

    cam = np.array([0.1, -0.2, 0.05, 0.1, -0.1, 5.0, 500.0, 1e-3, 1e-6])

    def reproj_args(n):
        r = np.random.default_rng(3)
        pts = r.standard_normal((n, 3))
        obs = r.standard_normal((n, 2)) * 50.0
        return lambda: (cam.copy(), pts, obs)

    def chain_args(n):
        th = np.random.default_rng(4).standard_normal(n) * 0.1
        lengths = np.full(n, 1.0 / n)
        target = np.array([0.3, 0.4])
        return lambda: (th.copy(), lengths, target)

    sizes = lambda a, b, c: [a // d, b // d, c // d]  # noqa: E731
    return [
        ("polynomial least squares (8 coeffs)", llsq, "points", sizes(1000, 10_000, 100_000),
         llsq_args),
        ("RK4, stage arrays (8 states)", rk4, "steps", sizes(100, 1000, 10_000), rk4_args),
        ("Gaussian mixture loglik (K=4)", gmm_loglik, "points", sizes(1000, 10_000, 100_000),
         gmm_args),
        ("LSTM-style cell in place (H=8)", lstm, "steps", sizes(20, 200, 2000), lstm_args),
        ("streaming logsumexp", stream_lse, "entries", sizes(1000, 10_000, 100_000), lse_args),
        ("reprojection residual", reprojection, "obs", sizes(1000, 10_000, 100_000),
         reproj_args),
        ("kinematic chain (3x3)", kinematic_chain, "links", sizes(10, 100, 1000), chain_args),
    ]


def _tangents(args, seed=5):
    """One tangent direction: random on the first argument, zero on the other floats."""
    r = np.random.default_rng(seed)
    out = []
    for k, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            out.append(r.standard_normal(a.shape) if k == 0 else np.zeros_like(a))
        elif isinstance(a, float):
            out.append(0.0)
        else:
            out.append(None)
    return out


def outer_tape_bytes(f, args) -> int:
    """8 bytes per TapePush in the body of the outermost loop that pushes (a static count: an
    inner loop's pushes are counted once, not once per inner iteration)."""
    loops = natural_loops(moonlite.build_rrule(f, *args).ir)
    counts = [sum(isinstance(op, ops.TapePush) for b in lp.body for op in b.ops) for lp in loops]
    return 8 * max(counts, default=0)


def measure(f, make_args, repeat, check):
    g = moonlite.grad(f)
    res = {}
    t0 = time.perf_counter()
    g(*make_args())
    res["first"] = time.perf_counter() - t0
    res["primal"] = best_time(f, make_args, repeat)
    res["grad"] = best_time(g, make_args, repeat)
    if check:
        fd = central_difference_gradient(f, make_args, 0)
        ours = g(*make_args())
        res["err"] = float(np.max(np.abs(ours - fd)) / max(np.max(np.abs(fd)), 1e-300))
    # forward mode: the compiled rule, and the moonlite.jvp call
    args0 = make_args()
    tans = _tangents(args0)
    try:
        rule = moonlite.build_frule(f, *args0)
        rule_tans = [t for t in tans if t is not None]
        rule(*make_args(), *rule_tans)
        res["jvp_rule"] = best_time(lambda *a: rule(*a, *rule_tans), make_args, repeat)
    except Exception as e:  # noqa: BLE001 -- a refusal is a finding, report it
        res["jvp_rule_err"] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
    try:
        moonlite.jvp(f, make_args(), tuple(tans))
        res["jvp_call"] = best_time(lambda *a: moonlite.jvp(f, a, tuple(tans)), make_args,
                                    repeat)
    except Exception as e:  # noqa: BLE001
        res["jvp_call_err"] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
    res["tape"] = tape_bytes_per_iteration(f, make_args())
    res["tape_outer"] = outer_tape_bytes(f, make_args())
    res["unread"] = unread_pushes(moonlite.build_rrule(f, *args0).ir)
    res["width8"] = batched_over_single(f, make_args, repeat)
    return res


def unread_pushes(fn) -> int:
    """Pushes onto tapes whose values the pullback never reads (no `tape.top`, and no
    `tape.pop` whose result is used): 0 means every byte kept is a byte read."""
    used = {v for op in fn.ops() for v in op.operands}
    read = set()
    for op in fn.ops():
        if isinstance(op, ops.TapePeek) or (isinstance(op, ops.TapePop) and op.result in used):
            read.add(op.tape)
    return sum(isinstance(op, ops.TapePush) and op.tape not in read for op in fn.ops())


def batched_over_single(f, make_args, repeat) -> float:
    """Time of one width-8 forward evaluation (8 tangent directions on the first argument) over
    8 single-direction ones, both compiled rules called directly."""
    args = make_args()
    argtypes = tuple(f.typeof_pyval(a) for a in args)
    x = args[0]
    seeds = [np.roll(np.eye(1, x.size, 0).reshape(x.shape), j) for j in range(8)]
    one = derived_forward_rule(f, argtypes, 1, frozenset([0]))
    eight = derived_forward_rule(f, argtypes, 8, frozenset([0]))
    one(*make_args(), seeds[0])
    eight(*make_args(), *seeds)
    t1 = best_time(lambda *a: one(*a, seeds[0]), make_args, repeat)
    t8 = best_time(lambda *a: eight(*a, *seeds), make_args, repeat)
    return t8 / (8 * t1)


def _jax_kernels():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax

    def llsq_j(x, n):
        m = x.shape[0]
        pw = jnp.arange(m)

        def body(i, total):
            t = -1.0 + i * 2.0 / (n - 1)
            r = jnp.sign(t) - jnp.sum(x * t ** pw)
            return total + r * r
        return lax.fori_loop(0, n, body, 0.0) / 2.0

    def lse_j(x):
        # started from the first entry: from m = -inf, jnp.where's untaken branch gives a NaN
        # gradient
        def body(carry, xi):
            m, s = carry
            big = xi > m
            s2 = jnp.where(big, s * jnp.exp(jnp.minimum(m - xi, 0.0)) + 1.0,
                           s + jnp.exp(jnp.minimum(xi - m, 0.0)))
            return (jnp.maximum(m, xi), s2), None
        (m, s), _ = lax.scan(body, (x[0], 1.0), x[1:])
        return m + jnp.log(s)

    def rk4_j(p, y0, dt, steps):
        def rhs(y):
            return -p[0] * y + p[1] * jnp.sin(jnp.roll(y, -1)) - p[2] * y ** 3

        def body(_, y):
            k1 = rhs(y)
            k2 = rhs(y + 0.5 * dt * k1)
            k3 = rhs(y + 0.5 * dt * k2)
            k4 = rhs(y + dt * k3)
            return y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        y = lax.fori_loop(0, steps, body, y0)
        return jnp.sum(y * y)

    def make(fn, static):
        gj = jax.jit(jax.grad(fn), static_argnums=static)

        def call(*a):
            return gj(*a).block_until_ready()
        return call

    return {llsq: make(llsq_j, (1,)), stream_lse: make(lse_j, ()),
            rk4: make(rk4_j, (3,))}


def main():
    quick = "--quick" in sys.argv
    repeat = 3 if quick else 7
    jaxk = _jax_kernels()
    print("# Loop kernels: gradient and JVP over primal\n")
    if jaxk is None:
        print("JAX not installed: no JAX column.\n")
    print("| kernel | size | primal | grad / primal | jvp (rule) / primal | jvp() / primal "
          "| width-8 jvp / 8 jvps | tape B/it: innermost / outer body | pushes never read "
          "| grad max rel err vs FD | first grad call | JAX jit(grad) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    growth = []
    for name, f, unit, sizes, maker in _cases(quick):
        ratios = []
        for k, n in enumerate(sizes):
            make_args = maker(n)
            label = f"{n} {unit}"
            try:
                r = measure(f, make_args, repeat, check=(k == 0))
            except Exception as e:  # noqa: BLE001 -- UnsupportedError etc.: a finding
                msg = f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
                print(f"| {name} | {label} | refused | {msg} | | | | | | | | |")
                traceback.print_exc(file=sys.stderr)
                break
            p = r["primal"]
            gr = r["grad"] / p
            jr = r["jvp_rule"] / p if "jvp_rule" in r else None
            jc = r["jvp_call"] / p if "jvp_call" in r else None
            ratios.append((gr, jr))
            jax_col = ""
            if jaxk is not None and f in jaxk:
                jfn = jaxk[f]
                a = make_args()
                jfn(*a)
                jt = best_time(jfn, make_args, repeat)
                jax_col = f"{jt * 1e3:.3f} ms ({jt / p:.1f}x primal)"
            jr_s = f"{jr:.2f}" if jr is not None else r.get("jvp_rule_err", "")
            jc_s = f"{jc:.2f}" if jc is not None else r.get("jvp_call_err", "")
            err = f"{r['err']:.1e}" if "err" in r else ""
            print(f"| {name} | {label} | {p * 1e3:.3f} ms | {gr:.2f} | {jr_s} | {jc_s} | "
                  f"{r['width8']:.2f} | {r['tape']} / {r['tape_outer']} | {r['unread']} | "
                  f"{err} | {r['first']:.2f} s | {jax_col} |", flush=True)
        if len(ratios) == 3:
            growth.append((name, ratios))
    print("\n## Growth from the smallest to the largest size (100x trip count)\n")
    print("| kernel | grad / primal, small -> large | growth | jvp (rule) / primal, "
          "small -> large | growth |")
    print("|---|---|---|---|---|")
    for name, ((g0, j0), _, (g2, j2)) in growth:
        js = (f"{j0:.2f} -> {j2:.2f} | {j2 / j0:.2f}x" if j0 is not None and j2 is not None
              else "n/a | n/a")
        print(f"| {name} | {g0:.2f} -> {g2:.2f} | {g2 / g0:.2f}x | {js} |")


if __name__ == "__main__":
    main()
