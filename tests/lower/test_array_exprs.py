"""Array expressions in derived code reuse their compiled scalar kernels (lower/array_exprs.py):
the cache must never hand one expression another's kernel, and it stays out of compiles that
are not moonlite's."""

import numba
import numpy as np

import moonlite
from moonlite.lower import array_exprs
from moonlite.testing import check_rule


@numba.njit
def two_a_plus_b(a, b):
    return np.sum(a + 2.0 * b)


@numba.njit
def three_a_plus_b(a, b):  # the same shape as two_a_plus_b, another constant
    return np.sum(a + 3.0 * b)


@numba.njit
def a_minus_b(a, b):
    return np.sum((a - b) * (a - b) * b)


@numba.njit
def b_minus_a(a, b):  # the same operators, the operands the other way round
    return np.sum((b - a) * (b - a) * a)


A = np.array([0.5, -1.0, 2.0])
B = np.array([1.5, 0.25, -0.75])


def test_expressions_alike_but_for_a_constant_or_an_operand_order_keep_their_own_kernels():
    # compiled in this order, a key missing the constant or the operand positions would give
    # the second of each pair the first's kernel: a wrong value and a wrong gradient
    assert moonlite.value_and_grad(two_a_plus_b, argnums=(0, 1))(A, B)[0] == np.sum(A + 2.0 * B)
    value, (da, db) = moonlite.value_and_grad(three_a_plus_b, argnums=(0, 1))(A, B)
    assert value == np.sum(A + 3.0 * B)
    np.testing.assert_allclose(da, np.ones(3))
    np.testing.assert_allclose(db, np.full(3, 3.0))
    moonlite.grad(a_minus_b, argnums=(0, 1))(A, B)
    value, (da, db) = moonlite.value_and_grad(b_minus_a, argnums=(0, 1))(A, B)
    np.testing.assert_allclose(value, np.sum((B - A) ** 2 * A))
    np.testing.assert_allclose(da, -2.0 * (B - A) * A + (B - A) ** 2)
    np.testing.assert_allclose(db, 2.0 * (B - A) * A)
    for kernel in (two_a_plus_b, three_a_plus_b, a_minus_b, b_minus_a):
        check_rule(kernel, A, B, second_order=True)


@numba.njit
def damped(x, c):
    y = x * c + 1.0
    return np.sum(np.exp(-y * y) * x)


def test_a_kernel_is_compiled_once_and_linked_into_each_derived_function():
    x = np.array([0.1, 0.7, -0.4])
    moonlite.grad(damped)(x, 0.5)
    known = len(array_exprs._kernels)
    # the same expressions, in another derived function of the same types
    moonlite.value_and_grad(damped)(x, 0.5)
    assert len(array_exprs._kernels) == known
    check_rule(damped, x, 0.5, second_order=True)


def test_compiles_that_are_not_moonlites_use_numbas_own_lowering():
    @numba.njit
    def plain(a, b):
        return a * 4.5 - b / 7.25

    known = len(array_exprs._kernels)
    np.testing.assert_allclose(plain(A, B), A * 4.5 - B / 7.25)
    assert len(array_exprs._kernels) == known


# --- fusion across a write (lower/emit.py: _read_after_a_write) -------------------------------

@numba.njit
def read_after_a_write(x):
    """r is read after y, one of its operands, is written: numba's array-expression rewrite
    fused the tangent's temporary `dy * 2.0` into `dr * x`, evaluated after `dy[0] = 0`, and
    forward mode gave 0.6 where 1.2 is right."""
    y = x.copy()
    r = y * 2.0
    y[0] = 5.0  # a boundary value written afterwards
    s = r * x
    return s[0] + s[1]


@numba.njit
def heavy_ball(w, g, lr):
    """Momentum steps: the velocity kept before it is overwritten in place."""
    v = np.zeros_like(w)
    w = w.copy()
    for _ in range(3):
        vel = 0.9 * v
        v[:] = g * w
        w = w - lr * (vel + v)
    return np.sum(w ** 2)


def test_a_temporary_read_after_a_write_into_its_operand_is_not_fused():
    x = np.array([0.3, 0.7])
    _, dx = moonlite.jvp(read_after_a_write, (x,), (np.array([1.0, 0.0]),))
    assert abs(dx - 4.0 * x[0]) < 1e-12
    check_rule(read_after_a_write, x, second_order=True)
    check_rule(heavy_ball, np.array([0.1, 0.5, 0.9, 0.4]), 0.7, 0.1, second_order=True)
