"""The public reverse-mode API: grad, value_and_grad, build_rrule."""

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite.api import ArgumentError
from moonlite.testing import check_jvp, check_rule


@numba.njit
def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


@numba.njit
def weighted(x, w, n):
    s = 0.0
    for i in range(n):
        s += w * math.sin(x[i]) ** 2
    return s


@numba.njit
def normalise_then_sum(x):
    # writes into its input: the gradient call must leave x as it found it
    total = 0.0
    for v in x:
        total += v * v
    norm = math.sqrt(total)
    for i in range(x.shape[0]):
        x[i] /= norm
    return np.sum(x * np.arange(x.shape[0]))


@numba.njit
def vector_out(x):
    return x * 2.0


def fd_gradient(f, args, argnum, h=1e-6):
    x = args[argnum]
    if np.ndim(x) == 0:
        plus, minus = list(args), list(args)
        plus[argnum], minus[argnum] = x + h, x - h
        return (f(*plus) - f(*minus)) / (2 * h)
    g = np.zeros_like(x)
    for k in range(x.size):
        plus = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        minus = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        plus[argnum].flat[k] += h
        minus[argnum].flat[k] -= h
        g.flat[k] = (f(*plus) - f(*minus)) / (2 * h)
    return g


def test_grad_of_rosenbrock_matches_finite_differences():
    x = np.linspace(-1.2, 1.0, 9)
    np.testing.assert_allclose(moonlite.grad(rosenbrock)(x), fd_gradient(rosenbrock, (x,), 0),
                               rtol=1e-6, atol=1e-6)


def test_value_and_grad_and_tuple_argnums():
    x = np.linspace(0.1, 1.0, 6)
    value, (gx, gw) = moonlite.value_and_grad(weighted, argnums=(0, 1))(x, 0.7, 6)
    assert value == pytest.approx(weighted(x, 0.7, 6), rel=1e-15)
    np.testing.assert_allclose(gx, fd_gradient(weighted, (x, 0.7, 6), 0), rtol=1e-6)
    assert gw == pytest.approx(fd_gradient(weighted, (x, 0.7, 6), 1), rel=1e-6)


def test_grad_restores_inputs_the_kernel_writes_into():
    x = np.array([1.0, 2.0, 2.0])
    g = moonlite.grad(normalise_then_sum)(x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 2.0])
    np.testing.assert_allclose(g, fd_gradient(normalise_then_sum, (x,), 0), rtol=1e-6)


def test_grad_is_callable_inside_njit_code():
    g = moonlite.grad(rosenbrock)

    @numba.njit
    def gradient_descent(x, lr, steps):
        for _ in range(steps):
            x = x - lr * g(x)
        return x

    start = np.zeros(4)
    end = gradient_descent(start, 1e-3, 3000)
    assert rosenbrock(end) < rosenbrock(start) / 10


def test_gradient_with_respect_to_an_int_is_refused():
    with pytest.raises(ArgumentError, match="argument 2 has type int64"):
        moonlite.grad(weighted, argnums=2)(np.ones(3), 0.5, 3)


def test_argnums_out_of_range_is_refused():
    with pytest.raises(ArgumentError, match="out of range"):
        moonlite.grad(weighted, argnums=5)(np.ones(3), 0.5, 3)


def test_gradient_of_a_vector_output_is_refused():
    with pytest.raises(moonlite.UnsupportedError, match="scalar float output"):
        moonlite.grad(vector_out)(np.ones(3))


def test_non_njit_function_is_refused():
    with pytest.raises(moonlite.UnsupportedError, match="@numba.njit"):
        moonlite.grad(lambda x: x)


def test_a_second_call_reuses_the_compiled_gradient():
    g = moonlite.grad(rosenbrock)
    g(np.ones(4))
    g(np.zeros(7))
    assert len(g.signatures) == 1
    g(np.ones(4, dtype=np.float32))
    assert len(g.signatures) == 2  # a new type specialises, like any njit function


@numba.njit
def branchy_recurrence(y, n):
    for i in range(n):
        if y > 0.5:
            y = math.sin(y) * 1.5
        else:
            y = y * y + 0.7
    return y


def test_build_rrule_prints_its_ir_with_tapes_and_block_stack():
    rule = moonlite.build_rrule(branchy_recurrence, 0.3, 5)
    text = str(moonlite.verify(rule.ir))
    assert "func branchy_recurrence_rev(" in text
    assert "tape.push" in text and "tape.pop" in text  # y per iteration, the branch taken
    out, (gy, gn) = rule(0.3, 5, 1.0)
    assert gn is None
    h = 1e-6
    fd = (branchy_recurrence(0.3 + h, 5) - branchy_recurrence(0.3 - h, 5)) / (2 * h)
    assert out == branchy_recurrence(0.3, 5) and abs(gy - fd) < 1e-6


def test_a_counted_loop_over_a_never_written_array_tapes_only_its_sine():
    rule = moonlite.build_rrule(weighted, np.ones(3), 0.5, 3)
    text = str(moonlite.verify(rule.ir))
    # the counter is stepped back and x[i] read again (no integer tape); sin(x[i]) is kept,
    # as a tape push and pop cost less than calling sin again (reverse/reads.py)
    tapes = [line for line in text.splitlines() if "tape.new" in line]
    assert len(tapes) == 1 and "tape<float64>" in tapes[0]
    x = np.array([0.1, 0.7, -0.4])
    out, (gx, gw, gn) = rule(x, 0.5, 3, 1.0)
    assert gn is None and gx.shape == (3,)
    np.testing.assert_allclose(gx, 0.5 * np.sin(2 * x), rtol=1e-12)
    np.testing.assert_allclose(gw, np.sum(np.sin(x) ** 2), rtol=1e-12)


# --- jacrev (vjp: test_api_vjp.py) ---------------------------------------------------------

@numba.njit
def squash_in_place(x, a):
    for i in range(x.shape[0]):
        x[i] = math.tanh(a * x[i])
    return x * x


def test_jacrev_matches_finite_differences():
    x = np.linspace(-1.0, 1.0, 4)
    jac = moonlite.jacrev(squash_in_place)(x, 0.8)
    h = 1e-6
    fd = np.stack([(squash_in_place(x + h * e, 0.8) - squash_in_place(x - h * e, 0.8)) / (2 * h)
                   for e in np.eye(4)], axis=-1)
    assert jac.shape == (4, 4)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(x, np.linspace(-1.0, 1.0, 4))


@numba.njit
def tuple_weighted(p, x):
    w, k, v = p
    return w * np.sum(v * x) * k


def test_grad_of_a_tuple_argument_is_a_tuple_of_gradients():
    p, x = (0.7, 3, np.array([1.0, -2.0])), np.array([0.5, 0.25])
    gw, gk, gv = moonlite.grad(tuple_weighted)(p, x)
    assert gk is None
    h = 1e-6
    fd_w = (tuple_weighted((0.7 + h, 3, p[2]), x) - tuple_weighted((0.7 - h, 3, p[2]), x)) / (2 * h)
    fd_v = [(tuple_weighted((0.7, 3, p[2] + e), x) - tuple_weighted((0.7, 3, p[2] - e), x))
            / (2 * h) for e in np.eye(2) * h]
    assert abs(gw - fd_w) < 1e-8
    np.testing.assert_allclose(gv, fd_v, rtol=1e-7)


@numba.njit
def write_through_reshape(x):
    flat = x.reshape(x.size)
    flat[0] = 2.0 * flat[1]
    return np.sum(x * x)


@numba.njit
def write_through_ravel(x):
    flat = x.ravel()  # numba: a view of a C array (capture makes it a reshape), else a copy
    flat[0] = 2.0 * flat[1]
    return np.sum(x * x)


@numba.njit
def written_after_ravel(a):
    b = a.copy()
    r = b.ravel()  # a view: the write into b below is read back through r
    b[0, 0] = a[1, 1] ** 2
    return r[0] + r[3]


@numba.njit
def write_through_ravel_of_a_view(x):
    flat = x[:, ::2].ravel()  # typed "A": numba copies it, whatever its run-time layout
    flat[0] = 2.0 * flat[1]
    return np.sum(x * x) + np.sum(flat ** 2)


@numba.njit
def written_after_ascontiguousarray(a):
    b = a.copy()
    c = np.ascontiguousarray(b[1:, :])  # typed "A": a view or a copy, as numba finds it
    b[1, 0] = a[0, 0] ** 2
    return c[0, 0] * 3.0


def test_writes_through_reshape_and_ravel_reach_the_gradient():
    """numba's reshape never copies, nor its ravel of an array typed C (a reshape, after
    capture), so the write reaches x: x[0, 0] = 2 x[0, 1]."""
    x = np.array([[1.0, 0.5], [-0.3, 0.8]])
    expected = [[0.0, 2 * x[0, 1] + 8 * x[0, 1]], [2 * x[1, 0], 2 * x[1, 1]]]
    np.testing.assert_allclose(moonlite.grad(write_through_reshape)(x.copy()), expected)
    np.testing.assert_allclose(moonlite.grad(write_through_ravel)(x.copy()), expected)
    # a write into the array read back through its ravel (a shadow of its own gave [[1, 0],
    # [0, 1]] where [[0, 0], [0, 2 a11 + 1]] is right: r[0] + r[3] = a11 ** 2 + a11)
    a = np.array([[1.0, 0.2], [0.1, 1.3]])
    np.testing.assert_allclose(moonlite.grad(written_after_ravel)(a), [[0.0, 0.0], [0.0, 3.6]])
    check_rule(written_after_ravel, a, second_order=True)
    check_rule(write_through_ravel_of_a_view, np.array([[1.0, 0.5, 0.2], [-0.3, 0.8, 0.4]]),
               second_order=True)


def test_ascontiguousarray_of_a_view_of_written_memory_is_refused_in_reverse_mode():
    a = np.array([[1.0, 0.2], [0.1, 1.3]])
    with pytest.raises(moonlite.UnsupportedError, match="ascontiguousarray of an array typed A"):
        moonlite.grad(written_after_ascontiguousarray)(a)
    check_jvp(written_after_ascontiguousarray, a)  # forward mode follows it


@numba.njit
def written_through_asfortranarray(a):
    """numba's asfortranarray of an array typed F is the array itself: the write reaches b."""
    b = a * 1.0
    f = np.asfortranarray(b.T)
    f[0, 1] = 1.0
    return np.sum(f * f) + np.sum(b)


@numba.njit
def written_after_asfortranarray(a):
    b = np.linalg.inv(a + 3.0 * np.eye(3))
    f = np.asfortranarray(b)
    b[0, 1] = 1.0  # (read back through f)
    return np.sum(f * f) + np.sum(b * a)


@numba.njit
def written_copies_of_other_orders(a):
    """Arrays of two dimensions typed in the other order are always copied: writes into the
    copies stay there."""
    f = np.asfortranarray(a * 2.0)
    f[0, 1] = 1.0
    c = np.ascontiguousarray((a * 2.0).T)
    c[1, 0] = -1.0
    return np.sum(f * f * a) + np.sum(c * a)


@numba.njit
def written_vector_through_asfortranarray(v):
    b = v * 1.0
    f = np.asfortranarray(b)  # (a 1-D array: the array itself)
    f[1] = 2.0
    return np.sum(f * f) + np.sum(b ** 3)


A3 = np.array([[0.4, -0.2, 0.1], [0.3, 0.5, -0.6], [-0.1, 0.2, 0.3]])


@pytest.mark.parametrize("kernel", [written_through_asfortranarray, written_after_asfortranarray,
                                    written_copies_of_other_orders],
                         ids=["itself", "written_after", "copies"])
def test_asfortranarray_and_ascontiguousarray_views_and_copies_in_every_mode(kernel):
    """Found by an adversarial hunt: reverse mode took np.asfortranarray of an array typed F
    for a copy (grad 1.0 where 0 at the entry written through it)."""
    check_rule(kernel, A3, second_order=True)


def test_asfortranarray_of_a_written_vector_is_refused_in_reverse_mode():
    v = np.array([0.3, -0.7, 0.2, 0.9])
    with pytest.raises(moonlite.UnsupportedError, match="asfortranarray of an array typed C"):
        moonlite.grad(written_vector_through_asfortranarray)(v)
    check_jvp(written_vector_through_asfortranarray, v)
