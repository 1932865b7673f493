"""Jitclass constructors captured as `make(fields(...))` (capture/jitclasses.py): the rewritten
`__init__` computes what numba's constructor stores, the instance `make` builds holds it, and an
`__init__` that does more than set fields keeps numba's constructor."""

import numba
import numpy as np
import pytest
from numba.experimental import jitclass

import moonlite
from moonlite.capture.jitclasses import constructor_of
from moonlite.rules.jitclasses import maker
from moonlite.errors import UnsupportedError
from moonlite.ir import ops
from moonlite.testing import check_rule


@jitclass([("a", numba.float64), ("b", numba.float32), ("n", numba.int64),
           ("w", numba.float64[:]), ("flag", numba.boolean)])
class Mixed:
    def __init__(self, a, w, n):
        self.a = a
        self.w = w
        if n > 2:
            self.n = n
            self.b = a * 2.0  # float64 into a float32 field
            return
        self.flag = True  # n, b stay zero as numba allocated them
        self.a = self.a + w[0]  # a field read back after it is set


@jitclass([("a", numba.float64)])
class PassesSelf:
    def __init__(self, a):
        self.a = a
        helper(self)


@numba.njit
def helper(obj):
    return obj.a


@jitclass([("w", numba.float64[:]), ("s", numba.float64)])
class ReadsArrayFirst:
    def __init__(self, s):
        self.s = s + self.w.shape[0]  # the array field is null here: no rewrite can type it
        self.w = np.zeros(2)


@jitclass([("a", numba.float64)])
class Printing:
    def __init__(self, a):
        print(a)
        self.a = a


def _instance_type(cls):
    return cls.class_type.instance_type


@pytest.mark.parametrize("n", [1, 3])
def test_the_fields_function_computes_what_the_constructor_stores(n):
    w = np.array([0.5, -1.0])
    ctor = constructor_of(_instance_type(Mixed))
    fields = dict(zip(ctor.names, ctor.fields(0.3, w, n)))
    built = Mixed(0.3, w, n)
    for name in ("a", "n", "flag"):
        assert fields[name] == getattr(built, name), name
    assert np.float32(fields["b"]) == built.b
    assert fields["w"] is w
    made = ctor.make(ctor.fields(0.3, w, n))
    assert [getattr(made, name) for name in ("a", "b", "n", "flag")] == \
        [getattr(built, name) for name in ("a", "b", "n", "flag")]
    assert made.w is w


def test_constructors_that_do_more_than_set_fields_are_not_rewritten():
    assert constructor_of(_instance_type(PassesSelf)) is None
    assert constructor_of(_instance_type(Mixed)) is not None


@numba.njit
def mixed_energy(x, w, n):
    m = Mixed(x * x, w * x, n)
    return m.a * m.b + np.sum(m.w ** 2) * m.n + m.flag


@pytest.mark.parametrize("n", [1, 3])
def test_a_kernel_building_an_instance_differentiates_in_every_mode(n):
    w = np.array([0.5, -1.0, 0.25])
    check_rule(mixed_energy, 0.7, w, n, second_order=True, rtol=1e-4)
    value, _ = moonlite.value_and_grad(mixed_energy)(0.7, w, n)
    assert value == mixed_energy(0.7, w, n)  # float32 rounding of b as numba does it


@numba.njit
def reads_array_first(x):
    return ReadsArrayFirst(x).s


def test_a_constructor_numba_types_only_as_its_own_stays_numbas():
    captured = moonlite.capture(reads_array_first, 0.5)
    calls = [op.callee for op in captured.ops() if isinstance(op, ops.Call)]
    assert ReadsArrayFirst in calls and not any(maker(c) for c in calls)
    with pytest.raises(UnsupportedError, match="into a jitclass instance"):
        moonlite.grad(reads_array_first)(0.5)


@numba.njit
def prints_in_init(x):
    return Printing(x).a * 2.0


def test_an_unsupported_statement_in_init_is_reported_at_its_own_line():
    with pytest.raises(UnsupportedError, match="print") as info:
        moonlite.grad(prints_in_init)(0.5)
    message = str(info.value)
    assert "Printing.__init__" in message and "print(a)" in message
