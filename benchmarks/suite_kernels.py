"""The kernels of the comparison suite (`suite.py`), each written three ways: as the numba kernel
a scientist writes (what moonlite differentiates), and, for the comparison, as JAX and PyTorch
code computing the same function. Every kernel is a scalar function of a flat float64 vector
`theta` (its first argument) and of fixed data.

The JAX and PyTorch versions follow the numba code where it matters: the ODE updates its state
entry by entry in place (JAX: nested `fori_loop` with `.at[].add`; PyTorch: in-place updates of
a copy), since that is the code users have; the others use their libraries' vectorised style.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numba
import numpy as np

from common import logsumexp, rosenbrock  # the kernels bench_reverse.py measures too
from common import ode as ode_in_place


@dataclass
class Kernel:
    name: str
    numba_fn: Callable          # numba_fn(theta, *data) -> float
    theta: np.ndarray
    data: tuple
    jax_fn: Optional[Callable] = None    # built lazily: jax_fn(jnp, lax)(theta, *data)
    torch_fn: Optional[Callable] = None  # torch_fn(torch)(theta, *data)


# --- numba kernels ---------------------------------------------------------------------------

@numba.njit
def scalar_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i]) * math.exp(-0.1 * x[i] * x[i])
    return s


@numba.njit
def ode(state0, k, dt, steps):
    # the in-place Euler loop of benchmarks/common.py, on a copy: a function of state0 alone
    return ode_in_place(state0.copy(), k, dt, steps)


@numba.njit
def mlp(w1_flat, b1, w2, x):
    w1 = w1_flat.reshape((b1.shape[0], x.shape[0]))
    h = np.tanh(w1 @ x + b1)
    return np.sum(np.tanh(w2 @ h))


@numba.njit
def gmm(theta, x, k, gamma, wishart_m):
    """The Gaussian-mixture log-likelihood of GradBench/ADBench's `gmm`, with its Wishart prior
    (constants dropped): theta packs the log-weights (k), the means (k x d) and, per component,
    the log-diagonal (d) and the column-major strict lower triangle of the inverse covariance's
    Cholesky factor. Loops over points and components, a streaming logsumexp, no temporaries."""
    n, d = x.shape
    tri = d * (d - 1) // 2
    means0, icf0 = k, k + k * d
    total = 0.0
    for i in range(n):
        best, acc = -np.inf, 0.0
        for c in range(k):
            mean, icf = means0 + c * d, icf0 + c * (d + tri)
            sq, log_det = 0.0, 0.0
            for r in range(d):
                log_det += theta[icf + r]
                y = math.exp(theta[icf + r]) * (x[i, r] - theta[mean + r])
                for j in range(r):
                    y += theta[icf + d + j * (2 * d - j - 1) // 2 + r - j - 1] \
                        * (x[i, j] - theta[mean + j])
                sq += y * y
            v = theta[c] + log_det - 0.5 * sq
            if v > best:
                acc = acc * math.exp(best - v) + 1.0
                best = v
            else:
                acc += math.exp(v - best)
        total += best + math.log(acc)
    a_max = -np.inf
    for c in range(k):
        a_max = max(a_max, theta[c])
    a_sum = 0.0
    for c in range(k):
        a_sum += math.exp(theta[c] - a_max)
    total -= n * (a_max + math.log(a_sum))
    prior = 0.0
    for c in range(k):
        icf = icf0 + c * (d + tri)
        for r in range(d):
            prior += 0.5 * gamma * gamma * math.exp(2.0 * theta[icf + r]) - wishart_m * theta[icf + r]
        for t in range(tri):
            prior += 0.5 * gamma * gamma * theta[icf + d + t] ** 2
    return total + prior


@numba.njit
def least_squares(x, a, b):
    r = a @ x - b
    return 0.5 * np.sum(r * r)


# --- JAX versions ----------------------------------------------------------------------------

def _jax_scalar_loop(jnp, lax):
    return lambda x: jnp.sum(jnp.sin(x) * jnp.exp(-0.1 * x * x))


def _jax_rosenbrock(jnp, lax):
    return lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _jax_ode(jnp, lax):
    def f(state0, k, dt, steps):
        n = state0.shape[0]

        def entry(i, s):
            return s.at[i].add(dt * (-k * s[i] + jnp.sin(s[(i + 1) % n])))

        s = lax.fori_loop(0, steps, lambda _, s: lax.fori_loop(0, n, entry, s), state0)
        return jnp.sum(s * s)
    return f


def _jax_logsumexp(jnp, lax):
    def f(x):
        m = jnp.max(x)
        return m + jnp.log(jnp.sum(jnp.exp(x - m)))
    return f


def _jax_mlp(jnp, lax):
    def f(w1_flat, b1, w2, x):
        h = jnp.tanh(w1_flat.reshape(b1.shape[0], x.shape[0]) @ x + b1)
        return jnp.sum(jnp.tanh(w2 @ h))
    return f


def _lower_indices(d):
    rows = [r for j in range(d) for r in range(j + 1, d)]
    cols = [j for j in range(d) for r in range(j + 1, d)]
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)


def _jax_gmm(jnp, lax):
    from jax.scipy.special import logsumexp as lse

    def f(theta, x, k, gamma, wishart_m):
        n, d = x.shape
        rows, cols = _lower_indices(d)
        alphas, means = theta[:k], theta[k:k + k * d].reshape(k, d)
        icf = theta[k + k * d:].reshape(k, -1)
        q = jnp.zeros((k, d, d)).at[:, rows, cols].set(icf[:, d:])
        q = q + jax_diag(jnp, jnp.exp(icf[:, :d]))
        y = jnp.einsum("kij,knj->kni", q, x[None, :, :] - means[:, None, :])
        vals = alphas[:, None] + jnp.sum(icf[:, :d], 1)[:, None] - 0.5 * jnp.sum(y * y, -1)
        prior = 0.5 * gamma ** 2 * (jnp.sum(jnp.exp(2 * icf[:, :d])) + jnp.sum(icf[:, d:] ** 2)) \
            - wishart_m * jnp.sum(icf[:, :d])
        return jnp.sum(lse(vals, axis=0)) - n * lse(alphas) + prior
    return f


def jax_diag(jnp, v):
    return v[:, :, None] * jnp.eye(v.shape[1])[None, :, :]


def _jax_least_squares(jnp, lax):
    def f(x, a, b):
        r = a @ x - b
        return 0.5 * jnp.sum(r * r)
    return f


# --- PyTorch versions --------------------------------------------------------------------------

def _torch_scalar_loop(torch):
    return lambda x: torch.sum(torch.sin(x) * torch.exp(-0.1 * x * x))


def _torch_rosenbrock(torch):
    return lambda x: torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _torch_ode(torch):
    def f(state0, k, dt, steps):
        s = state0.clone()
        n = s.shape[0]
        for _ in range(steps):
            for i in range(n):
                s[i] = s[i] + dt * (-k * s[i] + torch.sin(s[(i + 1) % n]))
        return torch.sum(s * s)
    return f


def _torch_logsumexp(torch):
    def f(x):
        m = torch.max(x)
        return m + torch.log(torch.sum(torch.exp(x - m)))
    return f


def _torch_mlp(torch):
    def f(w1_flat, b1, w2, x):
        h = torch.tanh(w1_flat.reshape(b1.shape[0], x.shape[0]) @ x + b1)
        return torch.sum(torch.tanh(w2 @ h))
    return f


def _torch_gmm(torch):
    def f(theta, x, k, gamma, wishart_m):
        n, d = x.shape
        rows, cols = (torch.as_tensor(i) for i in _lower_indices(d))
        alphas, means = theta[:k], theta[k:k + k * d].reshape(k, d)
        icf = theta[k + k * d:].reshape(k, -1)
        q = torch.zeros((k, d, d), dtype=theta.dtype)
        q = q.index_put((torch.arange(k)[:, None], rows[None, :], cols[None, :]), icf[:, d:])
        q = q + torch.diag_embed(torch.exp(icf[:, :d]))
        y = torch.einsum("kij,knj->kni", q, x[None, :, :] - means[:, None, :])
        vals = alphas[:, None] + torch.sum(icf[:, :d], 1)[:, None] - 0.5 * torch.sum(y * y, -1)
        prior = 0.5 * gamma ** 2 * (torch.sum(torch.exp(2 * icf[:, :d]))
                                    + torch.sum(icf[:, d:] ** 2)) \
            - wishart_m * torch.sum(icf[:, :d])
        return torch.sum(torch.logsumexp(vals, 0)) - n * torch.logsumexp(alphas, 0) + prior
    return f


def _torch_least_squares(torch):
    def f(x, a, b):
        r = a @ x - b
        return 0.5 * torch.sum(r * r)
    return f


# --- the suite ---------------------------------------------------------------------------------

def kernels(quick: bool) -> list:
    """The suite's kernels with their data; `quick` shrinks them (CI)."""
    rng = np.random.default_rng(0)
    s = 4 if quick else 1
    n_pts, d, k = 1000 // s, 5, 5
    gmm_theta = np.concatenate([rng.standard_normal(k), rng.standard_normal(k * d),
                                0.1 * rng.standard_normal(k * (d + d * (d - 1) // 2))])
    a = rng.standard_normal((300 // s, 100 // s))
    return [
        Kernel("scalar loop", scalar_loop, rng.standard_normal(10_000 // s), (),
               _jax_scalar_loop, _torch_scalar_loop),
        Kernel("rosenbrock", rosenbrock, rng.uniform(0.0, 1.0, 10_000 // s), (),
               _jax_rosenbrock, _torch_rosenbrock),
        Kernel("ODE in place", ode, rng.standard_normal(32), (0.3, 1e-3, 200 // s),
               _jax_ode, _torch_ode),
        Kernel("logsumexp", logsumexp, rng.standard_normal(10_000 // s), (),
               _jax_logsumexp, _torch_logsumexp),
        Kernel("MLP 32-64-10", mlp, rng.standard_normal(64 * 32) / 8,
               (rng.standard_normal(64), rng.standard_normal((10, 64)) / 8,
                rng.standard_normal(32)), _jax_mlp, _torch_mlp),
        Kernel(f"GMM d={d} k={k} n={n_pts}", gmm, gmm_theta,
               (rng.standard_normal((n_pts, d)), k, 1.0, 0.0), _jax_gmm, _torch_gmm),
        Kernel("least squares", least_squares, rng.standard_normal(a.shape[1]),
               (a, rng.standard_normal(a.shape[0])), _jax_least_squares, _torch_least_squares),
    ]
