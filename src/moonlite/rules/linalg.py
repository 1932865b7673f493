"""Rules of `np.linalg`, written as custom rules (`custom.py`), like a user would write them.

Each function has a JVP (forward mode) and a VJP whose forward half hands what it computed to
the backward half (ChainRules' point about reusing primal work: the inverse, the Cholesky
factor, the eigenvectors are computed once). Second derivatives come from forward mode over
these rules, which calls the JVPs of the linalg functions they use.

`cholesky` and `eigh` read only the lower triangle of their input (numpy's default), so their
derivatives are those of the function of the lower triangle: a tangent's upper triangle is
ignored, and a cotangent lands on the lower triangle only. For symmetric input and symmetric
perturbations this is the usual derivative.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from .custom import custom_jvp, custom_vjp


@nb.njit(cache=False, error_model="numpy")
def _columns(x):
    """`x` as a C-contiguous matrix: a vector becomes one column."""
    return np.ascontiguousarray(x).reshape((x.shape[0], -1))


@nb.njit(cache=False, error_model="numpy")
def _as_shape_of(g, x):
    return np.ascontiguousarray(g).reshape(x.shape)


# --- solve ---------------------------------------------------------------------------------

@nb.njit(cache=False, error_model="numpy")
def solve_jvp(primals, tangents):
    a, b = primals
    da, db = tangents
    x = np.linalg.solve(a, b)
    return x, np.linalg.solve(a, db - _as_shape_of(np.ascontiguousarray(da) @ _columns(x), x))


@nb.njit(cache=False, error_model="numpy")
def solve_fwd(a, b):
    x = np.linalg.solve(a, b)
    return x, (a, x)


@nb.njit(cache=False, error_model="numpy")
def solve_bwd(residuals, g):
    a, x = residuals
    gb = np.linalg.solve(np.ascontiguousarray(a.T), g)
    ga = -(_columns(gb) @ _columns(x).T)
    return ga, gb


# --- inv -----------------------------------------------------------------------------------

@nb.njit(cache=False, error_model="numpy")
def inv_jvp(primals, tangents):
    y = np.linalg.inv(primals[0])
    return y, -(y @ np.ascontiguousarray(tangents[0]) @ y)


@nb.njit(cache=False, error_model="numpy")
def inv_fwd(a):
    y = np.linalg.inv(a)
    return y, y


@nb.njit(cache=False, error_model="numpy")
def inv_bwd(y, g):
    yt = np.ascontiguousarray(y.T)
    return (-(yt @ np.ascontiguousarray(g) @ yt),)


# --- det, slogdet --------------------------------------------------------------------------

@nb.njit(cache=False, error_model="numpy")
def det_jvp(primals, tangents):
    a, da = primals[0], tangents[0]
    d = np.linalg.det(a)
    return d, d * np.trace(np.linalg.solve(a, np.ascontiguousarray(da)))


@nb.njit(cache=False, error_model="numpy")
def det_fwd(a):
    d = np.linalg.det(a)
    return d, (a, d)


@nb.njit(cache=False, error_model="numpy")
def det_bwd(residuals, g):
    a, d = residuals
    return (g * d * np.ascontiguousarray(np.linalg.inv(a).T),)


@nb.njit(cache=False, error_model="numpy")
def slogdet_jvp(primals, tangents):
    a, da = primals[0], tangents[0]
    sign, logdet = np.linalg.slogdet(a)
    return (sign, logdet), (0.0, np.trace(np.linalg.solve(a, np.ascontiguousarray(da))))


@nb.njit(cache=False, error_model="numpy")
def slogdet_fwd(a):
    return np.linalg.slogdet(a), a


@nb.njit(cache=False, error_model="numpy")
def slogdet_bwd(a, g):
    return (g[1] * np.ascontiguousarray(np.linalg.inv(a).T),)


# --- cholesky ------------------------------------------------------------------------------

@nb.njit(cache=False, error_model="numpy")
def _symmetric_from_lower(d):
    """The symmetric matrix whose lower triangle is `d`'s (what a lower-triangle reader sees)."""
    low = np.tril(d)
    return low + np.tril(d, -1).T


@nb.njit(cache=False, error_model="numpy")
def _to_lower(g):
    """A cotangent of the symmetric matrix sent to the lower triangle it is built from."""
    return np.tril(g) + np.tril(g.T, -1)


@nb.njit(cache=False, error_model="numpy")
def _phi(x):
    """The lower triangle with the diagonal halved."""
    out = np.tril(x)
    for i in range(x.shape[0]):
        out[i, i] *= 0.5
    return out


@nb.njit(cache=False, error_model="numpy")
def cholesky_jvp(primals, tangents):
    l = np.linalg.cholesky(primals[0])
    ds = _symmetric_from_lower(np.ascontiguousarray(tangents[0]))
    linv = np.linalg.inv(l)
    return l, l @ _phi(linv @ ds @ np.ascontiguousarray(linv.T))


@nb.njit(cache=False, error_model="numpy")
def cholesky_fwd(a):
    l = np.linalg.cholesky(a)
    return l, l


@nb.njit(cache=False, error_model="numpy")
def cholesky_bwd(l, g):
    linv = np.linalg.inv(l)
    lt_g = np.ascontiguousarray(l.T) @ np.ascontiguousarray(g)
    gs = np.ascontiguousarray(linv.T) @ _phi(lt_g) @ linv
    return (_to_lower(gs),)


# --- eigh ----------------------------------------------------------------------------------

@nb.njit(cache=False, error_model="numpy")
def _gap_inverses(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it (distinct eigenvalues assumed)."""
    n = w.shape[0]
    f = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                f[i, j] = 1.0 / (w[j] - w[i])
    return f


@nb.njit(cache=False, error_model="numpy")
def eigh_jvp(primals, tangents):
    w, v = np.linalg.eigh(primals[0])
    vc = np.ascontiguousarray(v)
    m = np.ascontiguousarray(v.T) @ _symmetric_from_lower(np.ascontiguousarray(tangents[0])) @ vc
    return (w, v), (np.diag(m).copy(), vc @ (_gap_inverses(w) * m))


@nb.njit(cache=False, error_model="numpy")
def eigh_fwd(a):
    w, v = np.linalg.eigh(a)
    return (w, v), (w, np.ascontiguousarray(v))  # (numba's eigenvectors are Fortran-ordered)


@nb.njit(cache=False, error_model="numpy")
def eigh_bwd(residuals, g):
    w, v = residuals
    gw, gv = g
    inner = np.diag(np.ascontiguousarray(gw)) + _gap_inverses(w) * (
        np.ascontiguousarray(v.T) @ np.ascontiguousarray(gv))
    return (_to_lower(v @ inner @ np.ascontiguousarray(v.T)),)


custom_jvp(np.linalg.solve, solve_jvp)
custom_vjp(np.linalg.solve, solve_fwd, solve_bwd)
custom_jvp(np.linalg.inv, inv_jvp)
custom_vjp(np.linalg.inv, inv_fwd, inv_bwd)
custom_jvp(np.linalg.det, det_jvp)
custom_vjp(np.linalg.det, det_fwd, det_bwd)
custom_jvp(np.linalg.slogdet, slogdet_jvp)
custom_vjp(np.linalg.slogdet, slogdet_fwd, slogdet_bwd)
custom_jvp(np.linalg.cholesky, cholesky_jvp)
custom_vjp(np.linalg.cholesky, cholesky_fwd, cholesky_bwd)
custom_jvp(np.linalg.eigh, eigh_jvp)
custom_vjp(np.linalg.eigh, eigh_fwd, eigh_bwd)


# --- test cases (run through moonlite.testing by tests/ad/test_*_numpy.py, reverse rules) ----

def _well_conditioned(n):
    return lambda rng: rng.uniform(-1.0, 1.0, (n, n)) + n * np.eye(n)


def _positive_definite(n):
    def draw(rng):
        m = rng.uniform(-1.0, 1.0, (n, n))
        return m @ m.T + n * np.eye(n)
    return draw


def _symmetric_spread(n):
    """Symmetric, eigenvalues about 1, 2, ..., n apart (eigenvectors well defined)."""
    def draw(rng):
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        return (q * np.arange(1.0, n + 1.0)) @ q.T
    return draw


def _vector(n):
    return lambda rng: rng.uniform(-2.0, 2.0, n)


def _case(name, fn, *draws, wrt=None, rtol=1e-6):
    from .cases import NumpyRuleCase
    wrt = tuple(range(len(draws))) if wrt is None else wrt
    return NumpyRuleCase(name, fn, lambda rng: tuple(d(rng) for d in draws), wrt, rtol)


LINALG_RULE_CASES = [
    _case("solve_vector", lambda a, b: np.linalg.solve(a, b), _well_conditioned(4), _vector(4)),
    _case("solve_matrix", lambda a, b: np.linalg.solve(a, b), _well_conditioned(3),
          lambda rng: rng.uniform(-2.0, 2.0, (3, 2))),
    _case("inv", lambda a: np.linalg.inv(a), _well_conditioned(4)),
    _case("det", lambda a: np.linalg.det(a), _well_conditioned(4)),
    _case("slogdet", lambda a: np.linalg.slogdet(a)[1], _well_conditioned(4)),
    _case("slogdet_sign_times_log", lambda a: np.linalg.slogdet(-a)[0] * np.linalg.slogdet(a)[1],
          _well_conditioned(3)),
    _case("cholesky", lambda a: np.linalg.cholesky(a), _positive_definite(4)),
    _case("eigh_values", lambda a: np.linalg.eigh(a)[0], _symmetric_spread(4)),
    # eigenvectors have a free sign: v * v is what a well-posed function of them sees
    _case("eigh_vectors", lambda a, c: np.sum(np.linalg.eigh(a)[1] ** 2 * c),
          _symmetric_spread(4), lambda rng: rng.uniform(-1.0, 1.0, (4, 4)), wrt=(0,)),
    _case("eigh_both", lambda a: np.sum(np.linalg.eigh(a)[0] * np.linalg.eigh(a)[1][0] ** 2),
          _symmetric_spread(3)),
    _case("solve_composite",
          lambda a, b: np.sum(np.linalg.solve(a @ a.T + np.eye(3), b) ** 2)
          + np.linalg.slogdet(a @ a.T + np.eye(3))[1],
          _well_conditioned(3), _vector(3)),
]
