"""Derived dispatchers (`lower/dispatcher.py`) travel to other processes: they pickle by
reference to the function and the options they were made from, and rebuild there."""

import multiprocessing
import pickle

import numba
import numpy as np
import pytest

import moonlite
from moonlite.errors import LoweringError
from moonlite.ir import ops
from moonlite.lower import DerivedDispatcher, dispatcher, emit


@numba.njit
def energy(x, k):
    return 0.5 * k * np.sum(x * x) + np.sum(np.sin(x))


X = np.array([0.3, -1.2, 2.0])


def _expected_grad(x, k):
    return k * x + np.cos(x)


def _call(task):
    fn, args = task
    return fn(*args)


def test_derived_dispatchers_pickle_by_reference_and_rebuild():
    for make in (lambda: moonlite.grad(energy), lambda: moonlite.grad(energy, argnums=(0, 1)),
                 lambda: moonlite.value_and_grad(energy), lambda: moonlite.hessian(energy)):
        d = make()
        d(X, 2.0)
        data = pickle.dumps(d)
        assert len(data) < 4096  # the recipe, not compiled code
        again = pickle.loads(data)
        assert again is d  # in the same process: the memoised dispatcher itself
    np.testing.assert_allclose(pickle.loads(pickle.dumps(moonlite.grad(energy)))(X, 2.0),
                               _expected_grad(X, 2.0), rtol=1e-12)


def test_a_dispatcher_without_a_recipe_says_so():
    d = DerivedDispatcher("nothing", ["x"], derive=lambda types: None)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(d)


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_grad_and_hessian_run_in_worker_processes(method):
    g, h = moonlite.grad(energy), moonlite.hessian(energy)
    g(X, 2.0)  # compiled here first: a forked worker inherits it
    tasks = [(g, (X, 2.0)), (g, (X * 2, 3.0)), (h, (X, 2.0))]
    with multiprocessing.get_context(method).Pool(2) as pool:
        got = pool.map(_call, tasks, chunksize=1)
    np.testing.assert_allclose(got[0], _expected_grad(X, 2.0), rtol=1e-12)
    np.testing.assert_allclose(got[1], _expected_grad(X * 2, 3.0), rtol=1e-12)
    np.testing.assert_allclose(got[2], np.diag(2.0 - np.sin(X)), rtol=1e-12, atol=1e-14)


@numba.njit
def _transposed_copy(a):
    b = a.T.copy()  # C-ordered, whatever a.T is
    return np.sum(b.ravel() * np.arange(b.size))


def test_numba_typing_an_array_otherwise_than_moonlite_is_an_internal_error(monkeypatch):
    """Emitted code that numba types differently from moonlite's IR would compute wrong numbers
    (C-ordered code given a Fortran-ordered array): the dispatcher refuses it, in every compile.
    Made here by lowering a.copy() as numba's np.copy, which keeps a.T Fortran-ordered (a bug
    found so)."""
    def copy_as_np_copy(emitter, op, loc):
        if op.method != "copy":
            return emit.NumbaEmitter.on_method_call(emitter, op, loc)
        return emitter._call(op.result, np.copy, [emitter.var(op.receiver)], (), loc)

    monkeypatch.setitem(emit._HANDLERS, ops.MethodCall, copy_as_np_copy)
    a = np.arange(6.0).reshape(2, 3)
    expected = r"numba types \S+ as array\(float64, 2d, F\), moonlite as array\(float64, 2d, C\)"
    with pytest.raises(LoweringError, match=expected):
        moonlite.jvp(_transposed_copy, (a,), (np.ones_like(a),))


@numba.njit
def _pinv_squares(a):
    return np.sum(np.linalg.pinv(a) ** 2)


def test_pinvs_second_order_types_its_tangent_locals_as_numba_does():
    """A tangent local of pinv's F-ordered result was typed "A" by moonlite and F by numba, so
    that a product of it was C in the IR and F in numba (found by the type check). Tangent
    locals are now typed from what is stored in them (ad/forward.py: `_layouts_differ`)."""
    a = np.random.default_rng(3).standard_normal((4, 3))
    v = np.random.default_rng(4).standard_normal((4, 3))
    hv, h = moonlite.hvp(_pinv_squares, (a,), (v,)), 1e-4
    f = _pinv_squares.py_func
    for w in np.random.default_rng(5).standard_normal((3, 4, 3)):  # w.Hv by differences
        fd = (f(a + h * v + h * w) - f(a + h * v - h * w) - f(a - h * v + h * w)
              + f(a - h * v - h * w)) / (4 * h * h)
        assert np.sum(w * hv) == pytest.approx(fd, rel=1e-5)
