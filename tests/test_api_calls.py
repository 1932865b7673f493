"""jvp and hvp as compiled calls: after the first call a look-up and one dispatcher call, with
the same checks (types when derived, shapes and aliasing in compiled code) and the same
detailed errors; results against central differences."""

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite.api_calls import _jvp_dispatcher
from moonlite.api_higher import _hvp_dispatcher
from moonlite.driver import api_entry
from moonlite.errors import ArgumentError

from .helpers import central_differences


@numba.njit
def wave(x, a, n):
    s = 0.0
    for i in range(n):
        s += math.sin(a * x[i]) * x[i]
    return s


@numba.njit
def scale_in_place(x, a):
    for i in range(x.shape[0]):
        x[i] = x[i] * a
    return x.sum()


X = np.linspace(0.1, 0.9, 5)


def test_jvp_and_hvp_become_a_lookup_of_one_dispatcher():
    v = np.linspace(1.0, -1.0, 5)
    out, dout = moonlite.jvp(wave, (X, 0.7, 5), (v, 0.3, None))
    disp = api_entry(wave, ("jvp",))
    assert disp is _jvp_dispatcher(wave)
    assert moonlite.jvp(wave, (X, 0.7, 5), (v, 0.3, None)) == (out, dout)
    assert len(disp.signatures) == 1
    fd = central_differences(lambda x, a: wave(x, a, 5), (X, 0.7), 0) @ v + \
        0.3 * (wave(X, 0.7 + 1e-6, 5) - wave(X, 0.7 - 1e-6, 5)) / 2e-6
    assert dout == pytest.approx(fd, rel=1e-6)
    hv = moonlite.hvp(wave, (X, 0.7, 5), (v, 0.3, None))
    assert api_entry(wave, ("hvp", False)) is _hvp_dispatcher(wave, False)
    assert hv[2] is None and hv[0].shape == X.shape


def test_an_int_tangent_for_a_float_is_converted():
    v = np.ones(5)
    assert moonlite.jvp(wave, (X, 0.7, 5), (v, 1, None)) == \
        moonlite.jvp(wave, (X, 0.7, 5), (v, 1.0, None))


@pytest.mark.parametrize("api", ["jvp", "hvp"])
@pytest.mark.parametrize("tangents, message", [
    ((np.ones(4), 0.3, None), "shape (4,)"),
    ((np.ones(5, dtype=np.float32), 0.3, None), "dtype float32"),
    ((np.ones(5), 0.3, 1.0), "carries no tangent"),
    ((None, 0.3, None), "missing"),
    ((np.ones(5), 0.3), "one tangent per primal"),
])
def test_bad_tangents_after_a_first_call_get_the_detailed_error(api, tangents, message):
    call = getattr(moonlite, api)
    call(wave, (X, 0.7, 5), (np.ones(5), 0.3, None))  # the fast path is set up
    x = X.copy()
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(wave, (x, 0.7, 5), tangents)
    np.testing.assert_array_equal(x, X)


def test_the_compiled_call_checks_shapes_itself():
    # what a caller that skips the Python checks (njit code, the dispatcher held) gets
    disp = _jvp_dispatcher(wave)
    with pytest.raises(ArgumentError, match="tangent 0: the tangent's shape differs"):
        disp((X, 0.7, 5), (np.ones(3), 0.3, None))
    with pytest.raises(ArgumentError, match="carries no tangent"):
        disp((X, 0.7, 5), (np.ones(5), 0.3, 2.0))


def test_hvp_leaves_written_arrays_alone_and_jvp_writes_them_like_the_primal():
    x = np.array([1.0, 2.0, 3.0])
    (hx, ha) = moonlite.hvp(scale_in_place, (x, 2.0), (np.ones(3), 0.0))
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(hx, [0.0, 0.0, 0.0])
    assert ha == pytest.approx(3.0)  # f = a * sum(x): d2f/da dx_i = 1, along (1, 1, 1, 0)
    out, dout = moonlite.jvp(scale_in_place, (x, 2.0), (np.ones(3), 0.0))
    np.testing.assert_array_equal(x, [2.0, 4.0, 6.0])
    assert (out, dout) == (12.0, 6.0)


@numba.njit
def triple_in_place(A):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = 3.0 * A[i, j] * A[i, j]
    return np.sum(A)


@pytest.mark.parametrize("primal_order, tangent", [
    ("F", lambda: np.ones((2, 3))),                         # C tangent of an F argument
    ("C", lambda: np.asfortranarray(np.ones((2, 3)))),      # F tangent of a C argument
    ("C", lambda: np.ones((2, 6))[:, ::2]),                  # a strided view
])
def test_the_tangent_of_a_written_argument_in_another_memory_order_is_updated(primal_order,
                                                                                 tangent):
    """The tangent of an argument the kernel writes describes its new value afterwards; one
    of another memory order than the argument was converted to a copy, which got the new
    tangent while the caller's array kept the old one (found by a helper's hunt)."""
    P = np.array(np.arange(1.0, 7.0).reshape(2, 3), order=primal_order)
    expected = 6.0 * P * tangent()  # d(3 a^2) = 6 a da
    for _ in range(2):  # the first call and the compiled fast path
        P2, T2 = P.copy(order=primal_order), tangent()
        out, dout = moonlite.jvp(triple_in_place, (P2,), (T2,))
        np.testing.assert_allclose(T2, expected)
        assert dout == pytest.approx(np.sum(expected))


def test_aliased_written_arrays_are_refused_on_the_fast_path():
    x = np.array([1.0, 2.0, 3.0])
    moonlite.jvp(scale_in_place, (x.copy(), 2.0), (np.ones(3), 0.0))
    with pytest.raises(ArgumentError, match="share memory"):
        moonlite.jvp(scale_in_place, (x, 2.0), (x, 0.0))
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


@numba.njit
def weighted(pair, x):
    w, n = pair
    return w * np.sum(x[:n] ** 2)


def test_a_tuple_tangent_is_checked_and_converted_entry_by_entry():
    x = np.array([1.0, 2.0, 3.0])
    v = np.array([1.0, 0.0, 0.0])
    for _ in range(2):  # the first call and the fast path
        out, dout = moonlite.jvp(weighted, ((0.5, 2), x), ((1, None), v))
        assert out == pytest.approx(2.5)
        assert dout == pytest.approx(5.0 + 0.5 * 2.0)  # d/dw: sum(x[:2]^2); d/dx0: 2 w x0
    with pytest.raises(ArgumentError, match="carries no tangent"):
        moonlite.jvp(weighted, ((0.5, 2), x), ((1.0, 1.0), v))
