"""Structured arrays whose fields are records (`('pos', [('x', 'f8'), ('y', 'f8')])`): a nested
record read as `p[i].pos` is the entry of the field's view (`field_view('pos')(p)[i]`, capture/
record_fields.py), so its fields are read and written like any record's, in every mode; each
kernel is checked by `moonlite.testing.check_rule` against finite differences to second order.
"""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule

POINT = np.dtype([("x", "f8"), ("y", "f8")])
BODY = np.dtype([("pos", POINT), ("vel", POINT), ("m", "f8"), ("id", "i8")])


def _bodies(n: int = 4, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = np.zeros(n, BODY)
    for field in ("pos", "vel"):
        for axis in ("x", "y"):
            p[field][axis] = rng.uniform(-1.0, 1.0, n)
    p["m"] = rng.uniform(0.5, 2.0, n)
    p["id"] = np.arange(n)
    return p


@numba.njit
def kinetic_and_spring(p, k):
    """Kinetic energy plus springs to the origin, nested fields read both ways."""
    e = 0.0
    for i in range(p.shape[0]):
        v = p[i].vel
        e += 0.5 * p[i]["m"] * (v.x * v.x + v["y"] * v["y"])
        e += 0.5 * k * (p[i]["pos"]["x"] ** 2 + p[i].pos.y ** 2)
    return e


@numba.njit
def drift(p, dt):
    """Positions advanced in place through nested fields, then a whole-field view read."""
    for i in range(p.shape[0]):
        p[i].pos.x += dt * p[i].vel.x
        p[i]["pos"]["y"] = p[i]["pos"]["y"] + dt * p[i]["vel"]["y"]
    return np.sum(p["m"] * (p["pos"]["x"] ** 2 + p["pos"]["y"] ** 2))


@numba.njit
def _area(q):
    return q.x * q.y


@numba.njit
def through_a_helper(p):
    """A nested record passed to an njit helper that reads its fields."""
    s = 0.0
    for i in range(p.shape[0]):
        s += _area(p[i].pos) * p[i].m
    return s


@pytest.mark.parametrize("kernel, args", [
    (kinetic_and_spring, (_bodies(), 1.3)),
    (drift, (_bodies(seed=1), 0.1)),
    (through_a_helper, (_bodies(seed=2),)),
], ids=["read", "written", "helper"])
def test_nested_records_in_every_mode(kernel, args):
    check_rule(kernel, *args, second_order=True)


def test_the_gradient_is_a_structured_array_of_the_same_nested_dtype():
    p = _bodies()
    g = moonlite.grad(kinetic_and_spring)(p, 1.3)
    assert g.dtype == BODY
    np.testing.assert_allclose(g["pos"]["x"], 1.3 * p["pos"]["x"])
    np.testing.assert_allclose(g["vel"]["y"], p["m"] * p["vel"]["y"])
    np.testing.assert_allclose(g["m"], 0.5 * (p["vel"]["x"] ** 2 + p["vel"]["y"] ** 2))
    assert not g["id"].any()  # an int field: no derivative


@numba.njit
def single_record(r, k):
    return r.m * (r.pos.x - k) ** 2 + r["vel"]["y"]


def test_a_single_nested_record_argument_in_every_mode():
    r = _bodies()[1]
    check_rule(single_record, r, 0.3, second_order=True, vjp=False)
    g = moonlite.grad(single_record)(r, 0.3)[0]  # a record's gradient: one entry of its dtype
    assert g["pos"]["x"] == pytest.approx(2.0 * r["m"] * (r["pos"]["x"] - 0.3))
    assert g["vel"]["y"] == 1.0 and g["vel"]["x"] == 0.0


@numba.njit
def single_record_written(r, dt):
    r.pos.x += dt * r.vel.x
    r["pos"]["y"] = r.pos.y * r.m + dt
    return r.pos.x * r.pos.y + r.vel.y


def test_a_single_nested_record_argument_written_in_every_mode():
    """The record argument is read through a one-entry view of it (`record_view`), so its
    nested fields are written through views in reverse mode too."""
    check_rule(single_record_written, _bodies()[2], 0.1, second_order=True)
