"""Shared test utilities: comparing results of kernels, including mutated arguments."""

import os

import numpy as np
import pytest

import moonlite
from moonlite.errors import UnsupportedError

from tests.helpers_env import O0_NUMBA_CACHE


def assert_same(actual, expected, path="result"):
    """Exact equality of kernel outputs (numbers, arrays with dtype and shape, nested tuples)."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{path}[{i}]")
        return
    if isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), f"{path}: expected an array, got {actual!r}"
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, f"{path}: shape {actual.shape} != {expected.shape}"
        np.testing.assert_array_equal(actual, expected, err_msg=path)
        return
    if expected is None:
        assert actual is None, path
        return
    assert type(actual) is type(expected) or np.isscalar(actual), \
        f"{path}: type {type(actual)} != {type(expected)}"
    if isinstance(expected, float) and np.isnan(expected):
        assert np.isnan(actual), path
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def central_differences(f, args: tuple, argnum: int = 0, h: float = 1e-6) -> np.ndarray:
    """The gradient of scalar `f(*args)` with respect to the float array `args[argnum]`, by
    central differences (each evaluation gets fresh copies: kernels may write their inputs)."""
    x = args[argnum]
    grad = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[k] = h
        plus, minus = list(args), list(args)
        plus[argnum], minus[argnum] = x + step, x - step
        grad[k] = (f(*plus) - f(*minus)) / (2 * h)
    return grad


def optimised_env() -> dict:
    """The environment for a test's new process, compiling at numba's default optimisation
    level (tests/conftest.py compiles the suite at -O0 unless NUMBA_OPT says otherwise)."""
    env = dict(os.environ)
    env.pop("NUMBA_OPT", None)
    if env.get("NUMBA_CACHE_DIR") == O0_NUMBA_CACHE:  # the suite's -O0 code stays out
        env.pop("NUMBA_CACHE_DIR")
    return env


def assert_refused_in_both_modes(kernel, construct: str) -> None:
    """`grad` and `jvp` of `kernel` at a 3-vector both raise UnsupportedError matching
    `construct` (numba compiles the kernel first: the refusal is moonlite's)."""
    x = np.array([0.4, -0.3, 0.9])
    kernel(x)
    for derive in (lambda: moonlite.grad(kernel)(x),
                   lambda: moonlite.jvp(kernel, (x,), (np.ones(3),))):
        with pytest.raises(UnsupportedError, match=construct):
            derive()


def check_in_turn(index: int, kernel, *args, second_order: bool = True, **options) -> None:
    """`check_rule` on the `index`-th kernel of a list of cases: forward mode, grad and (with
    `second_order`) the Hessian against finite differences on every kernel; vjp's split rule
    (its sweep and pullback compiled apart) on every kernel checked to first order only and on
    every other one checked to second order. All four compiled for every kernel of the
    construct files were a fifth of CI's time, where vjp's split is the same reverse rule cut
    in two (checked on half of them, and by tests/test_api_vjp.py)."""
    from moonlite.testing import check_rule
    check_rule(kernel, *args, second_order=second_order,
               vjp=not second_order or index % 2 == 0, **options)


def check_corpus_case(case, index: int) -> None:
    """`check_in_turn` on a case of tests/corpus/constructs.py."""
    check_in_turn(index, case.kernel, *case.make_args(), second_order=case.second_order)
