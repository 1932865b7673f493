"""`vjp` (api_vjp.py): its first call on a kernel (the sweep and the pullback called from
Python) and, from the second call on, its compiled dispatcher (one call returning the output
and a pullback struct), checked against central differences (the dot-product identity), with
the same checks and messages."""

from collections import namedtuple

import numba
import numpy as np
import pytest

import moonlite
from moonlite.api_vjp import Pullback, _first_vjp, copy_into
from moonlite.errors import ArgumentError
from moonlite.testing import check_rule

from .ad.test_nan_retry import overflowing
from .test_api_reverse import squash_in_place
from .helpers import central_differences


def compiled_vjp(f, *args):
    """`moonlite.vjp(f, *args)` on the compiled path: a first call on fresh copies if `f` has
    never been given to vjp, then the call itself, whose pullback must be the compiled one."""
    moonlite.vjp(f, *map(_fresh_copy, args))
    out, pullback = moonlite.vjp(f, *args)
    assert isinstance(pullback, Pullback)
    return out, pullback


def _fresh_copy(a):
    if isinstance(a, np.ndarray):
        return a.copy()
    if isinstance(a, tuple):
        items = [_fresh_copy(e) for e in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    return a


def vjp_by(path: str, f, *args):
    """`vjp` the way its first call on a kernel runs it, or its compiled dispatcher."""
    return _first_vjp(f, args) if path == "first call" else compiled_vjp(f, *args)


PATHS = ["first call", "compiled"]


@numba.njit
def rows_through_temporaries(W, x):
    # a temporary array per row: the sweep's tapes hold arrays (a list of them)
    s = 0.0
    for i in range(W.shape[0]):
        t = np.tanh(W[i] * x)
        s += np.sum(t * t)
    return s


@pytest.mark.parametrize("path", PATHS)
def test_the_dot_product_identity_holds_and_the_callers_arrays_get_what_f_leaves(path):
    x = np.linspace(-1.0, 1.0, 5)
    original = x.copy()
    out, pullback = vjp_by(path, squash_in_place, x, 0.8)
    np.testing.assert_allclose(x, np.tanh(0.8 * original), rtol=1e-15)  # the primal's writes
    x[2] = 7.0  # the caller reuses its array before the pullback runs
    rng = np.random.default_rng(0)
    dout, tx, ta = rng.standard_normal(5), rng.standard_normal(5), 0.3
    gx, ga = pullback(dout)
    assert x[2] == 7.0  # the pullback works on its own copy
    np.testing.assert_array_equal(pullback.arguments[0], original)  # which it restored
    h = 1e-6
    plus = squash_in_place(original + h * tx, 0.8 + h * ta)
    minus = squash_in_place(original - h * tx, 0.8 - h * ta)
    assert np.dot(gx, tx) + ga * ta == pytest.approx(np.dot(dout, (plus - minus) / (2 * h)),
                                                     rel=1e-7)


def test_tapes_of_arrays_stay_in_compiled_code_and_the_gradient_matches():
    rng = np.random.default_rng(1)
    W, x = rng.standard_normal((4, 3)), rng.standard_normal(3)
    out, pullback = compiled_vjp(rows_through_temporaries, W, x)
    assert out == pytest.approx(rows_through_temporaries(W, x))
    gW, gx = pullback(1.0)
    fd_W = central_differences(rows_through_temporaries, (W, x), 0)
    fd_x = central_differences(rows_through_temporaries, (W, x), 1)
    np.testing.assert_allclose(gW, fd_W, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gx, fd_x, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dout, message", [(np.ones(4), "shape \\(5,\\)"),
                                           (np.ones(5, dtype=np.float32), "dtype float64"),
                                           (1.0, "must have shape")])
def test_a_wrong_cotangent_gets_the_precise_message_and_leaves_the_pullback_usable(path, dout,
                                                                                   message):
    _, pullback = vjp_by(path, squash_in_place, np.ones(5), 0.5)
    with pytest.raises(ArgumentError, match=message):
        pullback(dout)
    gx, _ = pullback(np.ones(5))
    assert gx.shape == (5,)


@numba.njit
def sum_cubes(x):
    return np.sum(x ** 3)


@pytest.mark.parametrize("dout", [2, np.float32(2.0), np.array(2.0)],
                         ids=["int", "float32", "0-d array"])
def test_real_cotangents_of_other_types_are_converted(dout):
    x = np.array([1.0, -2.0, 0.5])
    _, pullback = compiled_vjp(sum_cubes, x)
    (g,) = pullback(dout)
    np.testing.assert_allclose(g, 2.0 * 3 * x ** 2, rtol=1e-15)


def test_a_pullback_runs_once():
    _, pullback = compiled_vjp(sum_cubes, np.ones(3))
    pullback(1.0)
    with pytest.raises(ArgumentError, match="vjp\\(sum_cubes\\).*already used.*call vjp again"):
        pullback(1.0)


@pytest.mark.parametrize("args, error, message", [
    ((np.ones(3), 1.0), ArgumentError, "too many positional arguments"),
    ((np.ones(3, dtype=np.complex128),), moonlite.UnsupportedError, "complex")])
def test_a_call_the_first_would_refuse_is_refused_with_its_message(args, error, message):
    compiled_vjp(sum_cubes, np.ones(3))
    with pytest.raises(error, match=message):
        moonlite.vjp(sum_cubes, *args)


@numba.njit
def writes_first_reads_second(out, x):
    for i in range(x.size):
        out[i] = 2.0 * x[i]
    return np.sum(out * x)


def test_arguments_sharing_memory_with_a_written_array_are_refused():
    compiled_vjp(writes_first_reads_second, np.ones(3), np.ones(3))
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ArgumentError, match="out and x of writes_first_reads_second share"):
        moonlite.vjp(writes_first_reads_second, x, x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("path", PATHS)
def test_a_nan_gradient_is_computed_again_with_zero_guarded_products(path):
    x = np.array([-2.0, 3.0])
    _, pullback = vjp_by(path, overflowing, x)
    (g,) = pullback(1.0)
    np.testing.assert_allclose(g, [x[1] ** 2, 2 * x[0] * x[1]], rtol=1e-12)


@numba.njit
def vjp_in_njit(x):
    return moonlite.vjp(sum_cubes, x)


@numba.njit
def pull_in_njit(pullback, dout):
    return pullback(dout)


def test_a_pullback_crosses_between_python_and_njit_code():
    x = np.array([1.0, -2.0, 0.5])
    out, pullback = vjp_in_njit(x)  # made in njit code, called from Python
    assert out == pytest.approx(np.sum(x ** 3))
    np.testing.assert_allclose(pullback(1.0)[0], 3 * x ** 2, rtol=1e-15)
    _, pullback = compiled_vjp(sum_cubes, x)  # made from Python, called in njit code
    np.testing.assert_allclose(pull_in_njit(pullback, 0.5)[0], 1.5 * x ** 2, rtol=1e-15)
    with pytest.raises(ArgumentError, match="already used"):
        pullback(1.0)  # the struct's flag, shared by both sides


SITE = np.dtype([("depth", np.float64), ("width", np.float64)])


@numba.njit
def site_energy(x, site):
    return site.depth * np.sum((1.0 - np.exp(-site.width * x)) ** 2)


@numba.njit
def vjp_of_a_record_in_njit(x, sites):
    return moonlite.vjp(site_energy, x, sites[0])[0]


def test_a_record_argument_keeps_the_first_calls_path_and_is_refused_inside_njit_code():
    # the pullback would keep a pointer to the caller's record: vjp from Python keeps taking
    # the path of its first call, whose Python pullback holds the record itself
    x, site = np.array([0.3, 0.9]), np.array([(2.0, 1.3)], dtype=SITE)[0]
    for _ in range(3):
        out, pullback = moonlite.vjp(site_energy, x, site)
        gx, gsite = pullback(1.0)
    assert not isinstance(pullback, Pullback)
    np.testing.assert_allclose(gx, central_differences(site_energy, (x, site)), rtol=1e-6)
    h = 1e-6
    plus, minus = site.copy(), site.copy()
    plus["width"] += h
    minus["width"] -= h
    assert gsite["width"] == pytest.approx(
        (site_energy(x, plus) - site_energy(x, minus)) / (2 * h), rel=1e-6)
    with pytest.raises(moonlite.UnsupportedError, match="record argument"):
        vjp_of_a_record_in_njit(x, np.array([(2.0, 1.3)], dtype=SITE))


@pytest.mark.parametrize("target", [np.zeros(()), np.zeros((3, 4))[:, ::2], np.zeros((2, 3, 2)),
                                    np.zeros(0), np.zeros(4, np.float32),
                                    np.zeros(3, dtype=SITE)], ids=str)
def test_the_compiled_vjp_copies_a_written_argument_back_entry_by_entry(target):
    # (copy_into: what the sweep wrote into its copy of an argument goes back to the caller's)
    rng = np.random.default_rng(3)
    value = np.frombuffer(rng.bytes(target.nbytes), target.dtype).reshape(target.shape)
    copy_into(target, value)
    assert target.tobytes() == value.tobytes()


# --- tuple and namedtuple outputs -------------------------------------------------------------

Summary = namedtuple("Summary", ["mean", "spread", "scaled"])


@numba.njit
def loss_and_prediction(x, a):
    y = np.sin(x) * a
    return np.sum(y ** 2), y


@numba.njit
def summary(x, a):
    return Summary(np.mean(x) * a, np.std(x), x * a)


@numba.njit
def integrated(y0, k, n):
    """A loop-carried state returned whole: (time-weighted total, final state)."""
    t, y = 0.0, y0.copy()
    for _ in range(n):
        y = y - 0.1 * k * y ** 3
        t += 0.1 * np.sum(y)
    return t, y


@numba.njit
def by_branch(x, c):
    if c > 0:
        return np.sum(x), x * 2.0
    return np.max(x), np.cos(x)


@numba.njit
def passes_an_argument_through(x, a):
    return a * 2.0, x


@numba.njit
def views_in_the_output(A, b):
    B = A * b
    return np.sum(B), B[1:, :], (B * 2.0).T, B[::2, 0]


Fit = namedtuple("Fit", ["loss", "iterations", "converged", "params"])


@numba.njit
def descend(x, lr):
    """Gradient descent until the step is small: the loss and the iteration count."""
    w = x.copy()
    n = 0
    for _ in range(50):
        g = 2.0 * (w - 1.0)
        w = w - lr * g
        n += 1
        if np.sum(g * g) < 1e-3:
            break
    return np.sum((w - 1.0) ** 2) + np.sum(x), n


@numba.njit
def fitted(x, lr):
    w = x * lr
    return Fit(np.sum(w ** 2), 3, True, w)


TUPLE_OUTPUTS = {
    "a float and an array": (loss_and_prediction, (np.linspace(0.1, 1, 5), 1.5)),
    "a namedtuple": (summary, (np.linspace(0.1, 1, 5), 1.5)),
    "a loop-carried state": (integrated, (np.linspace(0.1, 1, 5), 0.7, 6)),
    "two returns (first)": (by_branch, (np.linspace(0.1, 1, 5), 1.0)),
    "two returns (second)": (by_branch, (np.linspace(0.1, 1, 5), -1.0)),
    "an argument passed through": (passes_an_argument_through, (np.linspace(0.1, 1, 5), 0.3)),
    "views of other layouts": (views_in_the_output, (np.arange(6.0).reshape(3, 2), 0.5)),
    "an int beside the loss": (descend, (np.array([0.3, -0.2, 0.8]), 0.1)),
    "ints and bools in a namedtuple": (fitted, (np.array([0.3, -0.2, 0.8]), 0.1)),
}


@pytest.mark.parametrize("name", TUPLE_OUTPUTS)
def test_a_tuple_output_in_every_mode(name):
    """vjp's pullback takes a tuple of cotangents, one per entry (check_vjp: the dot-product
    identity against finite differences of each entry)."""
    kernel, args = TUPLE_OUTPUTS[name]
    check_rule(kernel, *args)


def test_a_namedtuple_output_stays_one_in_the_first_and_the_compiled_calls():
    x = np.linspace(0.1, 1, 5)
    for _ in range(3):  # the first call runs Python calls, the next ones the dispatcher
        out, pullback = moonlite.vjp(summary, x, 1.5)
        assert isinstance(out, Summary)
        gx, ga = pullback((1.0, 0.0, np.ones(5)))
        np.testing.assert_allclose(gx, 1.5 / 5 + 1.5)  # d mean / dx * a, plus d(x a)/dx
        assert ga == pytest.approx(np.mean(x) + np.sum(x))
    _, pullback = moonlite.vjp(summary, x, 1.5)
    with pytest.raises(ArgumentError, match="a tuple of 3 entries"):
        pullback(1.0)
    with pytest.raises(ArgumentError, match="entry 2"):
        pullback((1.0, 0.0, np.ones(4)))


@numba.njit
def vjp_of_a_tuple_output_in_njit(x, dloss, dprediction):
    out, pullback = moonlite.vjp(loss_and_prediction, x, 1.5)
    return out, pullback((dloss, dprediction))


def _loss_and_prediction_fd(x, dloss, dprediction):
    """The gradient of dloss * loss + dprediction . prediction, by central differences."""
    def weighted(x, a):
        loss, prediction = loss_and_prediction(x, a)
        return dloss * loss + np.dot(dprediction, prediction)

    h = 1e-6
    gx = [(weighted(x + h * e, 1.5) - weighted(x - h * e, 1.5)) / (2 * h) for e in np.eye(x.size)]
    return np.array(gx), (weighted(x, 1.5 + h) - weighted(x, 1.5 - h)) / (2 * h)


def test_a_tuple_output_inside_njit_code():
    x, dprediction = np.linspace(0.1, 1, 5), np.linspace(-1.0, 2.0, 5)
    (loss, prediction), (gx, ga) = vjp_of_a_tuple_output_in_njit(x, 0.5, dprediction)
    assert loss == loss_and_prediction(x, 1.5)[0]
    fd_x, fd_a = _loss_and_prediction_fd(x, 0.5, dprediction)
    np.testing.assert_allclose(gx, fd_x, rtol=1e-6)
    assert ga == pytest.approx(fd_a, rel=1e-6)
    # a strided cotangent is taken as the output's C-ordered array; an int for the float entry
    (_, _), (gx, _) = vjp_of_a_tuple_output_in_njit(x, 1, np.repeat(dprediction, 2)[::2])
    np.testing.assert_allclose(gx, _loss_and_prediction_fd(x, 1.0, dprediction)[0], rtol=1e-6)


@numba.njit
def vjp_of_a_namedtuple_output_in_njit(x):
    out, pullback = moonlite.vjp(summary, x, 1.5)
    return out, out.scaled, pullback((1.0, 0.0, np.ones_like(out.scaled)))


@numba.njit
def vjp_of_integrated_in_njit(y0, k):
    out, pullback = moonlite.vjp(integrated, y0, k, 4)
    return out, pullback((1.0, np.ones_like(y0)))


def test_a_namedtuple_output_inside_njit_code_is_one():
    x = np.linspace(0.1, 1, 5)
    out, scaled, (gx, ga) = vjp_of_a_namedtuple_output_in_njit(x)
    assert isinstance(out, Summary) and out.spread == pytest.approx(np.std(x))
    np.testing.assert_array_equal(scaled, x * 1.5)

    def weighted(x, a):  # the cotangent (1, 0, ones): mean + sum(scaled)
        s = summary(x, a)
        return s.mean + np.sum(s.scaled)

    h = 1e-6
    assert ga == pytest.approx((weighted(x, 1.5 + h) - weighted(x, 1.5 - h)) / (2 * h), rel=1e-6)
    fd_x = [(weighted(x + h * e, 1.5) - weighted(x - h * e, 1.5)) / (2 * h) for e in np.eye(5)]
    np.testing.assert_allclose(gx, fd_x, rtol=1e-6)


@numba.njit
def vjp_of_integrated_in_njit(y0, k):
    out, pullback = moonlite.vjp(integrated, y0, k, 4)
    return pullback((1.0, np.ones_like(y0)))


def test_a_loop_carried_tuple_output_inside_njit_code():
    y0 = np.array([0.5, -0.3, 0.8])
    gy0, gk, gn = vjp_of_integrated_in_njit(y0, 0.7)
    assert gn is None

    def weighted(y0, k):
        t, y = integrated(y0, k, 4)
        return t + np.sum(y)

    h = 1e-6
    assert gk == pytest.approx((weighted(y0, 0.7 + h) - weighted(y0, 0.7 - h)) / (2 * h), rel=1e-6)
    fd = [(weighted(y0 + h * e, 0.7) - weighted(y0 - h * e, 0.7)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(gy0, fd, rtol=1e-6)


@numba.njit
def _wrong_cotangents(x, which):
    _, pullback = moonlite.vjp(loss_and_prediction, x, 1.5)
    if which == 0:
        return pullback((1.0, x[:2]))[0]
    return pullback((1.0, x))[0]


@numba.njit
def _a_cotangent_of_one_entry(x):
    _, pullback = moonlite.vjp(loss_and_prediction, x, 1.5)
    return pullback(1.0)


@numba.njit
def _an_array_for_the_float_entry(x):
    _, pullback = moonlite.vjp(loss_and_prediction, x, 1.5)
    return pullback((x, x))


def test_wrong_cotangents_of_a_tuple_output_inside_njit_code_say_what_is_wrong():
    x = np.linspace(0.1, 1, 5)
    with pytest.raises(ArgumentError, match="must have the shape of the output"):
        _wrong_cotangents(x, 0)
    with pytest.raises(numba.TypingError, match="must be a tuple of 2 entries like the output"):
        _a_cotangent_of_one_entry(x)
    with pytest.raises(numba.TypingError, match="entry 0, must be a real number like the output"):
        _an_array_for_the_float_entry(x)


def test_grad_and_jacrev_of_a_tuple_output_say_why():
    with pytest.raises((ArgumentError, moonlite.UnsupportedError), match="float"):
        moonlite.grad(loss_and_prediction)(np.linspace(0.1, 1, 5), 1.5)
    with pytest.raises(ArgumentError, match="must return a float or a float array"):
        moonlite.jacrev(loss_and_prediction)(np.linspace(0.1, 1, 5), 1.5)


def test_the_cotangent_of_an_int_output_entry_is_unused():
    x = np.array([0.3, -0.2, 0.8])
    (loss, n), pullback = moonlite.vjp(descend, x, 0.1)
    assert isinstance(n, int)
    gx, glr = pullback((1.0, None))  # None or a number for the int entry
    _, again = moonlite.vjp(descend, x, 0.1)
    np.testing.assert_array_equal(again((1.0, 7))[0], gx)
    _, third = moonlite.vjp(descend, x, 0.1)
    with pytest.raises(ArgumentError, match="entry 1: the output entry is an int"):
        third((1.0, np.ones(2)))


@numba.njit
def converged_step(x):
    """A tuple output with a bool entry (a convergence flag) and a string."""
    r = x * x - 1.0
    return np.sum(r * r), r, np.sum(r * r) < 1e-3, "newton"


@numba.njit
def _converged_step_in_njit(x):
    _, pullback = moonlite.vjp(converged_step, x)
    return pullback((1.0, np.ones_like(x), False, None))[0]


def test_bool_and_string_entries_take_none_or_their_own_values_in_every_path():
    """Found by an adversarial hunt: the compiled pullback refused the False the Python one
    makes of None for a bool entry, from the second call on."""
    x = np.array([0.5, 1.5, 2.0])
    h = 1e-6

    def weighted(x):
        loss, r, _, _ = converged_step(x)
        return loss + np.sum(r)

    fd = [(weighted(x + h * e) - weighted(x - h * e)) / (2 * h) for e in np.eye(3)]
    for _ in range(3):  # the first call's path, then the compiled dispatcher's
        _, pullback = moonlite.vjp(converged_step, x)
        np.testing.assert_allclose(pullback((1.0, np.ones(3), None, None))[0], fd, rtol=1e-6)
    np.testing.assert_allclose(_converged_step_in_njit(x), fd, rtol=1e-6)


State = namedtuple("State", ["x", "v"])


@numba.njit
def kick_the_state(st, k, dt):
    """A kernel writing the arrays of a tuple (or namedtuple) argument."""
    x, v = st
    for i in range(x.shape[0]):
        v[i] -= dt * k * x[i]
        x[i] += dt * v[i]
    return np.sum(x ** 2 * v)


@numba.njit
def vjp_of_a_kicked_state(x, v, k):
    out, pullback = moonlite.vjp(kick_the_state, (x, v), k, 0.1)
    _, dk, _ = pullback(1.0)
    return out, dk


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("make", [tuple, State._make], ids=["tuple", "namedtuple"])
def test_the_pullback_leaves_a_tuples_arrays_as_the_kernel_left_them(path, make):
    """The sweep ran on the caller's arrays inside a tuple argument (arrays themselves were
    copied), and the pullback, which undoes the kernel's writes as it goes back, left them as
    they were before the kernel (a helper's hunt)."""
    def fresh():
        return make((np.array([1.0, 2.0]), np.array([0.5, -0.5])))
    expected = fresh()
    value = kick_the_state(expected, 0.8, 0.1)
    st = fresh()
    out, pullback = vjp_by(path, kick_the_state, st, 0.8, 0.1)
    assert out == pytest.approx(value)
    _, dk, _ = pullback(1.0)
    for got, want in zip(st, expected):
        np.testing.assert_array_equal(got, want)  # as the kernel leaves them, still
    h = 1e-6
    fd = (kick_the_state(fresh(), 0.8 + h, 0.1) - kick_the_state(fresh(), 0.8 - h, 0.1)) / (2 * h)
    assert dk == pytest.approx(fd, rel=1e-6)


def test_inside_njit_code_the_pullback_leaves_a_tuples_arrays_too():
    x, v = np.array([1.0, 2.0]), np.array([0.5, -0.5])
    expected = (x.copy(), v.copy())
    kick_the_state(expected, 0.8, 0.1)
    vjp_of_a_kicked_state(x, v, 0.8)
    np.testing.assert_array_equal(x, expected[0])
    np.testing.assert_array_equal(v, expected[1])


@numba.njit
def _inner_for_pullback(x):
    return np.sum(np.sin(x) * x)


@numba.njit
def _calls_a_pullback(x):
    _, pb = moonlite.vjp(_inner_for_pullback, x)
    (g,) = pb(1.0)
    return np.sum(g * g)


def test_differentiating_a_call_of_a_pullback_is_refused_by_name():
    """The message spoke of "a function held in a variable" and said to call it by its global
    name (a helper's hunt)."""
    x = np.array([0.3, 0.5])
    _calls_a_pullback(x)
    for derive in (lambda: moonlite.grad(_calls_a_pullback)(x),
                   lambda: moonlite.jvp(_calls_a_pullback, (x,), (np.ones(2),))):
        with pytest.raises(moonlite.UnsupportedError, match="a call of a vjp pullback"):
            derive()
