"""Fields of jitclass instances built in a kernel are read out of their fields tuples once the
calls taking the instances are inlined (ad/instances.py): no instance is left in the IR the AD
passes see, phis of instances included; what cannot be read through keeps its `make` call."""

from collections import namedtuple

import numba
import numpy as np
from numba.experimental import jitclass

from moonlite import driver
from moonlite.ad.inline import inline_njit_calls
from moonlite.rules.jitclasses import is_instance_type, maker, takes_or_returns_instance
from moonlite.ir import ops, verify
from moonlite.ir.types import TupleType
from moonlite.testing import check_rule


@jitclass([("pos", numba.float64), ("vel", numba.float64), ("steps", numba.int64)])
class Body:
    def __init__(self, pos, vel, steps):
        self.pos = pos
        self.vel = vel
        self.steps = steps

    def kinetic(self):
        return 0.5 * self.vel * self.vel


@numba.njit
def advance(body, dt):
    return Body(body.pos + dt * body.vel, body.vel - dt * body.pos, body.steps + 1)


@numba.njit
def orbit(x, dt):
    body = Body(x, 0.0, 0)
    for _ in range(5):
        body = advance(body, dt)  # a helper returning an instance; a phi of instances
    if body.pos < 0.0:
        body = Body(-body.pos, body.vel, body.steps)
    return body.kinetic() + body.pos * body.steps


@numba.njit
def kept_in_a_tuple(x):
    state = (Body(x, 0.0, 0), 1)
    for i in range(3):
        state = (advance(state[0], 0.1), i)
    return state[0].pos


@numba.njit
def joined(x, c):
    a = Body(x, 0.0, 0)
    b = Body(2.0 * x, 1.0, 0)
    for _ in range(3):
        a = advance(a, 0.1)
        b = advance(b, 0.2)
    chosen = a if c else b  # a phi whose values are all phis
    return chosen.kinetic() + chosen.pos


def _flat(f, *types):
    flat = inline_njit_calls(driver.primal_ir(f, types), context=driver.PASS_CONTEXT)
    verify(flat)
    return flat


def _instances(fn):
    return [op for op in fn.ops() if op.result is not None and is_instance_type(op.result.type)]


def test_instances_rebuilt_in_a_loop_and_a_branch_leave_no_instance():
    flat = _flat(orbit, numba.float64, numba.float64)
    assert _instances(flat) == []
    tuple_phis = [op for op in flat.ops() if isinstance(op, ops.Phi)
                  and getattr(op.result.type, "elements", None) is not None]
    assert tuple_phis  # the loop carries the fields tuple instead
    assert orbit(0.7, 0.1) == driver.lower(flat)(0.7, 0.1)


def test_an_instance_in_a_tuple_around_a_loop_is_read_through():
    """The tuple phi is split into a phi per entry (`instances.split_tuple_phis`): the
    instance phi is then one of built instances, and no `make` call is left."""
    flat = _flat(kept_in_a_tuple, numba.float64)
    makes = [op for op in flat.ops() if isinstance(op, ops.Call) and maker(op.callee)]
    assert not makes and not _instances(flat)
    assert kept_in_a_tuple(0.7) == driver.lower(flat)(0.7)
    check_rule(kept_in_a_tuple, 0.7, second_order=True)


State = namedtuple("State", ["body", "t"])


@numba.njit
def carried_in_a_namedtuple(x, n):
    s = State(Body(x, 0.0, 0), 0.0)
    for _ in range(n):
        if s.body.pos > 0.3:
            s = State(advance(s.body, 0.1), s.t + s.body.kinetic())
        else:
            s = State(Body(s.body.vel + 0.5, s.body.pos, 1), s.t * 0.5)
    return s.body.pos * s.t + s.body.kinetic()


@numba.njit
def nested_tuple_carried(x, n):
    """`((a, b), c)` around a loop: reverse mode refuses nested tuples, but split into a phi
    per entry the loop carries a flat tuple and a number."""
    st = ((x[0], x[1]), x[2])
    for _ in range(n):
        (a, b), c = st
        st = ((a * 0.9 + c, b - 0.1 * a), c + a * b)
    return st[0][0] + st[0][1] * st[1]


@numba.njit
def nested_tuple_of_arrays_carried(x, n):
    st = ((x.copy(), x[0]), 1.0)
    for _ in range(n):
        (v, s), w = st
        st = ((np.sin(v) * w, s + np.sum(v)), w * 0.9)
    return np.sum(st[0][0]) + st[0][1] * st[1]


@numba.njit
def three_levels_carried(x, n):
    st = (((x[0], x[1]), x[2]), (x[1], (x[2],)))
    for _ in range(n):
        ((a, b), c), (d, (e,)) = st
        st = (((a * 0.9 + c, b - 0.1 * d), c + a * e), (d * 0.5 + b, (e + a,)))
    return st[0][0][0] + st[0][1] * st[1][1][0]


@numba.njit
def instance_in_a_nested_tuple(x, n):
    st = ((Body(x[0], x[1], 0), x[2]), x[1])
    for _ in range(n):
        (body, u), w = st
        st = ((Body(body.vel * u, body.pos + w, 1), u * 0.5), w + body.pos)
    return st[0][0].pos * st[1]


def test_tuples_carried_around_loops_holding_instances_or_tuples_in_every_mode():
    x = np.array([0.5, 1.2, 0.3])
    check_rule(three_levels_carried, x, 3, second_order=True, vjp=False)  # split level by level
    check_rule(instance_in_a_nested_tuple, x, 3, second_order=True)
    check_rule(carried_in_a_namedtuple, 0.5, 4, second_order=True, vjp=False)
    check_rule(carried_in_a_namedtuple, 0.1, 4, second_order=True)  # the other branch
    x = np.array([0.5, 1.2, 0.3])
    check_rule(nested_tuple_carried, x, 4, second_order=True, vjp=False)
    check_rule(nested_tuple_of_arrays_carried, x, 3, second_order=True)
    flat = _flat(nested_tuple_carried, numba.typeof(x), numba.int64)
    assert not any(isinstance(op, ops.Phi) and isinstance(op.result.type, TupleType)
                   and any(isinstance(e, TupleType) for e in op.result.type.elements)
                   for op in flat.ops())


def test_forward_mode_inlines_only_calls_that_take_or_return_instances():
    primal = driver.primal_ir(orbit, (numba.float64, numba.float64))
    calls = [op for op in primal.ops() if isinstance(op, ops.Call)]
    chosen = {op.callee.__name__ if hasattr(op.callee, "__name__") else op.callee
              for op in calls if takes_or_returns_instance(op)}
    assert "advance" in chosen and "kinetic" in chosen
    assert not any(takes_or_returns_instance(op) for op in calls
                   if getattr(op.callee, "__name__", "").endswith("_fields"))


def test_the_rebuilt_instances_differentiate_in_every_mode():
    check_rule(orbit, 0.7, 0.1, second_order=True, vjp=False)
    check_rule(orbit, -2.5, 0.3, second_order=True)  # the branch rebuilds it once more


def test_a_phi_of_phis_of_instances_is_read_through():
    flat = _flat(joined, numba.float64, numba.boolean)
    assert _instances(flat) == []
    for c in (True, False):
        check_rule(joined, 0.7, c, second_order=True, vjp=False)


@jitclass([("a", numba.float64), ("w", numba.float64[:])])
class Weighted:
    def __init__(self, a, w):
        self.a = a
        self.w = w


@numba.njit
def rebuilt_from_a_given_state(x, given, n):
    """A state starting from the caller's instance, rebuilt in a loop: the loop's phi joins
    the given instance's fields (read at the loop's entry) with those of the ones built."""
    s = given
    for _ in range(n):
        s = Weighted(s.a * 0.5 + x[0], np.sin(s.w) + x)
    return s.a * np.sum(s.w)


@numba.njit
def built_or_given_with_an_array_field(x, given, c):
    b = Weighted(x[0] * 2.0, x[::-1]) if c > 0 else given
    return b.a * np.sum(b.w * x)


def test_a_phi_of_built_and_given_instances_in_every_mode():
    given = Weighted(3.0, np.array([0.5, -0.2, 0.1]))
    x = np.array([0.3, 0.7, -0.4])
    check_rule(rebuilt_from_a_given_state, x, given, 3, second_order=True, fixed=(1,))
    for c in (1.0, -1.0):
        check_rule(built_or_given_with_an_array_field, x, given, c, second_order=True,
                   fixed=(1,))
