"""Rules of `np.linalg`, written as custom rules (`custom.py`), like a user would write them.

Each function has a JVP (forward mode) and a VJP whose forward half hands what it computed to
the backward half (ChainRules' point about reusing primal work: the inverse, the Cholesky
factor, the eigenvectors are computed once). Second derivatives come from forward mode over
these rules, which calls the JVPs of the linalg functions they use.

`cholesky` and `eigh` read only the lower triangle of their input (numpy's default), so their
derivatives are those of the function of the lower triangle: a tangent's upper triangle is
ignored, and a cotangent lands on the lower triangle only. For symmetric input and symmetric
perturbations this is the usual derivative.

`svd`, `pinv` and `qr` have rules for the inputs where their derivatives are defined, and
refuse the others when they meet them, at run time (`UnsupportedInputError`: only the shapes
and values show it): the full u or vt of a non-square matrix (the extra columns are any basis
LAPACK picks), pinv of a matrix of lower rank (it jumps there), qr of a wide matrix (not
covered). The derivatives of eigenvectors and singular vectors divide by gaps between
eigenvalues (singular values): repeated ones give infinite or nan derivatives of the vectors,
while the values alone keep theirs (a zero cotangent of the vectors stays zero).

`np.linalg.matrix_power` has no rule: numba's returns an Optional, so capture calls
`matrix_power` below instead (`capture/rewrites.py`), which every mode differentiates.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..errors import UnsupportedInputError
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
def _over_gaps(x, w):
    """F * x with F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it (distinct eigenvalues
    assumed): exactly 0 where x is, so that the eigenvalues alone (a zero cotangent of v)
    have their derivative at repeated eigenvalues too, where F is infinite."""
    n = w.shape[0]
    out = np.zeros((n, n), x.dtype)
    for i in range(n):
        for j in range(n):
            if i != j and x[i, j] != 0.0:
                out[i, j] = x[i, j] / (w[j] - w[i])
    return out


@nb.njit(cache=False, error_model="numpy")
def eigh_jvp(primals, tangents):
    w, v = np.linalg.eigh(primals[0])
    vc = np.ascontiguousarray(v)
    m = np.ascontiguousarray(v.T) @ _symmetric_from_lower(np.ascontiguousarray(tangents[0])) @ vc
    return (w, v), (np.diag(m).copy(), vc @ _over_gaps(m, w))


@nb.njit(cache=False, error_model="numpy")
def eigh_fwd(a):
    w, v = np.linalg.eigh(a)
    return (w, v), (w, np.ascontiguousarray(v))  # (numba's eigenvectors are Fortran-ordered)


@nb.njit(cache=False, error_model="numpy")
def eigh_bwd(residuals, g):
    w, v = residuals
    gw, gv = g
    inner = np.diag(np.ascontiguousarray(gw)) + _over_gaps(
        np.ascontiguousarray(v.T) @ np.ascontiguousarray(gv), w)
    return (_to_lower(v @ inner @ np.ascontiguousarray(v.T)),)


# --- optional arguments (svd's full_matrices, pinv's rcond) --------------------------------
# A rule receives the call's arguments as numba typed them: `np.linalg.svd(a)` and
# `np.linalg.svd(a, full_matrices=False)` (capture puts the keyword in position) are calls of
# one function with one or two arguments. The rules take the options as a tuple and hand it
# on with `*`, so numba's own defaults apply when it is empty.

@nb.njit(cache=False, error_model="numpy")
def _zero_cotangents(options):
    """One zero cotangent per option given: neither full_matrices nor rcond moves the result
    (pinv refuses the inputs where rcond would). numba makes `len` of a tuple a constant and
    drops the branch not taken, so the two returns need not have one type."""
    if len(options) == 0:
        return ()
    return (0.0,)


@nb.njit(cache=False, error_model="numpy")
def _wants_full(full_matrices=True):
    return bool(full_matrices)  # (numpy's default: the full u and vt)


# --- svd -----------------------------------------------------------------------------------
# a = u diag(s) vt, with u: m x k, vt: k x n, k = min(m, n) (reduced, or full and square).
# The derivatives of u and vt divide by the gaps s[j]**2 - s[i]**2 between singular values and,
# for a non-square matrix, by the singular values themselves: distinct nonzero singular values
# are assumed (repeated ones give infinite or nan derivatives of the vectors, as in every AD
# tool; the singular values alone are fine).

@nb.njit(cache=False, error_model="numpy")
def _svd_checked(a, options):
    """np.linalg.svd(a, *options), refused at run time for the full u or vt of a non-square
    matrix: their columns (rows) beyond min(m, n) are a basis of the orthogonal complement,
    which LAPACK chooses freely, so no formula gives the derivative of LAPACK's choice."""
    if _wants_full(*options) and a.shape[0] != a.shape[1]:
        raise UnsupportedInputError(
            "the derivative of np.linalg.svd of a non-square matrix with full_matrices=True "
            "(numpy's default): the columns of u, or rows of vt, beyond min(m, n) are any "
            "orthonormal basis of the complement, which LAPACK picks freely, so they have no "
            "derivative",
            "pass full_matrices=False: the singular values and the first min(m, n) singular "
            "vectors are the same")
    return np.linalg.svd(a, *options)


@nb.njit(cache=False, error_model="numpy")
def _over_square_gaps(x, s):
    """F * x with F[i, j] = 1 / (s[j]**2 - s[i]**2) off the diagonal, 0 on it: exactly 0 where
    x is, so that a cotangent that is 0 (u and vt unused) gives 0 even at repeated singular
    values, where F is infinite and the singular values alone still have a derivative."""
    k = s.shape[0]
    out = np.zeros((k, k), x.dtype)  # (float32 stays float32: matmul takes one dtype)
    for i in range(k):
        for j in range(k):
            if i != j and x[i, j] != 0.0:
                out[i, j] = x[i, j] / ((s[j] - s[i]) * (s[j] + s[i]))  # (s**2 would cancel)
    return out


@nb.njit(cache=False, error_model="numpy")
def _over_columns(x, s):
    """x[:, j] / s[j], exactly 0 where x is (a zero cotangent at a zero singular value)."""
    out = np.zeros(x.shape, x.dtype)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] != 0.0:
                out[i, j] = x[i, j] / s[j]
    return out


@nb.njit(cache=False, error_model="numpy")
def _as_column(s):
    """A vector as a k x 1 matrix: `_as_column(s) * x` is diag(s) @ x."""
    return np.ascontiguousarray(s).reshape((s.shape[0], 1))


@nb.njit(cache=False, error_model="numpy")
def _outside(basis, x):
    """The part of x's columns outside the span of the orthonormal columns of `basis`."""
    return x - basis @ (np.ascontiguousarray(basis.T) @ x)


@nb.njit(cache=False, error_model="numpy")
def _svd_tangents(u, s, v, da):
    """(du, ds, dv) of the SVD a = u diag(s) v.T along da (Townsend, "Differentiating the
    singular value decomposition", 2016): dp = u.T da v gives ds = diag(dp) and the rotations
    of u and v within their spans; for a non-square matrix, da also turns the columns of the
    longer side out of their span (divided by s)."""
    dav = da @ v
    dp = np.ascontiguousarray(u.T) @ dav
    sc = _as_column(s)
    du = u @ _over_square_gaps(dp * s + sc * dp.T, s)
    dv = v @ _over_square_gaps(sc * dp + dp.T * s, s)
    if u.shape[0] > v.shape[0]:
        du = du + _over_columns(_outside(u, dav), s)
    if v.shape[0] > u.shape[0]:
        dv = dv + _over_columns(_outside(v, np.ascontiguousarray(da.T) @ u), s)
    return du, np.diag(dp).copy(), dv


@nb.njit(cache=False, error_model="numpy")
def _svd_cotangent(u, s, v, gu, gs, gv):
    """The cotangent of a from those of u, s and v = vt.T: the transpose of `_svd_tangents`,
    u [(J + J.T) s + diag(gs) + s (K + K.T)] v.T with J = F * (u.T gu), K = F * (v.T gv), plus
    the parts of gu (gv) outside the span of u (v), divided by s."""
    vt = np.ascontiguousarray(v.T)
    j = _over_square_gaps(np.ascontiguousarray(u.T) @ gu, s)
    k = _over_square_gaps(vt @ gv, s)
    ga = u @ ((j + j.T) * s + np.diag(gs) + _as_column(s) * (k + k.T)) @ vt
    if u.shape[0] > v.shape[0]:
        ga = ga + _over_columns(_outside(u, gu), s) @ vt
    if v.shape[0] > u.shape[0]:
        ga = ga + u @ np.ascontiguousarray(_over_columns(_outside(v, gv), s).T)
    return ga


@nb.njit(cache=False, error_model="numpy")
def svd_jvp(primals, tangents):
    u, s, vt = _svd_checked(primals[0], primals[1:])
    du, ds, dv = _svd_tangents(np.ascontiguousarray(u), s, np.ascontiguousarray(vt.T),
                               np.ascontiguousarray(tangents[0]))
    return (u, s, vt), (du, ds, np.ascontiguousarray(dv.T))


@nb.njit(cache=False, error_model="numpy")
def svd_fwd(a, *options):
    u, s, vt = _svd_checked(a, options)  # (numba's u and vt are Fortran-ordered)
    return (u, s, vt), (np.ascontiguousarray(u), s, np.ascontiguousarray(vt.T), options)


@nb.njit(cache=False, error_model="numpy")
def svd_bwd(residuals, g):
    u, s, v, options = residuals
    gu, gs, gvt = g
    ga = _svd_cotangent(u, s, v, np.ascontiguousarray(gu), np.ascontiguousarray(gs),
                        np.ascontiguousarray(gvt.T))
    return (ga,) + _zero_cotangents(options)


# --- pinv ----------------------------------------------------------------------------------
# The pseudo-inverse of a matrix of full rank min(m, n) (Golub and Pereyra, 1973):
# dp = -p da p + p p.T da.T (I - a p) + (I - p a) da.T p.T p. For a tall matrix p a = I, for a
# wide one a p = I, for a square one both (p is the inverse), so one of the last two terms, or
# both, vanish. numba cuts singular values below rcond times the largest; where it has cut one,
# pinv jumps as the cut value crosses the threshold and the formula does not hold: refused.

@nb.njit(cache=False, error_model="numpy")
def _pinv_checked(a, options):
    p = np.linalg.pinv(a, *options)
    k = min(a.shape[0], a.shape[1])
    # trace(p a) is the number of singular values numba kept (p a projects onto their span)
    if k > 0 and np.sum(p * np.ascontiguousarray(a.T)) < k - 0.5:
        raise UnsupportedInputError(
            "the derivative of np.linalg.pinv of a matrix of lower rank than min(m, n) (or "
            "with a singular value below rcond times the largest, which pinv drops): the "
            "pseudo-inverse jumps there",
            "differentiate pinv of matrices of full rank, or regularise: "
            "np.linalg.solve(a.T @ a + lam * np.eye(n), a.T) for a tall a")
    return p


@nb.njit(cache=False, error_model="numpy")
def _pinv_tangent(a, p, da):
    dat = np.ascontiguousarray(da.T)
    pt = np.ascontiguousarray(p.T)
    dp = -(p @ da @ p)
    if a.shape[0] > a.shape[1]:  # tall: p p.T da.T (I - a p)
        dp = dp + p @ (pt @ (dat - (dat @ a) @ p))
    if a.shape[1] > a.shape[0]:  # wide: (I - p a) da.T p.T p
        y = dat @ (pt @ p)
        dp = dp + (y - p @ (a @ y))
    return dp


@nb.njit(cache=False, error_model="numpy")
def _pinv_cotangent(a, p, g):
    """The transpose of `_pinv_tangent`: -p.T g p.T + (I - a p) g.T p p.T + p.T p g.T (I - p a)."""
    gt = np.ascontiguousarray(g.T)
    pt = np.ascontiguousarray(p.T)
    ga = -(pt @ g @ pt)
    if a.shape[0] > a.shape[1]:
        z = gt @ (p @ pt)
        ga = ga + (z - a @ (p @ z))
    if a.shape[1] > a.shape[0]:
        ga = ga + pt @ (p @ (gt - (gt @ p) @ a))
    return ga


@nb.njit(cache=False, error_model="numpy")
def pinv_jvp(primals, tangents):
    a = np.ascontiguousarray(primals[0])
    p = _pinv_checked(primals[0], primals[1:])
    return p, _pinv_tangent(a, np.ascontiguousarray(p), np.ascontiguousarray(tangents[0]))


@nb.njit(cache=False, error_model="numpy")
def pinv_fwd(a, *options):
    p = _pinv_checked(a, options)
    return p, (np.ascontiguousarray(a), np.ascontiguousarray(p), options)


@nb.njit(cache=False, error_model="numpy")
def pinv_bwd(residuals, g):
    a, p, options = residuals
    return (_pinv_cotangent(a, p, np.ascontiguousarray(g)),) + _zero_cotangents(options)


# --- qr ------------------------------------------------------------------------------------
# numba's reduced QR, a = q r with q: m x n (orthonormal columns) and r: n x n upper
# triangular, for a square or tall matrix of full rank (r invertible). q.T dq is
# antisymmetric and dr r^-1 upper triangular, which splits q.T da r^-1 between them.

@nb.njit(cache=False, error_model="numpy")
def _qr_checked(a):
    if a.shape[0] < a.shape[1]:
        raise UnsupportedInputError(
            "the derivative of np.linalg.qr of a wide matrix (more columns than rows): "
            "moonlite's rule covers square and tall matrices",
            "differentiate the QR of a square or tall matrix (a.T's, say), or give your "
            "function a custom rule")
    return np.linalg.qr(a)


@nb.njit(cache=False, error_model="numpy")
def _qr_tangents(q, r, da):
    da_rinv = da @ np.linalg.inv(r)
    c = np.ascontiguousarray(q.T) @ da_rinv
    low = np.tril(c, -1)
    omega = low - low.T  # q.T dq, antisymmetric: the strictly lower part of c decides it
    return q @ (omega - c) + da_rinv, (c - omega) @ r


@nb.njit(cache=False, error_model="numpy")
def _qr_cotangent(q, r, gq, gr):
    """(gq + q copyltu(m)) r^-T with m = r gr.T - gq.T q (Liao et al. 2019, "Differentiable
    programming tensor networks"), where copyltu mirrors the lower triangle onto the upper."""
    m = r @ np.ascontiguousarray(gr.T) - np.ascontiguousarray(gq.T) @ q
    mirrored = np.tril(m) + np.tril(m, -1).T
    return (gq + q @ mirrored) @ np.ascontiguousarray(np.linalg.inv(r).T)


@nb.njit(cache=False, error_model="numpy")
def qr_jvp(primals, tangents):
    q, r = _qr_checked(primals[0])
    dq, dr = _qr_tangents(np.ascontiguousarray(q), np.ascontiguousarray(r),
                          np.ascontiguousarray(tangents[0]))
    # tangents typed as numba types q (a slice: layout 'A', which moonlite does not convert
    # to) and r (Fortran-ordered)
    return (q, r), (dq[:, :dq.shape[1]], np.asfortranarray(dr))


@nb.njit(cache=False, error_model="numpy")
def qr_fwd(a):
    q, r = _qr_checked(a)
    return (q, r), (np.ascontiguousarray(q), np.ascontiguousarray(r))


@nb.njit(cache=False, error_model="numpy")
def qr_bwd(residuals, g):
    q, r = residuals
    gq, gr = g
    return (_qr_cotangent(q, r, np.ascontiguousarray(gq), np.ascontiguousarray(gr)),)


# --- matrix_power --------------------------------------------------------------------------

@nb.njit(cache=False, error_model="numpy")
def matrix_power(a, n):
    """np.linalg.matrix_power(a, n) for an int n, by the products numba's takes, in its order,
    returning an array on every path. numba's own returns an Optional (a path that falls off
    its `if`s), which no mode differentiates: capture calls this function instead
    (`capture/rewrites.py`), and every mode differentiates it (np.linalg.inv for n < 0, np.dot
    and a loop of squarings). A non-square matrix raises numba's ValueError for every n (numba
    itself, for n = 0, writes an identity into an array of a's shape, out of bounds when
    a is tall)."""
    if a.shape[0] != a.shape[1]:
        raise ValueError("input must be a square array")
    if n == 0:
        return np.eye(a.shape[0], dtype=a.dtype)
    if n < 0:
        base = np.linalg.inv(a).copy()  # (numba's copy is C: one layout on both paths)
        n = -n
    else:
        base = np.ascontiguousarray(a)
    if n == 1:
        return base.copy()
    if n == 2:
        return np.dot(base, base)
    if n == 3:
        return np.dot(np.dot(base, base), base)
    return _power_by_squaring(base, n)


@nb.njit(cache=False, error_model="numpy")
def _power_by_squaring(base, n):
    """base ** n for n >= 4: numba's loop, multiplying in the squares the bits of n select."""
    acc = base
    result = base
    first = True
    while n != 0:
        if n & 1:
            if first:
                result = acc
                first = False
            else:
                result = np.dot(result, acc)
        acc = np.dot(acc, acc)
        n = n >> 1
    return result


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
custom_jvp(np.linalg.svd, svd_jvp)
custom_vjp(np.linalg.svd, svd_fwd, svd_bwd)
custom_jvp(np.linalg.pinv, pinv_jvp)
custom_vjp(np.linalg.pinv, pinv_fwd, pinv_bwd)
custom_jvp(np.linalg.qr, qr_jvp)
custom_vjp(np.linalg.qr, qr_fwd, qr_bwd)


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


def _singular_spread(m, n):
    """m x n, singular values about 1, 2, ..., min(m, n) apart: full rank, and singular
    vectors well defined (the gaps they divide by are about 1)."""
    def draw(rng):
        k = min(m, n)
        left, _ = np.linalg.qr(rng.standard_normal((m, k)))
        right, _ = np.linalg.qr(rng.standard_normal((n, k)))
        return (left * (np.arange(1.0, k + 1.0) + rng.uniform(0.0, 0.3, k))) @ right.T
    return draw


def _integer(n):
    return lambda rng: n


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
    # singular vectors have a free sign too: u[:, j] v[j, :] (and u * u) does not see it
    _case("svd_values_tall", lambda a: np.linalg.svd(a, False)[1], _singular_spread(5, 3)),
    _case("svd_values_square_full", lambda a: np.linalg.svd(a)[1], _singular_spread(4, 4)),
    _case("svd_condition_number", lambda a: np.linalg.svd(a)[1][0] / np.linalg.svd(a)[1][-1],
          _singular_spread(3, 3)),
    _case("svd_weighted_polar_tall",
          lambda a, w: (np.linalg.svd(a, False)[0] * w) @ np.linalg.svd(a, False)[2],
          _singular_spread(5, 3), _vector(3), wrt=(0,)),
    _case("svd_weighted_polar_wide",
          lambda a, w: (np.linalg.svd(a, False)[0] * w) @ np.linalg.svd(a, False)[2],
          _singular_spread(3, 5), _vector(3), wrt=(0,)),
    _case("svd_u_squared_tall", lambda a: np.linalg.svd(a, False)[0] ** 2, _singular_spread(5, 3)),
    _case("svd_vt_squared_wide", lambda a: np.linalg.svd(a, False)[2] ** 2,
          _singular_spread(3, 5)),
    _case("svd_vectors_square_full", lambda a: np.linalg.svd(a)[0] ** 2
          + np.linalg.svd(a)[2] ** 2, _singular_spread(4, 4)),
    _case("pinv_tall", lambda a: np.linalg.pinv(a), _singular_spread(5, 3)),
    _case("pinv_wide", lambda a: np.linalg.pinv(a), _singular_spread(3, 5)),
    _case("pinv_square_with_rcond", lambda a: np.linalg.pinv(a, 1e-10), _well_conditioned(4)),
    _case("qr_q_tall", lambda a: np.linalg.qr(a)[0], _singular_spread(5, 3)),
    _case("qr_r_tall", lambda a: np.linalg.qr(a)[1], _singular_spread(5, 3)),
    _case("qr_square", lambda a: np.linalg.qr(a)[0] + np.linalg.qr(a)[1] ** 2,
          _well_conditioned(4)),
    _case("matrix_power_5", lambda a: np.linalg.matrix_power(a, 5),
          lambda rng: rng.uniform(-0.5, 0.5, (3, 3)) + np.eye(3)),
    _case("matrix_power_negative", lambda a, n: np.linalg.matrix_power(a, n),
          _well_conditioned(3), _integer(-2), wrt=(0,)),
]
