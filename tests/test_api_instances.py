"""Derivatives with respect to `@jitclass` and structref instance arguments (api_instances.py),
each checked
against central differences over the instance's fields: `grad` and `value_and_grad` return an
instance of gradients, `jvp` takes an instance as the tangent, `vjp`'s pullback returns one;
what is refused is refused with an error naming it. (`hvp`, and every mode by the rule checker:
the corpus cases `spring_energy` and `drain`, tests/capture/test_constructs.py.)"""

import numba
import numpy as np
import pytest
from numba.experimental import jitclass, structref

import moonlite
from moonlite.errors import ArgumentError, UnsupportedError
from moonlite.testing import check_jvp, check_rule
from tests.corpus.constructs import CubicSpring, Reservoir, drain, spring_energy


def _spring(k=2.0, c=0.5, w=(1.0, -0.5, 0.25)):
    return CubicSpring(k, c, 2, np.array(w))


X = np.array([0.7, -0.4, 1.1])
H = 1e-6


def _fields(s):
    return np.concatenate([[s.k, s.c], s.w])


def _along(s, d, t):
    """The spring `s + t * d` (d's int field ignored)."""
    return CubicSpring(s.k + t * d.k, s.c + t * d.c, s.n, s.w + t * d.w)


def _fd_gradient(f, s, x):
    base = _fields(s)
    grads = []
    for e in np.eye(base.size):
        def at(t):
            v = base + t * e
            return f(CubicSpring(v[0], v[1], s.n, v[2:].copy()), x)
        grads.append((at(H) - at(-H)) / (2 * H))
    return np.array(grads)


def test_grad_is_an_instance_of_gradients():
    s = _spring()
    g = moonlite.grad(spring_energy, argnums=0)(s, X)
    assert type(g) is type(s)
    np.testing.assert_allclose(_fields(g), _fd_gradient(spring_energy, s, X), rtol=1e-6)
    assert g.n == 0 and g.label == "spring"  # an int carries no derivative; a string is kept


def test_value_and_grad_of_an_instance_and_an_array():
    s = _spring()
    value, (gs, gx) = moonlite.value_and_grad(spring_energy, argnums=(0, 1))(s, X)
    assert value == spring_energy(s, X)
    np.testing.assert_allclose(_fields(gs), _fd_gradient(spring_energy, s, X), rtol=1e-6)
    fd_x = [(spring_energy(s, X + H * e) - spring_energy(s, X - H * e)) / (2 * H)
            for e in np.eye(3)]
    np.testing.assert_allclose(gx, fd_x, rtol=1e-6)


def test_jvp_takes_an_instance_tangent():
    s, ds = _spring(), _spring(0.3, -0.2, (0.1, 0.2, -0.3))
    dx = np.array([0.5, -1.0, 0.25])
    out, dout = moonlite.jvp(spring_energy, (s, X), (ds, dx))
    fd = (spring_energy(_along(s, ds, H), X + H * dx)
          - spring_energy(_along(s, ds, -H), X - H * dx)) / (2 * H)
    assert out == spring_energy(s, X)
    np.testing.assert_allclose(dout, fd, rtol=1e-6)
    # None holds the instance fixed
    _, dout = moonlite.jvp(spring_energy, (s, X), (None, dx))
    fd = (spring_energy(s, X + H * dx) - spring_energy(s, X - H * dx)) / (2 * H)
    np.testing.assert_allclose(dout, fd, rtol=1e-6)


def test_jvp_and_grad_inside_njit_code():
    s, ds = _spring(), _spring(0.3, -0.2, (0.1, 0.2, -0.3))
    g = moonlite.grad(spring_energy)

    @numba.njit
    def both(s, x, ds):
        return g(s, x).k, moonlite.jvp(spring_energy, (s, x), (ds, np.zeros_like(x)))[1]

    gk, dout = both(s, X, ds)
    fd = _fd_gradient(spring_energy, s, X)
    np.testing.assert_allclose(gk, fd[0], rtol=1e-6)
    np.testing.assert_allclose(dout, fd @ _fields(ds), rtol=1e-6)


def test_vjp_pullback_returns_an_instance():
    # (the corpus checks the first call's path in every mode: this is the compiled one)
    s = _spring()
    for _ in range(2):
        out, pullback = moonlite.vjp(spring_energy, s, X)
    gs, gx = pullback(2.5)
    assert out == spring_energy(s, X) and type(gs) is type(s)
    np.testing.assert_allclose(_fields(gs), 2.5 * _fd_gradient(spring_energy, s, X), rtol=1e-6)
    assert pullback.arguments[0].k == s.k


def test_vjp_inside_njit_code_is_refused():
    @numba.njit
    def inside(s, x):
        return moonlite.vjp(spring_energy, s, x)[0]

    with pytest.raises(UnsupportedError, match="vjp inside njit code with a jitclass or structref "
                                               "instance"):
        inside(_spring(), X)


def test_an_array_field_written_by_the_kernel():
    inflow = np.array([1.0, 0.5, 2.0, 0.0])
    r = Reservoir(0.3, 4)
    g = moonlite.grad(drain)(r, inflow)
    # grad runs the kernel on private copies of what it writes, as for array arguments
    np.testing.assert_array_equal(r.store, np.zeros(4))

    def at(rate, store):
        fresh = Reservoir(rate, 4)
        fresh.store[:] = store
        return drain(fresh, inflow)

    start = np.zeros(4)
    fd_rate = (at(0.3 + H, start) - at(0.3 - H, start)) / (2 * H)
    np.testing.assert_allclose(g.rate, fd_rate, rtol=1e-6)
    fd_store = [(at(0.3, start + H * e) - at(0.3, start - H * e)) / (2 * H) for e in np.eye(4)]
    np.testing.assert_allclose(g.store, fd_store, rtol=1e-6, atol=1e-9)
    # vjp leaves what the kernel leaves in the caller's arrays, as after drain(r, inflow)
    out, pullback = moonlite.vjp(drain, r, inflow)
    primal = Reservoir(0.3, 4)
    assert out == drain(primal, inflow)
    np.testing.assert_allclose(r.store, primal.store)
    np.testing.assert_allclose(pullback(1.0)[0].rate, fd_rate, rtol=1e-6)


@jitclass([("k", numba.float64), ("idx", numba.int64[:]), ("on", numba.boolean),
           ("shift", numba.types.UniTuple(numba.float64, 2))])
class Selection:
    def __init__(self, k, idx, on, shift):
        self.k = k
        self.idx = idx
        self.on = on
        self.shift = shift


@numba.njit
def selected_energy(p, x):
    s = 0.0
    for i in p.idx:
        s += p.k * x[i] ** 2 + p.shift[0] * x[i] - p.shift[1]
    return s if p.on else -s


def test_fields_of_every_kind():
    # a tuple field carries derivatives; an int array and a bool come back zero
    p, x = Selection(2.0, np.array([0, 2]), True, (0.5, 0.25)), np.array([1.0, 2.0, 3.0])
    g = moonlite.grad(selected_energy)(p, x)
    np.testing.assert_array_equal(g.idx, [0, 0])
    assert g.on is False

    def at(k, shift):
        return selected_energy(Selection(k, p.idx, True, shift), x)

    np.testing.assert_allclose(g.k, (at(2.0 + H, p.shift) - at(2.0 - H, p.shift)) / (2 * H),
                               rtol=1e-6)
    fd = [(at(2.0, (0.5 + H, 0.25)) - at(2.0, (0.5 - H, 0.25))) / (2 * H),
          (at(2.0, (0.5, 0.25 + H)) - at(2.0, (0.5, 0.25 - H))) / (2 * H)]
    np.testing.assert_allclose(g.shift, fd, rtol=1e-6)


@jitclass([("spring", CubicSpring.class_type.instance_type), ("m", numba.float64)])
class Mass:
    def __init__(self, spring, m):
        self.spring = spring
        self.m = m


@numba.njit
def mass_energy(body, x):
    return body.m * x[0] ** 2 + body.spring.k * x[1] ** 2


@jitclass([("n", numba.int64)])
class Steps:
    def __init__(self, n):
        self.n = n


@numba.njit
def stepped(cfg, x):
    return np.sum(x) * cfg.n


def test_what_is_refused_is_named():
    with pytest.raises(UnsupportedError, match="whose field 'spring' holds"):
        moonlite.grad(mass_energy)(Mass(_spring(), 1.0), X)
    np.testing.assert_allclose(moonlite.grad(mass_energy, argnums=1)(Mass(_spring(), 1.0), X),
                               [1.4, -1.6, 0.0])  # an instance read as a constant
    _, pullback = moonlite.vjp(mass_energy, Mass(_spring(), 1.0), X)
    assert pullback(1.0)[0] is None  # vjp reads it as a constant too, as an int argument
    with pytest.raises(ArgumentError, match="instance without float fields"):
        moonlite.grad(stepped)(Steps(3), X)
    with pytest.raises(ArgumentError, match="Hessians exist for float scalars"):
        moonlite.hessian(spring_energy)(_spring(), X)
    with pytest.raises(ArgumentError, match="must be an instance of the same class"):
        moonlite.jvp(spring_energy, (_spring(), X), (1.0, X))


# a radiative-transfer model held in a jitclass, as TARDIS's numba mode keeps its shells
# (velocities at the shell boundaries, the time since explosion, electron densities)
@jitclass([("v_inner", numba.float64[:]), ("v_outer", numba.float64[:]),
           ("time_explosion", numba.float64), ("electron_density", numba.float64[:]),
           ("n_shells", numba.int64)])
class ShellModel:
    def __init__(self, v_inner, v_outer, time_explosion, electron_density):
        self.v_inner = v_inner
        self.v_outer = v_outer
        self.time_explosion = time_explosion
        self.electron_density = electron_density
        self.n_shells = v_inner.shape[0]

    def radius(self, v):
        return v * self.time_explosion  # homologous expansion


SIGMA_THOMSON = 6.652e-25


@numba.njit
def escape_probability(model, mu):
    """exp(-tau) of a packet leaving the inner boundary along direction cosine `mu` through
    every shell (electron scattering only), averaged over the directions in `mu`."""
    total = 0.0
    for m in mu:
        tau = 0.0
        for i in range(model.n_shells):
            r_in, r_out = model.radius(model.v_inner[i]), model.radius(model.v_outer[i])
            r0 = model.radius(model.v_inner[0])
            b = r0 * np.sqrt(1.0 - m * m)  # impact parameter of the straight path
            path = np.sqrt(r_out ** 2 - b * b) - np.sqrt(max(r_in ** 2 - b * b, 0.0))
            tau += SIGMA_THOMSON * model.electron_density[i] * path
        total += np.exp(-tau)
    return total / mu.shape[0]


def test_a_shell_model_from_a_radiative_transfer_code():
    v = np.linspace(1.1e9, 2.0e9, 5)
    model = ShellModel(v[:-1].copy(), v[1:].copy(), 1.3e6, np.array([8e8, 5e8, 3e8, 1e8]))
    mu = np.array([0.2, 0.6, 0.95])
    g = moonlite.grad(escape_probability)(model, mu)

    def at(t_exp, density):
        return escape_probability(ShellModel(model.v_inner, model.v_outer, t_exp, density), mu)

    h = 1e-6 * model.time_explosion
    fd_t = (at(model.time_explosion + h, model.electron_density)
            - at(model.time_explosion - h, model.electron_density)) / (2 * h)
    np.testing.assert_allclose(g.time_explosion, fd_t, rtol=1e-5)
    d = model.electron_density
    fd_n = [(at(model.time_explosion, d + 1e-3 * d[i] * e) - at(model.time_explosion,
                                                               d - 1e-3 * d[i] * e))
            / (2e-3 * d[i]) for i, e in enumerate(np.eye(4))]
    np.testing.assert_allclose(g.electron_density, fd_n, rtol=1e-5)
    assert g.n_shells == 0
    # the same derivative along time_explosion from forward mode
    direction = ShellModel(np.zeros(4), np.zeros(4), 1.0, np.zeros(4))
    _, dout = moonlite.jvp(escape_probability, (model, mu), (direction, np.zeros(3)))
    np.testing.assert_allclose(dout, fd_t, rtol=1e-5)


# --- structref arguments: the same flat form (api_instances.py) --------------------------------

@structref.register
class SmootherType(numba.types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, numba.types.unliteral(t)) for name, t in fields)


class Smoother(structref.StructRefProxy):
    """An exponential smoother's level, its rate, a window of weights and a step count: a
    structref with no Python properties (numba's proxies need none)."""

    def __new__(cls, level, rate, weights, steps):
        return structref.StructRefProxy.__new__(cls, level, rate, weights, steps)


structref.define_proxy(Smoother, SmootherType, ["level", "rate", "weights", "steps"])


@numba.njit
def _smoother_fields(s):
    return s.level, s.rate, s.weights.copy(), s.steps


@numba.njit
def smoothed_error(s, ys):
    """Squared one-step errors of a smoother that advances its own level and step count (the
    fields of the structref it is given: written, as numba leaves them)."""
    err = 0.0
    for i in range(ys.shape[0]):
        guess = s.level + s.weights[i % s.weights.shape[0]] * s.rate
        err += (ys[i] - guess) ** 2
        s.level += s.rate * (ys[i] - s.level)
        s.steps += 1
    return err


def _smoother(level=0.3, rate=0.4, weights=(0.5, -0.2)):
    return Smoother(level, rate, np.array(weights), 0)


YS = np.array([0.9, 0.1, 0.6, 0.4])


def test_a_structref_argument_in_every_mode():
    check_rule(smoothed_error, _smoother(), YS, second_order=True)


def test_grad_of_a_structref_is_a_structref_of_gradients():
    s = _smoother()
    gs, gy = moonlite.grad(smoothed_error, argnums=(0, 1))(s, YS)
    level, rate, weights, steps = _smoother_fields(gs)
    assert type(gs) is Smoother and steps == 0  # an int field: no derivative
    base = np.array([0.3, 0.4, 0.5, -0.2])
    fd = []
    for e in np.eye(4):
        def at(t):
            v = base + t * e
            return smoothed_error(Smoother(v[0], v[1], v[2:].copy(), 0), YS)
        fd.append((at(H) - at(-H)) / (2 * H))
    np.testing.assert_allclose([level, rate, *weights], fd, rtol=1e-6)
    # differentiated with respect to, the instance is left as it was (api_instances.py)
    assert _smoother_fields(s)[0] == 0.3 and _smoother_fields(s)[3] == 0


# --- an instance inside a tuple argument: the caller's object, held fixed ------------------

@numba.njit
def scaled_spring_energy(config, x):
    """A (model, scale) configuration tuple, the way solvers bundle settings."""
    spring, scale, offset = config
    return scale * spring_energy(spring, x - offset) + np.sum(offset ** 2) * x[0]


@numba.njit
def nested_config_energy(config, x):
    (spring, scale), weights = config
    return scale * spring_energy(spring, x * weights) + np.sum(weights * x ** 3)


def _config():
    return (_spring(), 1.3, np.array([0.1, -0.2, 0.3]))


def test_an_instance_in_a_tuple_argument_is_held_fixed_in_every_mode():
    """Refused before (reverse mode said a value was put into the instance): its tangent and
    gradient are None, the tuple's other entries are differentiated."""
    check_rule(scaled_spring_energy, _config(), X, second_order=True)
    nested = ((_spring(), 0.7), np.array([1.0, 0.5, 2.0]))
    check_rule(nested_config_energy, nested, X)  # reverse mode refused nested tuples before


def test_grad_of_a_tuple_holding_an_instance():
    config = _config()
    g_config, g_x = moonlite.grad(scaled_spring_energy, argnums=(0, 1))(config, X)
    assert g_config[0] is None  # the instance: held fixed
    base = scaled_spring_energy(config, X)
    shifted = scaled_spring_energy((config[0], config[1] + H, config[2]), X)
    assert g_config[1] == pytest.approx((shifted - base) / H, rel=1e-4)
    _, pullback = moonlite.vjp(scaled_spring_energy, config, X)
    assert pullback(1.0)[0][0] is None


def test_a_tangent_for_an_instance_in_a_tuple_is_refused():
    config = _config()
    with pytest.raises(ArgumentError, match="carries no tangent; pass None"):
        moonlite.jvp(scaled_spring_energy, (config, X),
                     ((_spring(), 1.0, np.zeros(3)), np.ones(3)))


# --- kernels returning an instance (api_instance_outputs.py) ---------------------------------

@jitclass([("x", numba.float64[:]), ("v", numba.float64[:]), ("t", numba.float64),
           ("steps", numba.int64), ("label", numba.types.unicode_type)])
class Trajectory:
    def __init__(self, x, v, t, steps):
        self.x, self.v, self.t, self.steps = x, v, t, steps
        self.label = "pendulum"


@numba.njit
def pendulum_step(s, k, dt):
    """One symplectic Euler step returning the new state, the way jitclass codes write it."""
    v = s.v - dt * k * np.sin(s.x)
    return Trajectory(s.x + dt * v, v, s.t + dt, s.steps + 1)


@numba.njit
def pendulum_run(x0, k, n):
    s = Trajectory(x0.copy(), np.zeros_like(x0), 0.0, 0)
    for _ in range(n):
        s = pendulum_step(s, k, 0.05)
    return s


@numba.njit
def reset_speed(s, speed):
    """A field of the argument written, and the argument returned."""
    s.v = s.v * 0.0 + speed
    return s


def _trajectory():
    return Trajectory(np.array([0.3, -0.8]), np.array([0.1, 0.4]), 0.0, 0)


@pytest.mark.parametrize("kernel, make_args", [
    (pendulum_step, lambda: (_trajectory(), 1.7, 0.1)),
    (pendulum_run, lambda: (np.array([0.3, -0.8]), 1.7, 5)),
    (reset_speed, lambda: (_trajectory(), 0.6)),
], ids=["step", "run", "written_argument"])
def test_a_returned_instance_in_every_mode(kernel, make_args):
    check_rule(kernel, *make_args())


def test_the_tangent_of_a_returned_instance_is_an_instance():
    x0 = np.array([0.3, -0.8])
    out, tangent = moonlite.jvp(pendulum_run, (x0, 1.7, 5), (np.zeros(2), 1.0, None))
    assert type(out) is type(tangent) and out.steps == 5 and out.label == "pendulum"
    assert tangent.steps == 0 and tangent.t == 0.0  # (t does not depend on k)
    h = 1e-6
    fd = (pendulum_run(x0, 1.7 + h, 5).x - pendulum_run(x0, 1.7 - h, 5).x) / (2 * h)
    np.testing.assert_allclose(tangent.x, fd, rtol=1e-6)


def test_the_pullback_of_a_returned_instance_takes_an_instance():
    s = _trajectory()
    out, pullback = moonlite.vjp(pendulum_step, s, 1.7, 0.1)
    assert out.steps == 1
    with pytest.raises(ArgumentError, match="must be an instance of the same class"):
        pullback(np.ones(2))
    _, pullback = moonlite.vjp(pendulum_step, s, 1.7, 0.1)
    cotangent = Trajectory(np.ones(2), np.zeros(2), 0.0, 0)
    ds, dk, ddt = pullback(cotangent)
    h = 1e-6
    fd = (np.sum(pendulum_step(s, 1.7 + h, 0.1).x)
          - np.sum(pendulum_step(s, 1.7 - h, 0.1).x)) / (2 * h)
    assert dk == pytest.approx(fd, rel=1e-6)
    assert type(ds) is type(s)


@numba.njit
def step_and_energy(s, k, dt):
    """A step returning the new state and its energy, `return state, loss` style."""
    n = pendulum_step(s, k, dt)
    e = 0.5 * np.sum(n.v ** 2) + k * np.sum(1.0 - np.cos(n.x))
    return n, e


def test_a_tuple_holding_a_returned_instance_in_every_mode():
    check_rule(step_and_energy, _trajectory(), 1.7, 0.1)


def test_jvp_and_vjp_of_a_tuple_holding_an_instance():
    s, h = _trajectory(), 1e-6
    (state, energy), (dstate, denergy) = moonlite.jvp(step_and_energy, (s, 1.7, 0.1),
                                                      (None, 1.0, 0.0))
    assert type(state) is type(dstate) and state.steps == 1
    fd = (step_and_energy(s, 1.7 + h, 0.1)[1] - step_and_energy(s, 1.7 - h, 0.1)[1]) / (2 * h)
    assert denergy == pytest.approx(fd, rel=1e-6)
    _, pullback = moonlite.vjp(step_and_energy, s, 1.7, 0.1)
    with pytest.raises(ArgumentError, match="a tuple of 2 entries"):
        pullback(1.0)
    _, pullback = moonlite.vjp(step_and_energy, s, 1.7, 0.1)
    _, dk, _ = pullback((Trajectory(np.zeros(2), np.zeros(2), 0.0, 0), 1.0))
    assert dk == pytest.approx(fd, rel=1e-6)


# --- inside njit code: jvp gives instances, vjp is refused by name ----------------------------

@numba.njit
def _pendulum_run_jvp_in_njit(x0, k, dx0, dk):
    return moonlite.jvp(pendulum_run, (x0, k, 5), (dx0, dk, None))


def test_jvp_inside_njit_code_gives_instances():
    x0, dx0 = np.array([0.3, -0.8]), np.array([0.2, 0.5])
    out, tangent = _pendulum_run_jvp_in_njit(x0, 1.7, dx0, 1.0)
    assert type(out) is type(tangent) is type(_trajectory())
    assert out.steps == 5 and out.label == "pendulum" and tangent.label == "pendulum"
    assert tangent.steps == 0 and tangent.t == 0.0
    np.testing.assert_array_equal(out.x, pendulum_run(x0, 1.7, 5).x)

    def moved(h):
        return pendulum_run(x0 + h * dx0, 1.7 + h, 5)

    for name in ("x", "v"):
        fd = (getattr(moved(H), name) - getattr(moved(-H), name)) / (2 * H)
        np.testing.assert_allclose(getattr(tangent, name), fd, rtol=1e-6, atol=1e-10)


@numba.njit
def _step_and_energy_jvp_in_njit(s, k, dk):
    return moonlite.jvp(step_and_energy, (s, k, 0.1), (None, dk, 0.0))


def test_jvp_inside_njit_code_of_a_tuple_holding_an_instance():
    s = _trajectory()
    (state, energy), (dstate, denergy) = _step_and_energy_jvp_in_njit(s, 1.7, 1.0)
    assert energy == step_and_energy(s, 1.7, 0.1)[1] and type(dstate) is type(s)
    fd = (step_and_energy(s, 1.7 + H, 0.1)[1] - step_and_energy(s, 1.7 - H, 0.1)[1]) / (2 * H)
    assert denergy == pytest.approx(fd, rel=1e-6)
    fd_v = (step_and_energy(s, 1.7 + H, 0.1)[0].v - step_and_energy(s, 1.7 - H, 0.1)[0].v) / (2 * H)
    np.testing.assert_allclose(dstate.v, fd_v, rtol=1e-6)


@numba.njit
def smoother_after(level, rate, weights):
    """A structref built and returned by the kernel."""
    return Smoother(level * rate, rate, weights * level, 3)


@numba.njit
def _smoother_jvp_in_njit(level, rate, weights, dlevel):
    out, tangent = moonlite.jvp(smoother_after, (level, rate, weights),
                                (dlevel, 0.0, np.zeros_like(weights)))
    return tangent.level, tangent.weights, tangent.steps


def test_jvp_inside_njit_code_of_a_kernel_returning_a_structref():
    weights = np.array([0.5, 1.5])
    dlevel, dweights, steps = _smoother_jvp_in_njit(2.0, 0.3, weights, 1.0)
    up, down = (_smoother_fields(smoother_after(2.0 + h, 0.3, weights)) for h in (H, -H))
    assert dlevel == pytest.approx((up[0] - down[0]) / (2 * H), rel=1e-6) and steps == 0
    np.testing.assert_allclose(dweights, (up[2] - down[2]) / (2 * H), rtol=1e-6)


@numba.njit
def _pendulum_run_vjp_in_njit(x0, k, dx):
    out, pullback = moonlite.vjp(pendulum_run, x0, k, 5)
    return out, pullback(Trajectory(dx, np.zeros_like(dx), 1.0, 7))


def test_vjp_inside_njit_code_takes_an_instance_as_the_cotangent():
    x0, dx = np.array([0.3, -0.8]), np.array([1.0, -2.0])
    out, (gx0, gk, gn) = _pendulum_run_vjp_in_njit(x0, 1.7, dx)
    assert type(out) is type(_trajectory()) and out.steps == 5 and gn is None

    def weighted(x0, k):  # the cotangent's float fields: dx . x + 1.0 * t (its ints unused)
        s = pendulum_run(x0, k, 5)
        return np.dot(dx, s.x) + s.t

    assert gk == pytest.approx((weighted(x0, 1.7 + H) - weighted(x0, 1.7 - H)) / (2 * H),
                               rel=1e-6)
    fd = [(weighted(x0 + H * e, 1.7) - weighted(x0 - H * e, 1.7)) / (2 * H) for e in np.eye(2)]
    np.testing.assert_allclose(gx0, fd, rtol=1e-6)


@numba.njit
def run_and_energy(x0, k):
    """A tuple holding a returned instance, from plain arguments."""
    s = pendulum_run(x0, k, 3)
    return s, 0.5 * np.sum(s.v ** 2) + k * np.sum(1.0 - np.cos(s.x))


@numba.njit
def _run_and_energy_vjp_in_njit(x0, k):
    (s, e), pullback = moonlite.vjp(run_and_energy, x0, k)
    return e, pullback((Trajectory(np.zeros(2), np.zeros(2), 0.0, 0), 1.0))


def test_vjp_inside_njit_code_of_a_tuple_holding_an_instance():
    x0 = np.array([0.3, -0.8])
    e, (gx0, gk) = _run_and_energy_vjp_in_njit(x0, 1.7)
    assert e == run_and_energy(x0, 1.7)[1]
    fd = (run_and_energy(x0, 1.7 + H)[1] - run_and_energy(x0, 1.7 - H)[1]) / (2 * H)
    assert gk == pytest.approx(fd, rel=1e-6)
    fd_x = [(run_and_energy(x0 + H * d, 1.7)[1] - run_and_energy(x0 - H * d, 1.7)[1]) / (2 * H)
            for d in np.eye(2)]
    np.testing.assert_allclose(gx0, fd_x, rtol=1e-6)


@numba.njit
def _an_array_as_the_cotangent_of_an_instance(x0, k):
    _, pullback = moonlite.vjp(pendulum_run, x0, k, 5)
    return pullback(x0)


def test_a_cotangent_of_another_type_than_the_instance_is_named():
    with pytest.raises(numba.TypingError, match="must be an instance of Trajectory like the "
                                                "output"):
        _an_array_as_the_cotangent_of_an_instance(np.array([0.3, -0.8]), 1.7)
