"""Fields of jitclass instances written after construction (`ad/instance_fields.py`): made
local variables once inlined, in every mode; an instance the kernel is given has its written
fields stored back as numba would; what could alias is refused."""

import numba
import numpy as np
import pytest
from numba.experimental import jitclass

import moonlite
from moonlite.errors import UnsupportedError
from moonlite.testing import check_rule
from tests.helpers import central_differences


@jitclass([("level", numba.float64), ("calls", numba.int64), ("last", numba.float64)])
class Gauge:
    def __init__(self, level):
        self.level = level
        self.calls = 0
        self.last = 0.0

    def record(self, value):
        self.calls += 1
        self.last = value


@numba.njit
def leaky_sum(x, gauge):
    """Writes a constant count and a value being differentiated into an instance it is given."""
    total = 0.0
    for v in x:
        total = 0.9 * total + gauge.level * v * v
        gauge.record(total)
    return total


X = np.array([0.4, -1.1, 0.7])


def test_an_instance_given_and_held_fixed_is_updated_as_numba_updates_it():
    expected = Gauge(1.5)
    value = leaky_sum(X, expected)
    for run in (lambda g: moonlite.jvp(leaky_sum, (X, g), (np.ones(3), None))[0],
                lambda g: moonlite.value_and_grad(leaky_sum)(X, g)[0]):
        gauge = Gauge(1.5)
        assert run(gauge) == value
        assert (gauge.calls, gauge.last) == (expected.calls, expected.last) == (3, value)


def test_its_derivative_ignores_the_value_stored_back():
    # the stored value is what the caller sees afterwards, not an output: as for an array
    # argument written, no derivative flows through it
    gauge = Gauge(1.5)
    expected = central_differences(lambda x: leaky_sum(x, Gauge(1.5)), (X,))
    np.testing.assert_allclose(moonlite.grad(leaky_sum)(X, gauge), expected, rtol=1e-7)
    check_rule(leaky_sum, X, Gauge(1.5), fixed=(1,), second_order=True)  # held fixed
    check_rule(leaky_sum, X, Gauge(1.5), second_order=True, vjp=False)  # the gauge too


@jitclass([("x", numba.float64), ("v", numba.float64)])
class Body:
    def __init__(self, x, v):
        self.x = x
        self.v = v

    def push(self, f, dt):
        self.v += f * dt
        self.x += self.v * dt


@numba.njit
def nudge(body, f):
    body.push(f, 0.1)  # a helper writing fields of the instance it is given


@numba.njit
def fall(x0, g):
    b = Body(x0, 0.0)
    k = 0
    while b.x > 0.0 and k < 100:
        nudge(b, -g)
        if b.v < -2.0:
            b.v = -2.0  # a field clipped on one branch
        k += 1
    return b.x + b.v * k


def test_fields_written_in_helpers_branches_and_a_while_loop():
    check_rule(fall, 1.0, 9.8, second_order=True)


@numba.njit
def two_bodies(a, b, f):
    a.push(f, 0.1)
    return a.x + b.x


@numba.njit
def kept_in_another(x):
    inner = Body(x, 0.0)
    outer = Body(0.0, 0.0)
    inner.push(x, 0.1)
    holder = (inner, outer)
    return holder[0].x + _x_of(holder)


@numba.njit
def _x_of(pair):
    return pair[1].x


@numba.njit
def returned(x):
    b = Body(x, 0.0)
    b.push(1.0, 0.1)
    return b


@numba.njit
def uses_returned(x):
    return returned(x).x * x


@numba.njit
def pushed_in_a_loop(bodies, f, n):
    for _ in range(n):
        b = bodies[0]  # read again at each iteration, before the last one's writes reach it
        b.push(f, 0.1)
    return bodies[0].x


@pytest.mark.parametrize("kernel, args, match", [
    (two_bodies, (Body(1.0, 0.0), Body(2.0, 0.0), 0.5),
     "that may be the same object as another instance of its class"),
    (pushed_in_a_loop, ((Body(1.0, 0.0), 1), 0.5, 3),
     "that the function reads out of another value after its start"),
])
def test_an_instance_that_may_be_another_is_refused_in_every_mode(kernel, args, match):
    tangents = tuple(1.0 if isinstance(a, float) else None for a in args)
    with pytest.raises(UnsupportedError, match=match):
        moonlite.grad(kernel, argnums=tangents.index(1.0))(*args)
    with pytest.raises(UnsupportedError, match=match):
        moonlite.jvp(kernel, args, tangents)


def test_instances_built_passed_on_and_returned_stay_correct():
    for kernel in (kept_in_another, uses_returned):
        check_rule(kernel, 0.7, second_order=True, vjp=False)


@numba.njit
def filtered(zs, state, r):
    """A structref given to the kernel and updated in place (held fixed: its fields are
    stored back), differentiated with respect to the observations and the noise."""
    ll = 0.0
    for z in zs:
        s = state.var + r
        ll -= (z - state.mean) ** 2 / s
        state.mean += state.var / s * (z - state.mean)
        state.var *= r / s
    return ll


def test_a_structref_given_and_held_fixed_is_updated_and_differentiated_around():
    from tests.corpus.constructs import FilterState
    zs = np.array([0.2, 0.7, 0.4])
    expected = FilterState(0.0, 1.0)
    value = filtered(zs, expected, 0.5)
    state = FilterState(0.0, 1.0)
    assert moonlite.value_and_grad(filtered, argnums=(0, 2))(zs, state, 0.5)[0] == value
    assert (state.mean, state.var) == (expected.mean, expected.var)
    check_rule(filtered, zs, FilterState(0.0, 1.0), 0.5, fixed=(1,), second_order=True)
    # differentiated with respect to (tests/test_api_instances.py), it is left as it was
    state = FilterState(0.0, 1.0)
    assert type(moonlite.grad(filtered, argnums=1)(zs, state, 0.5)) is FilterState
    assert (state.mean, state.var) == (0.0, 1.0)
