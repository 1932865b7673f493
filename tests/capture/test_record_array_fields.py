"""Records whose fields hold arrays (`('pos', 'f8', (3,))`, numba's NestedArray): capture reads
`r.pos` as `array_field('pos')(r)` (`rules/records.py`), an ordinary array viewing the record's
bytes, so reads and writes through it are array reads and writes in every mode; reverse mode
gives it the same view of the record's shadow. Every mode against finite differences (the rule
checker, second order included), the captured IR, the API's structured gradients, and what
reverse mode refuses."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.api import has_float_fields
from moonlite.ir import ops
from moonlite.ir.types import ArrayType, OpaqueType, float64, from_numba, is_float_record
from moonlite.rules.records import array_field
from moonlite.testing import check_rule

ATOM = np.dtype([("m", "f8"), ("pos", "f8", (3,)), ("vel", "f8", (3,)), ("kind", "i8")])
FRAME = np.dtype([("R", "f8", (2, 2)), ("t", "f8", (2,)), ("on", "?")])  # 49 bytes: unaligned


def _atoms(n=4, seed=0):
    rng = np.random.default_rng(seed)
    p = np.zeros(n, ATOM)
    p["m"] = rng.uniform(1, 2, n)
    p["pos"] = rng.uniform(-1, 1, (n, 3)) + 2.0 * np.arange(n)[:, None]
    p["vel"] = rng.uniform(-1, 1, (n, 3))
    return p


def _frames():
    rng = np.random.default_rng(1)
    f = np.zeros(3, FRAME)
    f["R"], f["t"] = rng.normal(size=(3, 2, 2)), rng.normal(size=(3, 2))
    f["on"] = [True, False, True]
    return f


@numba.njit
def pair_energy(p, eps):
    e = 0.0
    for i in range(p.shape[0]):
        for j in range(i + 1, p.shape[0]):
            d = p[i].pos - p[j].pos
            s6 = (1.0 / np.sum(d * d)) ** 3
            e += 4.0 * eps * (s6 * s6 - s6)
    return e


@numba.njit
def kinetic(p):
    k = 0.0
    for a in p:
        k += 0.5 * a.m * (a.vel[0] ** 2 + a.vel[1] ** 2 + a["vel"][2] ** 2)
    return k


@numba.njit
def drift(atom, dt):
    atom.pos[:] += dt * atom.vel


@numba.njit
def kicked_and_drifted(p, k, dt):
    for _ in range(3):
        for i in range(p.shape[0]):
            for c in range(3):
                p[i].vel[c] -= dt * k * p[i].pos[c] / p[i].m
            drift(p[i], dt)  # a helper writing the array field of the record it is given
    return np.sum(p["pos"] ** 2) + kinetic(p)


@numba.njit
def fields_copied(p, w):
    for i in range(1, p.shape[0]):
        p[i].vel = p[i - 1].pos  # a whole array field assigned (numba copies it)
        p[i].pos[:] = w * p[i].pos
    return np.sum(p["vel"] * p["pos"])


@numba.njit
def affine_frames(f, x):
    s = 0.0
    for i in range(f.shape[0]):
        y = f[i].R @ x + f[i]["t"]
        if f[i].on:
            s += np.sum(y ** 2)
    return s


@numba.njit
def of_a_record_argument(a, x):
    return a.m * np.sum(a.pos * x) + a["vel"][2] ** 2


@numba.njit
def allocated_here(x):
    p = np.zeros(x.shape[0] // 3, ATOM)
    for i in range(p.shape[0]):
        p[i].pos[:] = x[3 * i:3 * i + 3]
        p[i].m = 1.0 + x[3 * i] ** 2
    return np.sum(p["m"] * np.sum(p["pos"] ** 2, axis=1))


@numba.njit
def grid_of_atoms(g, s):
    for i in range(g.shape[0]):
        for j in range(g.shape[1]):
            g[i, j].pos[1] = s * g[i, j].pos[0] + g[i, j]["vel"][2] ** 2
    return np.sum(g["pos"] ** 2)


CASES = {
    "pairs of 3-vector fields": (pair_energy, lambda: (_atoms(), 0.7)),
    "an entry given to a helper that writes its array field": (
        kicked_and_drifted, lambda: (_atoms(), 2.0, 0.05)),
    "whole array fields assigned": (fields_copied, lambda: (_atoms(), 0.3)),
    "2-D array fields of records that are not aligned": (
        affine_frames, lambda: (_frames(), np.array([0.3, -0.8]))),
    "a record argument": (of_a_record_argument, lambda: (_atoms()[1], np.array([1.0, 2.0, 3.0]))),
    "a structured array the kernel allocates": (allocated_here,
                                                lambda: (np.linspace(0.1, 1.0, 6),)),
    "a 2-D structured array": (grid_of_atoms, lambda: (_atoms(6).reshape(2, 3), 0.7)),
}


@pytest.mark.parametrize("name", CASES)
def test_in_every_mode(name):
    kernel, make_args = CASES[name]
    check_rule(kernel, *make_args(), second_order=True)


def test_an_array_field_is_read_as_an_ordinary_array():
    fn = moonlite.capture(pair_energy, _atoms(), 0.7)
    moonlite.verify(fn)
    reads = [op for op in fn.ops() if isinstance(op, ops.Call) and op.callee is array_field("pos")]
    assert len(reads) == 2 and all(op.result.type == ArrayType(float64, 1, "C") for op in reads)
    values = [op.result for op in fn.ops() if op.result is not None]
    assert not any(isinstance(v.type, OpaqueType)
                   and isinstance(v.type.numba_type, numba.types.NestedArray) for v in values)
    assert from_numba(numba.typeof(_frames()[0]).typeof("R")) == ArrayType(float64, 2, "C")


def test_gradients_and_tangents_are_structured_arrays_of_the_same_dtype():
    @numba.njit
    def weighted_squares(p):
        return np.sum(p["m"] * np.sum(p["pos"] ** 2, axis=1))

    p = _atoms()
    g = moonlite.grad(weighted_squares)(p)
    assert g.dtype == ATOM and g.shape == p.shape
    np.testing.assert_allclose(g["pos"], 2.0 * p["m"][:, None] * p["pos"])
    np.testing.assert_allclose(g["m"], np.sum(p["pos"] ** 2, axis=1))
    assert not g["vel"].any()
    tangent = np.zeros_like(p)
    tangent["pos"][2, 1] = 1.0
    _, dout = moonlite.jvp(weighted_squares, (p,), (tangent,))
    assert dout == pytest.approx(2.0 * p["m"][2] * p["pos"][2, 1])


@numba.njit
def record_chosen_by_a_branch(p, w):
    s = 0.0
    for i in range(p.shape[0]):
        r = p[i] if p[i].m > 1.5 else p[0]
        s += w * np.sum(r.pos * r.vel)
    return s


def test_a_record_chosen_by_a_branch_in_every_mode():
    """The phi of records is a phi of indices (capture/record_phis.py), so reverse mode
    follows the array fields of the entry chosen."""
    check_rule(record_chosen_by_a_branch, _atoms(), 0.3, second_order=True, vjp=False)


def test_which_dtypes_carry_derivatives():
    nested_record = np.dtype([("pos", [("x", "f8"), ("y", "f8")]), ("m", "f8")])
    assert has_float_fields(ATOM) and has_float_fields(FRAME)
    assert has_float_fields(nested_record)  # a field that is itself a record of floats
    assert not has_float_fields(np.dtype([("pos", [("n", "i8")]), ("k", "i8")]))
    assert not has_float_fields(np.dtype([("n", "i8", (3,))]))
    assert is_float_record(from_numba(numba.typeof(_atoms()[0])))
    assert is_float_record(from_numba(numba.from_dtype(nested_record)))


@numba.njit
def argument_array_fields_written(a, dt):
    a.pos[:] += dt * a.vel
    a.vel[1] = a.m * a.pos[0]
    return np.sum(a.pos ** 2) + np.sum(a.vel)


def test_array_fields_of_a_record_argument_written_in_every_mode():
    check_rule(argument_array_fields_written, _atoms()[1], 0.1, second_order=True)
