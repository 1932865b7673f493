"""Derived dispatchers (`lower/dispatcher.py`) travel to other processes: they pickle by
reference to the function and the options they were made from, and rebuild there."""

import multiprocessing
import pickle

import numba
import numpy as np
import pytest

import moonlite
from moonlite.lower import DerivedDispatcher


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
