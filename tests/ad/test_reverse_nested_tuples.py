"""Tuples of tuples in reverse mode: parameters kept as (weights, bias) pairs, states as
((position, momentum), time), coefficients as pairs of pairs. Reverse mode keeps a nested
tuple's adjoints and shadows per leaf (`ad/reverse/types.py: leaves`), as a flat tuple's per
entry; it refused them before. Each kernel is checked in every mode against finite
differences (`moonlite.testing.check_rule`)."""

from collections import namedtuple

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule
from tests.helpers import central_differences

RNG = np.random.default_rng(7)


@numba.njit
def mlp_loss(layers, x, y):
    """A small network whose parameters are a tuple of (weights, bias) pairs, looped over."""
    h = x
    for W, b in layers:
        h = np.tanh(W @ h + b)
    return 0.5 * np.sum((h - y) ** 2)


def _layers():
    return ((RNG.standard_normal((4, 3)), RNG.standard_normal(4)),
            (RNG.standard_normal((2, 4)), RNG.standard_normal(2)))


def test_a_tuple_of_weight_bias_pairs_looped_over():
    check_rule(mlp_loss, _layers(), RNG.standard_normal(3), RNG.standard_normal(2),
               second_order=True)


def test_the_gradient_of_a_tuple_of_pairs_is_a_tuple_of_pairs():
    layers, x, y = _layers(), RNG.standard_normal(3), RNG.standard_normal(2)
    g = moonlite.grad(mlp_loss)(layers, x, y)
    assert len(g) == 2 and all(len(pair) == 2 for pair in g)

    def loss_of_b2(b2):
        return mlp_loss((layers[0], (layers[1][0], b2)), x, y)
    np.testing.assert_allclose(g[1][1], central_differences(loss_of_b2, (layers[1][1],)),
                               rtol=1e-6, atol=1e-9)


@numba.njit
def unpacked_mlp_loss(params, x):
    """The pairs unpacked by name, as a two-layer model is often written."""
    (W1, b1), (W2, b2) = params
    h = np.tanh(W1 @ x + b1)
    return np.sum(np.tanh(W2 @ h + b2) ** 2)


def test_pairs_unpacked_by_name():
    check_rule(unpacked_mlp_loss, _layers(), RNG.standard_normal(3), second_order=True, vjp=False)


@numba.njit
def _dense(layer, h):
    W, b = layer
    return np.tanh(W @ h + b)


@numba.njit
def layers_through_helpers(W1, b1, W2, b2, x):
    """Pairs built in the kernel, handed to a helper one by one and as a list literal."""
    net = ((W1, b1), (W2, b2))
    h = _dense(net[0], x)
    return np.sum(_dense(net[1], h)) + np.sum(_dense(net[0], x) ** 2)


def test_pairs_built_in_the_kernel_and_given_to_a_helper():
    (W1, b1), (W2, b2) = _layers()
    check_rule(layers_through_helpers, W1, b1, W2, b2, RNG.standard_normal(3),
               second_order=True)


@numba.njit
def leapfrog_energy(state, dt, n):
    """A state ((position, momentum), time) carried through a leapfrog integrator."""
    (q, p), t = state
    for _ in range(n):
        p = p - 0.5 * dt * np.sin(q)
        q = q + dt * p
        p = p - 0.5 * dt * np.sin(q)
        t = t + dt
        state = ((q, p), t)
    (q, p), t = state
    return np.sum(0.5 * p ** 2 - np.cos(q)) * t


def test_a_nested_state_carried_around_a_loop():
    state = ((RNG.standard_normal(3), RNG.standard_normal(3)), 0.3)
    check_rule(leapfrog_energy, state, 0.05, 6, fixed=(2,), second_order=True, vjp=False)


@numba.njit
def piecewise_poly(coeffs, x):
    """Pairs of float coefficients, picked by an index known only at run time."""
    total = 0.0
    for i in range(x.size):
        a, b = coeffs[i % 3]
        total += a * x[i] + b * x[i] ** 2
    return total


def test_pairs_of_floats_picked_at_run_time():
    coeffs = ((0.5, -1.0), (2.0, 0.25), (-0.75, 1.5))
    check_rule(piecewise_poly, coeffs, RNG.standard_normal(7), second_order=True)


@numba.njit
def pairs_built_from_an_array(c, x):
    """Pairs of floats built in the kernel from an array, then picked at run time."""
    coeffs = ((c[0], c[1]), (c[2], c[3] * c[0]))
    total = 0.0
    for i in range(x.size):
        a, b = coeffs[i % 2]
        total += a * np.sin(x[i]) + b * x[i] ** 2
    return total


def test_pairs_of_floats_built_in_the_kernel():
    check_rule(pairs_built_from_an_array, RNG.standard_normal(4), RNG.standard_normal(5),
               second_order=True, vjp=False)


Layer = namedtuple("Layer", ["W", "b"])
Model = namedtuple("Model", ["hidden", "out", "scale"])


@numba.njit
def model_loss(model, x):
    """A namedtuple of namedtuples, read by field name."""
    h = np.tanh(model.hidden.W @ x + model.hidden.b)
    return model.scale * np.sum((model.out.W @ h + model.out.b) ** 2)


def test_a_namedtuple_of_namedtuples():
    (W1, b1), (W2, b2) = _layers()
    model = Model(Layer(W1, b1), Layer(W2, b2), 0.8)
    check_rule(model_loss, model, RNG.standard_normal(3), second_order=True)


@numba.njit
def mixed_pairs(spec, x):
    """Inner tuples mixing an array, an int and a float: only the floats carry derivatives."""
    (w, k), (s, m) = spec
    return s * np.sum(w[:k] * x[:k]) + m * np.sum(x)


def test_inner_tuples_mixing_ints_and_floats():
    spec = ((RNG.standard_normal(4), 3), (1.7, 2))
    check_rule(mixed_pairs, spec, RNG.standard_normal(4))


@numba.njit
def energy_and_parts(x, k):
    """A loss beside its parts: a tuple holding a tuple of a float and an array, and an int."""
    kinetic = 0.5 * np.sum(x[:k] ** 2)
    forces = -np.sin(x)
    return kinetic + np.sum(np.cos(x)), (kinetic, forces * x[0]), k


Parts = namedtuple("Parts", ["total", "terms"])


@numba.njit
def named_parts(x):
    """A namedtuple holding a tuple, inside a tuple."""
    terms = (x[0] * x[1], np.tanh(x))
    return Parts(np.sum(x ** 2), terms), x[2]


def test_a_nested_tuple_output_in_every_mode():
    check_rule(energy_and_parts, RNG.standard_normal(4), 2, fixed=(1,))
    check_rule(named_parts, RNG.standard_normal(3))


def test_vjp_gives_back_the_namedtuples_of_a_nested_output():
    x = RNG.standard_normal(3)
    out, pullback = moonlite.vjp(named_parts, x)
    assert isinstance(out[0], Parts) and out[0].terms[0] == x[0] * x[1]
    (g,) = pullback(((1.0, (0.0, np.zeros(3))), 0.0))
    np.testing.assert_allclose(g, 2 * x)


@numba.njit
def _vjp_inside(x, w):
    out, pullback = moonlite.vjp(named_parts, x)
    (g,) = pullback(((0.0, (1.0, w)), 2.0))
    return out[0].total, g


def test_a_nested_output_through_vjp_inside_njit_code():
    x, w = RNG.standard_normal(3), RNG.standard_normal(3)
    total, g = _vjp_inside(x, w)
    assert total == pytest.approx(np.sum(x ** 2))

    def weighted(x):
        (_, (prod, th)), third = named_parts(x)
        return prod + np.dot(w, th) + 2.0 * third
    np.testing.assert_allclose(g, central_differences(weighted, (x,)), rtol=1e-6, atol=1e-9)
