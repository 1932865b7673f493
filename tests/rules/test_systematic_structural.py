"""The systematic suite, reductions, scans, shapes, joins, products and tuples over their
variants (axes including negative ones, offsets, diagonals, every join axis, every product
rank), and the variants moonlite refuses, which every mode must refuse (`systematic.py`).
np.linalg's rules have their own cases (rules/linalg.py, tests/ad/test_reverse_rules.py)."""

from __future__ import annotations

import numpy as np
import pytest

import moonlite
from moonlite.errors import UnsupportedError

from .systematic import Primitive, check_all_modes, kernel_of

# the kernels multiply transposed views on purpose; numba's advice to make them contiguous is noise
pytestmark = pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")

STRUCTURAL = {
    "sum_axes": ("np.sum(a, axis=0) * np.sum(a, axis=1) + np.sum(a, axis=-1) + np.sum(a, -2)",
                 (3, 3)),
    "sum_axes_3d": ("np.sum(np.sum(a, axis=0), 1) * np.sum(a, axis=-1)[0] + a.sum(axis=1)[1, 0]",
                    (2, 3, 2)),
    "sum_1d": ("np.sum(a, axis=-1) * np.sum(a, 0) + a.sum()", (4,)),
    "mean": ("np.mean(a) * a.mean() + np.mean(a * a)", (3, 4)),
    "prod": ("np.prod(a) + a.prod()", (3, 2)),
    "extrema": ("np.max(a) * np.min(a) + np.amax(a) - np.amin(a) + a.max() * a.min()", (3, 4)),
    "cumsum": ("np.cumsum(a) + np.cumsum(a, axis=0).ravel() * np.cumsum(a, axis=-1).ravel()",
               (3, 4)),
    "cumsum_3d": ("np.cumsum(a, axis=1) * np.cumsum(a, axis=-2) + a.cumsum()[:12].reshape("
                  "(2, 3, 2))", (2, 3, 2)),
    "trace": ("np.trace(a) * np.trace(a, 1) + np.trace(a, offset=-1) + np.trace(a, -2)", (3, 4)),
    "diag": ("np.diag(a) * np.diag(a, 1)[:2].sum() + np.diag(a, -1)[0]", (3, 4)),
    "diag_vector": ("np.diag(a) @ np.diag(a, 1)[:4, :4] + np.diag(a, -1)[1:, :4]", (4,)),
    "triangles": ("np.triu(a) * np.tril(a, 1) + np.triu(a, -1) - np.tril(a, -2) ** 2", (4, 3)),
    "shapes": ("np.transpose(a) @ a.reshape((4, 3)).T + np.ravel(a)[:4] + a.T.copy()[0, 0] "
               "+ np.ascontiguousarray(a.T)[1, 2] * (np.swapaxes(a, 0, 1) @ a)", (3, 4)),
    "transpose_3d": ("np.transpose(a, (2, 0, 1)) * a.transpose()[:, :, 0] + np.expand_dims("
                     "a[0].T, 0) + np.expand_dims(a[:, 0, 0], -1)[1, 0] + np.moveaxis(a, -1, 0)",
                     (2, 3, 2)),
    "joins": ("np.concatenate((a, a * a)) + np.concatenate((a, a), axis=1)[:, 1:5].sum() "
              "+ np.concatenate((a, a), axis=-1)[0, 0]", (3, 4)),
    "stacks": ("np.stack((a, a * a)) * np.stack((a, a), axis=-1)[0, 1, 1] + np.stack((a, a), 1)"
               "[0, 0] + np.vstack((a, a))[:3] + np.hstack((a, a))[:, 2:6]", (3, 4)),
    "stacks_1d": ("np.vstack((a, a * a)) * np.hstack((a, a))[:4] + np.stack((a, a), axis=1).T",
                  (4,)),
    "products": ("np.dot(a, a.T) @ np.dot(a[0], a.T) + np.outer(a[0], a[1]).sum() "
                 "+ (a @ a[0]).sum() * a[0].dot(a[1])", (4, 4)),
    "norm": ("np.linalg.norm(a) * np.linalg.norm(a[0]) + a", (3, 4)),
    "full": ("np.full((3, 4), a[0, 0]) * np.full_like(a, a[1, 1] * 2.0) + a", (3, 4)),
    "var_std": ("np.var(a) * np.std(a) + a", (3, 4)),
    "tuples": ("np.array(((a[0], a[1]), (a[2] * a[0], 1.0))) @ np.asarray((a[1], a[2])) "
               "+ sum((a[0], a[1], a[0] * a[2]))", (3,)),
    "scalars_as_arrays": ("np.sum(a[0]) * np.prod(a[1]) + np.mean(a[2]) + np.max(a[0])", (3,)),
    # list literals are read as the tuples of their items (issue #20)
    "lists": ("np.array([[a[0], a[1]], [a[2] * a[0], 1.0]]) @ np.asarray([a[1], a[2]]) "
              "+ sum([a[0], a[1], a[0] * a[2]]) + min([a[0], a[1]]) * len([a[1], 2.0])", (3,)),
}


# second order where it adds a rule of its own (reductions, products, joins); elsewhere the
# linear maps' second derivatives are zero, and compiling them costs 20-40 s a kernel
SECOND_ORDER = {"sum_axes", "sum_1d", "mean", "prod", "extrema", "cumsum", "trace", "triangles",
                "products", "norm", "full", "var_std", "tuples", "joins", "lists"}


@pytest.mark.parametrize("name", list(STRUCTURAL))
def test_structural_primitives(name):
    expr, shape = STRUCTURAL[name]
    rng = np.random.default_rng(5)
    kernel = kernel_of(f"structural_{name}", [Primitive(name, expr)])
    x = rng.uniform(0.5, 1.5, shape)
    check_all_modes(kernel, [Primitive(name, expr)], [x], 1, second_order=name in SECOND_ORDER)


FLOAT32 = ["sum_axes_3d", "cumsum", "triangles", "shapes", "products", "full"]


@pytest.mark.parametrize("name", FLOAT32)
def test_structural_primitives_float32(name):
    expr, shape = STRUCTURAL[name]
    rng = np.random.default_rng(6)
    kernel = kernel_of(f"structural32_{name}", [Primitive(name, expr)])
    x = rng.uniform(0.5, 1.5, shape).astype(np.float32)
    check_all_modes(kernel, [Primitive(name, expr)], [x], 1, np.float32)


# --- variants moonlite refuses: refused in every mode, never a number --------------------------

REFUSED = {
    "norm_of_a_matrix_with_order": ("np.linalg.norm(np.outer(a, a), 1)", "norm"),
    "list_literal_passed_on": ("np.sum(np.array(sorted([a[0], a[1]])))", "list literal"),
    "partition": ("np.partition(a, 1)", "partition"),
    "nancumsum": ("np.nancumsum(a)", "nancumsum"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_variants_are_refused_in_every_mode(name):
    expr, match = REFUSED[name]
    kernel = kernel_of(f"refused_{name}", [Primitive(name, expr)])
    x = np.array([0.3, 1.2, 0.7])
    for run in (lambda: moonlite.jvp(kernel, (x.copy(),), (np.ones(3),)),
                lambda: moonlite.grad(kernel)(x.copy()),
                lambda: moonlite.vjp(kernel, x.copy()),
                lambda: moonlite.hvp(kernel, (x.copy(),), (np.ones(3),))):
        with pytest.raises(UnsupportedError, match=match):
            run()
