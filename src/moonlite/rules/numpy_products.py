"""Bilinear products: np.dot (and a.dot), `@` (`ops.MatMul`) and np.outer, each registered once
with its forward rule, its adjoint and what the adjoint reads (`registry.py`). numba implements
them for 1-D and 2-D float arrays. Their test cases are at the bottom (`CASES`), and in
the systematic suite (`tests/rules/`).
"""

from __future__ import annotations

import numpy as np

from ..ir import ops
from .define import Method, defjvp
from .operands import positional, reads_first_two
from .registry import has_adjoint, register
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
]
