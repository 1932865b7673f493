"""Memory and threads (issue #8).

- Memory: 100,000 calls of `moonlite.grad` of array kernels (temporaries, a loop that needs a tape,
  a tape of arrays, a numpy expression) must not leak: numba's NRT allocation count minus free count does not grow
  between warm-up and the end. Run in a subprocess, because `NUMBA_NRT_STATS=1` has to be set
  before numba is imported.
- Threads: several Python threads calling `grad` and `jvp` on the same fresh function at once get
  correct results, and one cached rule per signature.
"""

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
from numba import njit

import moonlite
from moonlite import driver

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

LEAK_SCRIPT = textwrap.dedent('''
    import gc, os, sys
    assert os.environ["NUMBA_NRT_STATS"] == "1"
    import numpy as np
    from numba import njit
    from numba.core.runtime import rtsys
    import moonlite

    @njit
    def temporaries(x):
        t = np.zeros(x.shape[0])
        for i in range(x.shape[0]):
            t[i] = x[i] * x[i]
        return np.sum(t * np.ones(x.shape[0]) * x)

    @njit
    def taped_loop(x):
        # y is carried from one iteration to the next through sin: the pullback needs a tape
        y = 0.5
        for i in range(x.shape[0]):
            y = np.sin(y * x[i]) + x[i]
        return y

    @njit
    def expression(x):
        return np.sum(np.tanh(x) * np.exp(-x * x)) + np.dot(x, x)

    @njit
    def taped_arrays(x):
        # a new array every iteration, read by the pullback: a tape of arrays
        s = 0.0
        for i in range(3):
            t = np.sin(x * (i + 1.0))
            s += np.sum(t * t)
        return s

    x = np.linspace(-1.0, 1.0, 16)
    kernels = [moonlite.grad(f) for f in (temporaries, taped_loop, expression, taped_arrays)]

    def net():
        gc.collect()
        s = rtsys.get_allocation_stats()
        return s.alloc - s.free, s.mi_alloc - s.mi_free

    def run(calls):
        for g in kernels:
            for _ in range(calls):
                out = g(x)
        return out

    run(1000)  # compile and warm up
    for _ in range(3):  # vjp's first call, then its compiled dispatcher (api_vjp.py)
        _, pullback = moonlite.vjp(taped_loop, x)
        pullback(1.0)
    del pullback  # the pullback holds the tape until it is dropped
    before = net()
    calls = int(sys.argv[1])
    run(calls)
    after_grad = net()
    for _ in range(calls // 10):  # vjp keeps its tape between sweep and pullback
        _, pullback = moonlite.vjp(taped_loop, x)
        pullback(1.0)
    del pullback
    after_vjp = net()
    stats = rtsys.get_allocation_stats()
    print(before, after_grad, after_vjp, stats.alloc, len(kernels) * calls)
''')


def test_grad_does_not_leak_nrt_memory():
    env = dict(os.environ, NUMBA_NRT_STATS="1",
               PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    calls = 100_000 // 4  # per kernel: 100,000 grad calls in total
    done = subprocess.run([sys.executable, "-c", LEAK_SCRIPT, str(calls)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = done.stdout.strip().splitlines()[-1]
    numbers = [int(v) for v in line.replace("(", " ").replace(")", " ").replace(",", " ").split()]
    before, after_grad, after_vjp = numbers[0:2], numbers[2:4], numbers[4:6]
    allocations, total = numbers[6], numbers[7]
    assert total >= 100_000
    assert allocations >= total  # the gradients are NRT arrays: the counter did count
    assert after_grad == before, f"NRT (allocs - frees, meminfos) grew: {before} -> {after_grad}"
    assert after_vjp == before, f"vjp leaked: {before} -> {after_vjp}"


# --- threads -------------------------------------------------------------------------------------

def _fresh_kernel():
    """A new dispatcher each time: nothing about it is cached yet."""
    @njit
    def kernel(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += np.sin(x[i]) * x[i]
        return s
    return kernel


def test_threads_share_one_rule_per_signature_and_get_correct_results():
    f = _fresh_kernel()
    rules_before = driver.cached_rule_count()
    x = np.linspace(0.1, 1.0, 6)
    v = np.linspace(1.0, -1.0, 6)
    expected_grad = np.cos(x) * x + np.sin(x)
    threads_n = 4
    barrier = threading.Barrier(threads_n)
    results, errors = {}, []

    def work(k):
        try:
            barrier.wait(timeout=60)
            for _ in range(3):
                if k % 2 == 0:
                    results.setdefault(k, []).append(("grad", moonlite.grad(f)(x)))
                else:
                    results.setdefault(k, []).append(("jvp", moonlite.jvp(f, (x,), (v,))))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(threads_n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    # a deadlock (numba's compiler lock against moonlite's rule lock) shows up here
    assert not any(t.is_alive() for t in threads), "threads still running: deadlock?"
    assert not errors, errors
    for k, got in results.items():
        assert len(got) == 3
        for kind, value in got:
            if kind == "grad":
                np.testing.assert_allclose(value, expected_grad, rtol=1e-12)
            else:
                out, dout = value
                assert out == f(x)
                np.testing.assert_allclose(dout, np.dot(expected_grad, v), rtol=1e-12)
    # one forward rule (jvp) and one reverse rule (grad) for the one signature, however many
    # threads asked for them at once
    keys = list(f._moonlite_caches[0])
    assert sorted(key[0] for key in keys) == ["forward", "reverse"], keys
    assert driver.cached_rule_count() - rules_before == 2
