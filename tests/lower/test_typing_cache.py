"""Operators on scalars in derived code are typed once per operator and argument types
(lower/typing_cache.py): only where nothing but those types decides the signature, and only
while moonlite types derived code."""

import operator

import numba
import numpy as np
from numba.core import types

import moonlite
from moonlite.lower import typing_cache
from moonlite.testing import check_rule


@numba.njit
def mixed(x, n):
    s = 0.0
    for i in range(n):
        s += x[i % x.shape[0]] * (i + 1) / n - (i // 2) * 0.5
    return s * s


def test_derived_code_fills_the_cache_and_differentiates_as_before():
    x = np.array([0.3, -1.1, 0.8])
    moonlite.grad(mixed)(x, 5)
    keys = set(typing_cache._signatures)
    assert (operator.mul, (types.float64, types.float64)) in keys
    assert (operator.getitem, (types.Array(types.float64, 1, "C"), types.int64)) in keys
    check_rule(mixed, x, 5, second_order=True)


def test_only_types_that_decide_the_signature_alone_make_a_key():
    f64, i64 = types.float64, types.int64
    assert typing_cache._key(operator.add, (f64, i64), {}) is not None
    assert typing_cache._key(operator.add, (f64, types.IntegerLiteral(3)), {}) is None
    assert typing_cache._key(operator.add, (types.Array(f64, 1, "C"), f64), {}) is None
    assert typing_cache._key(np.sin, (f64,), {}) is None
    assert typing_cache._key(operator.getitem, (types.UniTuple(f64, 2), i64), {}) is None
    assert typing_cache._key(operator.getitem, (types.Array(f64, 2, "A"),
                                                types.UniTuple(i64, 2)), {}) is not None


def test_compiles_that_are_not_moonlites_are_typed_by_numba_alone():
    @numba.njit
    def plain(a, b):
        return a * 4 - b // 3 + (a > b)

    known = dict(typing_cache._signatures)
    assert plain(7, 5) == 7 * 4 - 5 // 3 + 1
    assert plain(2.5, 1.0) == 2.5 * 4 - 1.0 // 3 + 1
    assert typing_cache._signatures == known
