"""Writes into scratch arrays the pullback never reads back skip their save and restore
(ad/reverse/scratch.py): fewer tape pushes, the same gradients (against central differences)."""

import math

import numba
import numpy as np

import moonlite
from moonlite.ad.reverse import core, reverse_transform
from moonlite.driver import PASS_CONTEXT, _inlined_primal
from moonlite.ir import ops

from ..helpers import central_differences


@numba.njit
def rotate_accumulate(theta, pts):
    # a 2x2 rotation per step applied to a point through a scratch product `tmp`
    R = np.zeros((2, 2))
    p = np.zeros(2)
    p[0] = 1.0
    tmp = np.empty(2)
    total = 0.0
    for k in range(theta.shape[0]):
        c, s = math.cos(theta[k]), math.sin(theta[k])
        R[0, 0], R[0, 1], R[1, 0], R[1, 1] = c, -s, s, c
        for i in range(2):
            a = 0.0
            for j in range(2):
                a += R[i, j] * p[j]
            tmp[i] = a
        for i in range(2):
            p[i] = tmp[i]
        total += p[0] * p[1] * pts[k]
    return total


@numba.njit
def running_product_in_scratch(x):
    # the scratch entry is read back by a product in the next iteration: its value is needed
    acc = np.ones(1)
    for k in range(x.shape[0]):
        acc[0] = acc[0] * x[k]
    return acc[0]


@numba.njit
def scratch_summed(x):
    # the scratch array goes to np.sum: an array use, so its writes stay saved
    t = np.empty(x.shape[0])
    for k in range(x.shape[0]):
        t[k] = x[k] * x[k]
    return np.sum(t) + t[0] * x[1]


def _writes_skipped(f, *args) -> list:
    fn = _inlined_primal(f, tuple(numba.typeof(a) for a in args))
    return list(core._ReversePass(fn, context=PASS_CONTEXT).unrestored)


def _pushes(fn) -> int:
    rule = reverse_transform(fn, context=PASS_CONTEXT)
    return sum(isinstance(op, ops.TapePush) for op in rule.ops())


def test_scratch_product_writes_are_not_saved():
    theta = np.linspace(-0.5, 0.7, 6)
    pts = np.linspace(0.9, 1.1, 6)
    skipped = _writes_skipped(rotate_accumulate, theta, pts)
    # tmp[i] = a is skipped; R and p are read back by the products' adjoints
    assert len(skipped) == 1 and skipped[0].value.type.is_float
    g = moonlite.grad(rotate_accumulate)(theta, pts)
    np.testing.assert_allclose(g, central_differences(rotate_accumulate, (theta, pts)),
                               rtol=1e-6, atol=1e-9)
    g_pts = moonlite.grad(rotate_accumulate, argnums=1)(theta, pts)
    np.testing.assert_allclose(g_pts, central_differences(rotate_accumulate, (theta, pts), 1),
                               rtol=1e-6, atol=1e-9)


def test_skipping_saves_pushes_less(monkeypatch):
    theta, pts = np.linspace(-0.5, 0.7, 6), np.linspace(0.9, 1.1, 6)
    fn = _inlined_primal(rotate_accumulate, (numba.typeof(theta), numba.typeof(pts)))
    skipping = _pushes(fn)
    monkeypatch.setattr(core, "unrestored_writes", lambda fn, remat: frozenset())
    saving = _pushes(fn)
    assert skipping == saving - 1  # the save of what tmp[i] = a overwrote


def test_scratch_read_back_across_iterations():
    x = np.array([1.3, -0.7, 0.9, 1.1])
    g = moonlite.grad(running_product_in_scratch)(x)
    np.testing.assert_allclose(g, central_differences(running_product_in_scratch, (x,)),
                               rtol=1e-7)


def test_scratch_with_an_array_use_is_saved():
    x = np.array([0.4, -1.2, 0.8])
    assert _writes_skipped(scratch_summed, x) == []
    g = moonlite.grad(scratch_summed)(x)
    np.testing.assert_allclose(g, central_differences(scratch_summed, (x,)), rtol=1e-7)


def test_hessian_through_skipped_writes():
    theta, pts = np.linspace(-0.5, 0.7, 4), np.linspace(0.9, 1.1, 4)
    H = moonlite.hessian(rotate_accumulate)(theta, pts)
    grad = moonlite.grad(rotate_accumulate)
    # columns by central differences of the gradient, which the test above checks against
    # central differences of the function
    h = 1e-5
    fd = np.stack([(grad(theta + h * e, pts) - grad(theta - h * e, pts)) / (2 * h)
                   for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-8)
