"""Loop-invariant code motion before reverse mode (`ad/hoist.py`): what moves, what must not,
and gradients against central finite differences."""

import math

import numba
import numpy as np

import moonlite
from moonlite import driver
from moonlite.ad.hoist import hoist_loop_invariants
from moonlite.ad.inline import inline_njit_calls
from moonlite.ir import natural_loops, verify
from tests.helpers import central_differences


def _hoisted_ir(f, *args):
    types = tuple(numba.typeof(a) for a in args)
    flat = inline_njit_calls(driver.primal_ir(f, types), context=driver.PASS_CONTEXT)
    return verify(hoist_loop_invariants(flat))


def _ops_in_loops(fn):
    blocks = set().union(*(lp.body for lp in natural_loops(fn)))
    return [op for b in fn.blocks if b in blocks for op in b.ops]


@numba.njit
def rotate_all(cam, pts):
    total = 0.0
    for i in range(pts.shape[0]):
        theta = math.sqrt(cam[0] * cam[0] + cam[1] * cam[1])
        c, s = math.cos(theta), math.sin(theta)
        x = c * pts[i, 0] - s * pts[i, 1] + cam[2]
        total += x * x
    return total


def test_invariant_reads_and_math_leave_the_loop_and_the_gradient_is_right():
    cam = np.array([0.3, -0.2, 0.5])
    pts = np.random.default_rng(0).standard_normal((7, 2))
    fn = _hoisted_ir(rotate_all, cam, pts)
    in_loops = _ops_in_loops(fn)
    assert not any(getattr(op, "callee", None) in (math.sqrt, math.cos, math.sin)
                   for op in in_loops)
    assert not any(type(op).__name__ == "GetItem" and op.value is fn.args[0] for op in in_loops)
    np.testing.assert_allclose(moonlite.grad(rotate_all)(cam, pts), central_differences(rotate_all, (cam, pts)),
                               rtol=1e-6, atol=1e-9)


def test_a_loop_that_never_runs_reads_nothing_before_it():
    # zero trips over an empty camera array: the hoisted reads cam[k] must not be made
    cam = np.empty(0)
    pts = np.empty((0, 2))
    assert rotate_all(cam, pts) == 0.0
    g = moonlite.grad(rotate_all)(cam, pts)
    assert g.shape == (0,)


@numba.njit
def guarded_read(w, x):
    s = 0.0
    for i in range(x.shape[0]):
        if w.shape[0] > 3:
            s += w[3] * x[i]      # read only when w is long enough: must stay in the branch
        else:
            s += x[i] * x[i]
    return s


def test_a_read_made_only_in_a_branch_stays_in_the_branch():
    w = np.array([1.0, 2.0])
    x = np.linspace(0.1, 0.9, 5)
    fn = _hoisted_ir(guarded_read, w, x)
    reads = [op for op in _ops_in_loops(fn) if type(op).__name__ == "GetItem"
             and op.value is fn.args[0]]
    assert len(reads) == 1
    w4 = np.array([1.0, 2.0, 3.0, 4.0])
    for ww in (w, w4):
        np.testing.assert_allclose(moonlite.grad(guarded_read, argnums=1)(ww, x),
                                   central_differences(guarded_read, (ww, x), argnum=1),
                                   rtol=1e-6)


@numba.njit
def written_inside(a, x):
    s = 0.0
    for i in range(x.shape[0]):
        s += a[0] * x[i]
        a[0] = a[0] * 0.5     # a is written: a[0] is not invariant
    return s


def test_reads_of_an_array_the_function_writes_are_not_hoisted():
    a = np.array([2.0])
    x = np.linspace(0.1, 0.9, 4)
    fn = _hoisted_ir(written_inside, a.copy(), x)
    assert any(type(op).__name__ == "GetItem" and op.value is fn.args[0]
               for op in _ops_in_loops(fn))
    g = moonlite.grad(written_inside, argnums=1)(a.copy(), x)
    np.testing.assert_allclose(g, 2.0 * 0.5 ** np.arange(4), rtol=1e-12)


@numba.njit
def nested(p, y):
    s = 0.0
    for step in range(3):
        for i in range(y.shape[0]):
            s += p[0] * math.exp(p[1] * 0.5) * y[i]    # p[k] invariant in both loops
    return s


def test_nested_loops_move_only_pure_ops_and_stay_correct():
    p = np.array([0.7, -0.3])
    y = np.linspace(0.1, 1.0, 4)
    verify(_hoisted_ir(nested, p, y))
    np.testing.assert_allclose(moonlite.grad(nested)(p, y), central_differences(nested, (p, y)), rtol=1e-6)
    # forward over reverse runs over the hoisted rule too: against differences of the gradient
    np.testing.assert_allclose(moonlite.hessian(nested)(p, y), _fd_hessian(nested, p, y),
                               rtol=1e-5, atol=1e-8)


def _fd_hessian(f, p, y, h=1e-4):
    n = p.shape[0]
    H = np.zeros((n, n))
    g = moonlite.grad(f)
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        H[:, k] = (g(p + e, y) - g(p - e, y)) / (2 * h)
    return H


@numba.njit
def axis_angle(cam, pts):
    # the reprojection residual's rotation: `w = cam / theta` under a loop-invariant test
    total = 0.0
    for i in range(pts.shape[0]):
        theta2 = cam[0] * cam[0] + cam[1] * cam[1]
        theta = math.sqrt(theta2)
        if theta2 > 1e-12:
            wx = cam[0] / theta
            wy = cam[1] / theta
            x = pts[i, 0] * math.cos(theta) + (wx * pts[i, 1] - wy * pts[i, 0]) * math.sin(theta)
        else:
            x = pts[i, 0] + cam[1] * pts[i, 1]
        total += x * x + cam[2] * x
    return total


def _divisions_in_loops(fn):
    return [op for op in _ops_in_loops(fn) if type(op).__name__ == "TrueDiv"]


def test_a_checked_division_is_hoisted_unchecked_and_its_test_stays():
    cam = np.array([0.3, -0.2, 0.5])
    pts = np.random.default_rng(1).standard_normal((6, 2))
    fn = _hoisted_ir(axis_angle, cam, pts)
    kept = _divisions_in_loops(fn)
    assert len(kept) == 2 and all(op.checked for op in kept)
    read = {v for op in fn.ops() for v in op.operands}
    assert not any(op.result in read for op in kept)  # only their test is left
    in_loops = set(_ops_in_loops(fn))
    hoisted = [op for op in fn.ops() if type(op).__name__ == "TrueDiv" and op not in in_loops]
    assert len(hoisted) == 2 and not any(op.checked for op in hoisted)
    np.testing.assert_allclose(moonlite.grad(axis_angle)(cam, pts),
                               central_differences(axis_angle, (cam, pts)), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(moonlite.hessian(axis_angle)(cam, pts),
                               _fd_hessian(axis_angle, cam, pts), rtol=1e-5, atol=1e-7)


def test_a_hoisted_division_by_zero_the_primal_never_makes_gives_no_nan():
    # theta = 0: the hoisted cam[0] / theta is 0/0, read by no iteration; its pullback meets a
    # zero adjoint and must give 0, not 0 * inf (no nan, so no rerun either)
    cam = np.array([0.0, 0.0, 0.5])
    pts = np.random.default_rng(2).standard_normal((5, 2))
    g = moonlite.grad(axis_angle)
    expected = np.zeros(3)  # the else branch: cam[0] is not read
    expected[1] = np.sum((2 * pts[:, 0] + cam[2]) * pts[:, 1])
    expected[2] = np.sum(pts[:, 0])
    np.testing.assert_allclose(g.call_without_retry(cam, pts), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g(cam, pts), expected, rtol=1e-12, atol=1e-14)


@numba.njit
def divide_when(a, b, x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            s += a / b * x[i]   # raises ZeroDivisionError for b == 0 only if some x[i] > 0
        else:
            s += a * x[i]
    return s


def test_the_check_of_a_hoisted_division_still_raises_where_the_primal_does():
    pos = np.array([-1.0, 2.0, -3.0])
    neg = np.array([-1.0, -2.0, -3.0])
    g = moonlite.grad(divide_when, argnums=(0, 2))
    for api in (lambda: g(1.5, 0.0, pos), lambda: moonlite.hessian(divide_when)(1.5, 0.0, pos)):
        try:
            api()
        except ZeroDivisionError:
            pass
        else:
            raise AssertionError("the division by zero did not raise")
    da, dx = g(1.5, 0.0, neg)  # no division is made: no raise, no nan
    assert da == np.sum(neg) and np.array_equal(dx, np.full(3, 1.5))
    da, dx = g(1.5, 0.5, pos)
    h = 1e-6
    np.testing.assert_allclose(da, (divide_when(1.5 + h, 0.5, pos) - divide_when(1.5 - h, 0.5, pos))
                               / (2 * h), rtol=1e-7)
    np.testing.assert_allclose(dx, central_differences(divide_when, (1.5, 0.5, pos), argnum=2),
                               rtol=1e-7)
