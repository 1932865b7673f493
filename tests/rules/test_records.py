"""Records and structured arrays carry derivatives in their float fields (rules/records.py): each
mode checked against finite differences by the rule checker (the dot-product identity included),
the helpers' rules on their own, and what is refused (fail closed)."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.errors import ArgumentError, UnsupportedError
from moonlite.rules import lookup_jvp
from moonlite.rules.records import (field_adder, record_holder, records_adder,
                                    record_places, records_empty_like, records_gathered_like,
                                    zero_record_like)
from moonlite.testing import check_jvp, check_rule

SPECIES = np.dtype([("epsilon", "f8"), ("sigma", "f8"), ("charge", "i8")])
SIR = np.dtype([("beta", "f8"), ("gamma", "f8"), ("population", "i8"), ("vaccinated", "?")])


@numba.njit
def lennard_jones(positions, kinds, species):
    """Pair energy with per-species parameters looked up by each particle's kind (mixing rules
    of Lorentz-Berthelot), the way molecular-dynamics kernels keep force-field tables."""
    e = 0.0
    n = positions.shape[0]
    for i in range(n):
        a = species[kinds[i]]
        for j in range(i + 1, n):
            b = species[kinds[j]]
            eps = np.sqrt(a.epsilon * b["epsilon"])
            sig = 0.5 * (a.sigma + b.sigma)
            r = abs(positions[i] - positions[j])
            s6 = (sig / r) ** 6
            e += 4.0 * eps * (s6 * s6 - s6)
    return e


@numba.njit
def sir_final_infected(state, p, days):
    """Forward-Euler SIR model, parameters in one record with an int and a bool field."""
    s, i = state[0], state[1]
    n = float(p.population)
    rate = p.beta * (0.5 if p.vaccinated else 1.0)
    for _ in range(days):
        new = rate * s * i / n
        s, i = s - new, i + new - p["gamma"] * i
    return i


@numba.njit
def grid_conductance(field, cells):
    """A 2-D structured array indexed cells[i, j]['k'] (a groundwater cell table)."""
    total = 0.0
    for i in range(cells.shape[0]):
        for j in range(cells.shape[1]):
            c = cells[i, j]
            total += c["k"] * field[i, j] ** 2 + c.storage * np.sin(field[i, j])
    return total


def _species():
    return np.array([(1.0, 1.0, -1), (0.6, 1.3, 2)], dtype=SPECIES)


def _cells():
    rng = np.random.default_rng(3)
    cells = np.zeros((2, 3), dtype=[("k", "f8"), ("storage", "f8")])
    cells["k"], cells["storage"] = rng.uniform(0.5, 2.0, (2, 3)), rng.uniform(0.1, 1.0, (2, 3))
    return cells


CASES = {
    "species table": (lennard_jones, lambda: (np.array([0.0, 1.1, 2.3, 3.2]),
                                              np.array([0, 1, 1, 0]), _species())),
    "record argument": (sir_final_infected, lambda: (
        np.array([990.0, 10.0]), np.array([(0.3, 0.1, 1000, False)], dtype=SIR)[0], 30)),
    "2-D structured array": (grid_conductance, lambda: (
        np.random.default_rng(4).uniform(-1, 1, (2, 3)), _cells())),
}


@pytest.mark.parametrize("name", CASES)
def test_in_every_mode(name):
    kernel, make_args = CASES[name]
    check_rule(kernel, *make_args(), second_order=True)


def test_the_gradient_of_a_structured_array_is_one_of_the_same_dtype():
    x, kinds, species = CASES["species table"][1]()
    g = moonlite.grad(lennard_jones, argnums=2)(x, kinds, species)
    assert g.dtype == species.dtype and g.shape == species.shape
    assert np.all(g["charge"] == 0)  # int fields of a gradient are unused
    h = 1e-6
    for k in range(species.shape[0]):
        plus, minus = species.copy(), species.copy()
        plus[k]["sigma"] += h
        minus[k]["sigma"] -= h
        fd = (lennard_jones(x, kinds, plus) - lennard_jones(x, kinds, minus)) / (2 * h)
        assert g[k]["sigma"] == pytest.approx(fd, rel=1e-6)


def test_the_gradient_of_a_record_is_a_structured_array_of_one_entry():
    state, p, days = CASES["record argument"][1]()
    g = moonlite.grad(sir_final_infected, argnums=1)(state, p, days)
    assert g.shape == (1,) and g.dtype == p.dtype
    h = 1e-7
    plus, minus = np.array([p]), np.array([p])
    plus[0]["beta"] += h
    minus[0]["beta"] -= h
    fd = (sir_final_infected(state, plus[0], days) - sir_final_infected(state, minus[0], days))
    assert g[0]["beta"] == pytest.approx(fd / (2 * h), rel=1e-5)


def test_a_tangent_must_be_a_record_or_structured_array_of_the_same_dtype():
    x, kinds, species = CASES["species table"][1]()
    with pytest.raises(ArgumentError, match="of the same dtype"):
        moonlite.jvp(lennard_jones, (x, kinds, species), (x, None, np.zeros(2)))
    state, p, days = CASES["record argument"][1]()
    with pytest.raises(ArgumentError, match="of the same dtype"):
        moonlite.jvp(sir_final_infected, (state, p, days), (state, np.zeros(1, SIR), None))


def test_jacobians_and_hessians_refuse_structured_arrays():
    x, kinds, species = CASES["species table"][1]()
    for api in (moonlite.hessian, moonlite.jacfwd, moonlite.jacrev):
        with pytest.raises(ArgumentError, match="argument 2"):
            api(lennard_jones, argnums=2)(x, kinds, species)


# --- the helpers' rules -----------------------------------------------------------------------

@numba.njit
def _zero_of(r):
    z = zero_record_like(r)
    return z.epsilon + z.sigma + z.charge


@numba.njit
def _holder_after_adding(r, v):
    holder = record_holder(r)
    add = holder[0]
    adder(add, v)
    adder(add, 2.0 * v)
    return holder


adder = field_adder("sigma")


def test_zero_record_and_holder():
    r = _species()[1]
    assert _zero_of(r) == 0.0
    holder = _holder_after_adding(r, 1.5)
    assert holder.dtype == SPECIES and holder[0]["sigma"] == 4.5 and holder[0]["epsilon"] == 0


def test_the_helpers_rules_are_registered():
    for helper in (zero_record_like, record_holder, adder):
        assert lookup_jvp(helper) is not None
    assert field_adder("sigma") is adder  # one helper per field name


# --- refused ----------------------------------------------------------------------------------

@numba.njit
def _copies(p):
    q = p.copy()
    return q[0].epsilon * 2.0


@numba.njit
def _fancy(p, idx):
    q = p[idx]
    return q[0].epsilon * 2.0


@numba.njit
def _in_a_tuple(t):
    return t[0][1].sigma * 3.0


@numba.njit
def _chosen(p, c):
    r = p[0] if c > 0 else p[1]
    return r.sigma * 2.0 * c


@numba.njit
def _chosen_of_two_shapes(p, grid, c):
    r = p[0] if c > 0 else grid[0, 1]
    return r.sigma * 2.0 * c


@numba.njit
def _joined(p):
    q = np.concatenate((p, p[::-1]))
    return q[0].epsilon * 2.0


@pytest.mark.parametrize("kernel, extra", [(_copies, ()), (_fancy, (np.array([1, 0]),)),
                                           (_joined, ())])
def test_copies_and_gathers_in_every_mode(kernel, extra):
    """Refused until whole records were copied field by field (test_record_copies.py); a
    concatenation, in reverse mode."""
    check_rule(kernel, _species(), *extra)


def test_what_reverse_mode_refuses():
    p = _species()
    with pytest.raises(UnsupportedError, match="a tuple holding a structured array"):
        moonlite.grad(_in_a_tuple)((p, 1.0))


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_a_record_chosen_between_arrays_of_two_dimensions_in_every_mode(c):
    """Each record the entry 0 of a one-entry view (capture/record_phis.py: entry_slice):
    reverse mode refused it before."""
    check_rule(_chosen_of_two_shapes, _species(), _species().reshape(1, 2), c,
               second_order=True)


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_a_record_chosen_by_a_branch_in_every_mode(c):
    check_rule(_chosen, _species(), c, second_order=True)


# --- the helpers whole-record copies and structured outputs use ---------------------------------

_ADD_SPECIES = records_adder(numba.from_dtype(SPECIES))


@numba.njit
def _added_into(p, q, s):
    out = p.copy()
    _ADD_SPECIES(out, q)  # out's float fields += q's (the int field is left alone)
    return np.sum(out["epsilon"] * out["sigma"]) * s


def test_records_adder_in_every_mode():
    check_rule(_added_into, _species(), _species()[::-1].copy(), 0.7, second_order=True)
    p, q = _species(), _species()
    _ADD_SPECIES(p, q)
    assert np.array_equal(p["epsilon"], 2 * q["epsilon"]) and np.array_equal(p["charge"],
                                                                            q["charge"])


@numba.njit
def _gathered(p, idx, s):
    q = records_gathered_like(p, idx)  # unset entries: only its shape and dtype are read
    return q.shape[0] * s + p[idx[0]].sigma * s


def test_records_gathered_like_is_an_allocation():
    p = _species()
    assert records_gathered_like(p, np.array([1, 0, 1])).shape == (3,)
    assert records_empty_like(p, 5).shape == (5,) and records_empty_like(p, 5).dtype == SPECIES
    assert lookup_jvp(records_gathered_like) is not None
    assert lookup_jvp(records_empty_like) is not None
    check_rule(_gathered, p, np.array([1, 0]), 0.7)


@numba.njit
def _placed(p, s):
    places = record_places(p, 2)  # ints: they move no derivative
    return p[places[1] - 2].sigma * s + np.sum(places) * s


def test_record_places_number_the_entries_in_c_order():
    p = _species()
    grid = np.zeros((2, 3), SPECIES)
    np.testing.assert_array_equal(record_places(p, 4), 4 + np.arange(p.size))
    np.testing.assert_array_equal(record_places(grid.T, 0), np.arange(6).reshape(3, 2))
    assert lookup_jvp(record_places) is not None
    check_rule(_placed, p, 0.7, second_order=True)
