"""Bilinear products: np.dot (and a.dot), `@` (`ops.MatMul`), np.outer, np.kron, and
np.convolve and np.correlate of vectors, each registered once with its forward rule, its
adjoint and what the adjoint reads (`registry.py`). numba implements the first four for 1-D and
2-D float arrays (np.kron for numbers too), the last two for vectors. Their test cases are at
the bottom (`CASES`), and in the systematic suite (`tests/rules/`).
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir import ops
from .define import Method, RuleNotApplicable, defjvp
from .operands import checked_positional, positional, reads_first_two
from .registry import has_adjoint, is_float64_array, register
from .cases import MAT as _MAT, VEC as _VEC, array_case as _E, uniform as _uniform


def _matmul_adjoint(rv, op) -> None:
    """y = a @ c for 1-D/2-D a, c: da += dy @ c.T (an outer product for vectors),
    dc += a.T @ dy."""
    a, c = positional(op)
    av, cv = rv.recall(a), rv.recall(c)
    dy = rv.result_adjoint(op.result)
    if dy is None:
        return
    b = rv.b
    na, nc = a.type.ndim, c.type.ndim
    if has_adjoint(a.type):
        if na == 1 and nc == 1:
            da = b.mul(dy, cv)
        elif na == 2 and nc == 1:
            da = b.call(np.outer, [dy, cv])
        elif na == 1 and nc == 2:
            da = b.binary(ops.MatMul, cv, dy)
        else:
            da = b.binary(ops.MatMul, dy, b.getattr(cv, "T"))
        rv.send(a, da)
    if has_adjoint(c.type):
        if na == 1 and nc == 1:
            dc = b.mul(dy, av)
        elif na == 2 and nc == 1:
            dc = b.binary(ops.MatMul, dy, av)
        elif na == 1 and nc == 2:
            dc = b.call(np.outer, [av, dy])
        else:
            dc = b.binary(ops.MatMul, b.getattr(av, "T"), dy)
        rv.send(c, dc)


def _outer_adjoint(rv, op) -> None:
    a, c = positional(op)
    dy = rv.shadow(op.result)
    if dy is None:
        return
    if has_adjoint(a.type):
        rv.send(a, rv.b.binary(ops.MatMul, dy, rv.recall(c)))
    if has_adjoint(c.type):
        rv.send(c, rv.b.binary(ops.MatMul, rv.recall(a), dy))


defjvp(np.dot, lambda b, x, y, dx: b.call(np.dot, [dx, y]),
       lambda b, x, y, dy: b.call(np.dot, [x, dy]))
defjvp(Method("dot"),
       lambda b, x, y, dx: b.method_call("dot", dx, [y]),
       lambda b, x, y, dy: b.method_call("dot", x, [dy]))
defjvp(ops.MatMul,
       lambda b, x, y, dx: b.binary(ops.MatMul, dx, y),
       lambda b, x, y, dy: b.binary(ops.MatMul, x, dy))
defjvp(np.outer, lambda b, x, y, dx: b.call(np.outer, [dx, y]),
       lambda b, x, y, dy: b.call(np.outer, [x, dy]))

for _key in (np.dot, Method("dot"), ops.MatMul):
    register(_key, adjoint=_matmul_adjoint, reads=reads_first_two, keywords=())
register(np.outer, adjoint=_outer_adjoint, reads=reads_first_two, keywords=())


# --- np.kron of 1-D and 2-D arrays (and numbers) ---------------------------------------------

def _kron_adjoint(rv, op) -> None:
    """y = np.kron(a, c), y[i * cm + k, j * cn + l] = a[i, j] c[k, l] (a vector read as one
    row, as numba reads it): each entry of g sends g * c's entry to a's and g * a's entry to
    c's. With a number for a or c, kron is the product (numba reshapes it to the array's
    shape), and `rv.send` sums over the entries a number meets."""
    a, c = positional(op)
    g = rv.result_adjoint(op.result)
    if g is None:
        return
    av, cv = rv.recall(a), rv.recall(c)
    if a.type.is_scalar or c.type.is_scalar:
        for operand, other in ((a, cv), (c, av)):
            if has_adjoint(operand.type):
                rv.send(operand, rv.b.mul(g, other))
        return
    parts = rv.b.call(kron_adjoint, [av, cv, g])
    for k, operand in enumerate((a, c)):
        if has_adjoint(operand.type):
            rv.send(operand, rv.b.tuple_getitem(parts, k))


@nb.njit(cache=True)
def _as_matrix(x):
    """A 1-D or 2-D array as the matrix numba's kron reads: a vector is one row."""
    return np.ascontiguousarray(x).reshape((-1, x.shape[-1]))


@nb.njit(cache=True)
def kron_adjoint(a, c, g):
    """The cotangents of a and c (shaped like them) from g, that of np.kron(a, c); plain njit,
    so forward mode differentiates it for Hessians."""
    a2, c2, g2 = _as_matrix(a), _as_matrix(c), _as_matrix(g)
    am, an = a2.shape
    cm, cn = c2.shape
    ga, gc = np.zeros((am, an), a2.dtype), np.zeros((cm, cn), c2.dtype)
    for i in range(am):
        for j in range(an):
            block = g2[i * cm:(i + 1) * cm, j * cn:(j + 1) * cn]
            ga[i, j] = np.sum(block * c2)
            gc += block * a2[i, j]
    return ga.reshape(a.shape), gc.reshape(c.shape)


defjvp(np.kron, lambda b, x, y, dx: b.call(np.kron, [dx, y]),
       lambda b, x, y, dy: b.call(np.kron, [x, dy]))
register(np.kron, adjoint=_kron_adjoint, reads=reads_first_two, keywords=())


# --- np.convolve (numpy's "full") and np.correlate ("valid") of float64 vectors ------------------

def _vectors(a, v) -> None:
    if not all(is_float64_array(x.type, 1) for x in (a, v)):
        raise RuleNotApplicable("np.convolve and np.correlate are differentiated for 1-D "
                                "float64 arrays")


def bilinear_term(fn, position, check=_vectors):
    """The term of a bilinear fn(a, v) for the tangent of argument `position`: fn of it, once
    `check(a, v)` accepts the operands (it raises RuleNotApplicable)."""
    def term(b, a, v, d):
        check(a, v)
        return b.call(fn, [d, v] if position == 0 else [a, d])
    return term


def _lag_adjoint(helper):
    def adjoint(rv, op) -> None:
        a, v = checked_positional(rv, op, 2, _vectors, "leave the mode out",
                                  "pass 1-D float64 arrays")
        g = rv.shadow(op.result)
        if g is None:
            return
        parts = rv.b.call(helper, [rv.recall(a), rv.recall(v), g])
        for k, operand in enumerate((a, v)):
            if has_adjoint(operand.type):
                rv.send(operand, rv.b.tuple_getitem(parts, k))
    return adjoint


@nb.njit(cache=True)
def convolve_adjoint(a, v, g):
    """y = np.convolve(a, v): y[i + j] gets a[i] v[j] (either order of the two: numpy swaps
    them when v is longer, and the sum is the same)."""
    ga, gv = np.zeros(a.shape[0]), np.zeros(v.shape[0])
    for i in range(a.shape[0]):
        for j in range(v.shape[0]):
            ga[i] += g[i + j] * v[j]
            gv[j] += g[i + j] * a[i]
    return ga, gv


@nb.njit(cache=True)
def correlate_adjoint(a, v, g):
    """y = np.correlate(a, v): y[k] = sum_j a[j + k] v[j] when a is at least as long as v; else
    numpy correlates v with a and reverses the result: y[k] = sum_j v[j + L - k] a[j]."""
    n, m = a.shape[0], v.shape[0]
    ga, gv = np.zeros(n), np.zeros(m)
    if n >= m:
        for k in range(n - m + 1):
            for j in range(m):
                ga[j + k] += g[k] * v[j]
                gv[j] += g[k] * a[j + k]
    else:
        for k in range(m - n + 1):
            for j in range(n):
                gv[j + m - n - k] += g[k] * a[j]
                ga[j] += g[k] * v[j + m - n - k]
    return ga, gv


for _fn, _helper in ((np.convolve, convolve_adjoint), (np.correlate, correlate_adjoint)):
    defjvp(_fn, bilinear_term(_fn, 0), bilinear_term(_fn, 1))
    register(_fn, adjoint=_lag_adjoint(_helper), reads=reads_first_two, keywords=())


# --- test cases (checked in every mode against finite differences) ---------------------------

CASES = [
    _E("dot_vectors", lambda x, y: np.dot(x, y), _VEC, _VEC),
    _E("dot_matrix_vector", lambda a, x: np.dot(a, x), _MAT, _uniform(-2.0, 2.0, 4)),
    _E("dot_matrices", lambda a, c: np.dot(a, c), _MAT, _uniform(-2.0, 2.0, 4, 2)),
    _E("outer", lambda x, y: np.outer(x, y), _VEC, _uniform(-2.0, 2.0, 3)),
    _E("matmul", lambda a, c: a @ c, _MAT, _uniform(-2.0, 2.0, 4, 2)),
    _E("matmul_vector", lambda a, x: a @ x, _MAT, _uniform(-2.0, 2.0, 4)),
    _E("matmul_vectors", lambda x, y: x @ y, _VEC, _VEC),
    _E("method_dot", lambda a, c: a.dot(c), _MAT, _uniform(-2.0, 2.0, 4, 2)),
    _E("convolve", lambda a, v: np.convolve(a, v) ** 2, _VEC, _uniform(-2.0, 2.0, 3)),
    _E("convolve_longer_second", lambda a, v: np.convolve(a, v), _uniform(-2.0, 2.0, 3), _VEC),
    _E("correlate", lambda a, v: np.correlate(a, v) ** 2, _VEC, _uniform(-2.0, 2.0, 3)),
    _E("correlate_longer_second", lambda a, v: np.correlate(a, v), _uniform(-2.0, 2.0, 3),
       _VEC),
    _E("kron_matrices", lambda a, c: np.kron(a, c), _uniform(-2.0, 2.0, 2, 3), _MAT),
    _E("kron_vectors", lambda x, y: np.kron(x, y), _VEC, _uniform(-2.0, 2.0, 3)),
    _E("kron_vector_matrix", lambda x, c: np.kron(x, c) ** 2, _uniform(-2.0, 2.0, 3), _MAT),
    _E("kron_matrix_vector", lambda a, y: np.kron(a, y), _MAT, _uniform(-2.0, 2.0, 2)),
]
