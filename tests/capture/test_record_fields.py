"""Writing fields of records and whole fields of structured arrays (`capture/record_fields.py`,
`rules/records.py`): what capture makes of them, every mode against finite differences (the
rule checker: forward, reverse, forward over reverse, the dot-product identity), the analyses
that must see a write through a record, and what reverse mode refuses."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ad.activity import varied_values
from moonlite.ir.readonly import never_written
from moonlite.ir import ops
from moonlite.rules import lookup_jvp
from moonlite.ir.types import IntType
from moonlite.rules.records import (entry_view, field_is_aligned, field_setter, field_view,
                                    field_view_of, record_view)
from moonlite.testing import check_rule
from tests.corpus.constructs import RECORD_CASES
from tests.helpers import check_corpus_case

BODY = np.dtype([("x", "f8"), ("v", "f8"), ("m", "f8"), ("id", "i8")])
FLAGGED = np.dtype([("x", "f8"), ("v", "f8"), ("alive", "?")])  # 17 bytes: not aligned


def _bodies(dtype=BODY, n=4):
    rng = np.random.default_rng(0)
    p = np.zeros(n, dtype)
    p["x"], p["v"] = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    if "m" in dtype.names:
        p["m"] = rng.uniform(1, 2, n)
    if "alive" in dtype.names:
        p["alive"] = [k % 3 != 1 for k in range(n)]
    return p


@numba.njit
def kick(body, force, dt):
    body.v += force * dt / body.m
    body["id"] = body["id"] + 1  # an int field: written, never differentiated


@numba.njit
def kicked_by_a_helper(p, k):
    for i in range(p.shape[0]):
        kick(p[i], -k * p[i].x, 0.1)
        p[i].x = p[i].x + 0.1 * p[i].v
    return np.sum(p["x"] ** 2) + np.sum(p["v"])


@numba.njit
def written_while_iterating(p, k):
    for r in p:
        r.v = r.v - k * r.x
        r["x"] += 0.1 * r.v  # reads the v just written
    s = 0.0
    for r in p:
        s += r.x * r.v
    return s


@numba.njit
def whole_fields(p, w):
    xs = p["x"]
    p["v"][:] = p["m"] * w * xs
    xs[0] = w
    return np.sum(p["v"] ** 2) + np.sum(xs)


@numba.njit
def not_aligned(q, s):
    for i in range(q.shape[0]):
        if q[i].alive:
            q[i].v = q[i].v * s + q[i].x
    q["x"][:] = q["x"] * q["v"]
    return np.sum(q["x"] ** 2)


@numba.njit
def local_table(x):
    t = np.zeros(x.shape[0], BODY)
    for i in range(x.shape[0]):
        t[i]["x"] = x[i]
        t[i].m = 1.0 + x[i] ** 2
    t["v"][:] = np.sin(t["x"])
    return np.sum(t["m"] * t["v"])


@numba.njit
def grid(cells, s):
    for i in range(cells.shape[0]):
        for j in range(cells.shape[1]):
            cells[i, j]["x"] = s * cells[i, j].v + cells[i, j]["x"] ** 2
    return cells["x"].sum()


CASES = {
    "an entry given to a helper that writes it": (kicked_by_a_helper, lambda: (_bodies(), 2.0)),
    "entries written while iterating": (written_while_iterating, lambda: (_bodies(), 2.0)),
    "whole fields read and written": (whole_fields, lambda: (_bodies(), 1.5)),
    "records that are not aligned": (not_aligned, lambda: (_bodies(FLAGGED), 1.5)),
    "a structured array the kernel allocates": (local_table,
                                                lambda: (np.array([0.3, -0.5, 1.2]),)),
    "a 2-D structured array": (grid, lambda: (_bodies(n=6).reshape(2, 3), 0.7)),
}


@pytest.mark.parametrize("name", CASES)
def test_in_every_mode(name):
    kernel, make_args = CASES[name]
    check_rule(kernel, *make_args(), second_order=True)


def test_an_entrys_field_is_written_through_a_view_of_the_field():
    fn = moonlite.capture(kicked_by_a_helper, _bodies(), 2.0)
    moonlite.verify(fn)
    views = [op for op in fn.ops() if isinstance(op, ops.Call) and op.callee is field_view("x")]
    assert views and any(isinstance(u, ops.SetItem) for op in views
                         for u in _users(fn, op.result))
    # a record argument is the entry 0 of a one-entry view of it, written the same way
    helper = moonlite.capture(kick, _bodies()[0], 1.0, 0.1)
    assert any(isinstance(op, ops.Call) and op.callee is record_view for op in helper.ops())
    assert not any(isinstance(op, ops.Call) and op.callee is field_setter("v")
                   for op in helper.ops())


def _users(fn, value):
    return [op for op in fn.ops() if value in op.operands]


def test_a_write_through_an_entry_makes_the_structured_array_written_and_varied():
    fn = moonlite.capture(kicked_by_a_helper, _bodies(), 2.0)
    assert not never_written(fn, fn.args[0])
    assert fn.args[0] in varied_values(fn, active=frozenset([1]))


@numba.njit
def into_a_parameter_table(x, p):
    for i in range(x.shape[0]):
        p[i]["x"] = x[i] * p[i].m
    e = 0.0
    for i in range(x.shape[0]):
        e += p[i].x ** 2
    return e


def test_writing_into_a_structured_argument_not_differentiated():
    x = np.array([0.3, -0.5, 1.2, 0.1])
    g = moonlite.grad(into_a_parameter_table, argnums=0)(x, _bodies())
    h = 1e-6
    for k, e in enumerate(np.eye(4)):
        fd = (into_a_parameter_table(x + h * e, _bodies())
              - into_a_parameter_table(x - h * e, _bodies())) / (2 * h)
        assert g[k] == pytest.approx(fd, rel=1e-6)
    value, tangent = moonlite.jvp(into_a_parameter_table, (x, _bodies()),
                                  (np.ones(4), np.zeros(4, BODY)))
    fd = (into_a_parameter_table(x + h, _bodies()) - into_a_parameter_table(x - h, _bodies()))
    assert value == pytest.approx(into_a_parameter_table(x, _bodies()))
    assert tangent == pytest.approx(fd / (2 * h), rel=1e-6)


@numba.njit
def scales_a_record_argument(r, s):
    r.x = r.x * s
    r["v"] = r.v + r.x
    return r.x * r.v


@numba.njit
def writes_a_chosen_record(p, c):
    r = p[0] if c > 0 else p[1]
    r.x = c * 2.0 * r.v
    return p[0].x + p[1].x * 3.0


@numba.njit
def heaviest(p):
    """The entry with the largest mass, kept as a record across the loop (an argmax)."""
    best = p[0]
    for i in range(1, p.shape[0]):
        if p[i].m > best.m:
            best = p[i]
    return best.v * best.m + best.x


@numba.njit
def from_either_array(p, q, c):
    r = p[1] if c > 0 else q[2]
    r.v += c * r.x
    return np.sum(p["v"] ** 2) + np.sum(q["v"] * q["x"])


@numba.njit
def the_argument_or_an_entry(r0, p, c):
    r = r0 if c > 0 else p[2]
    r.v = r.v * c + r.x
    return r0.v * 2.0 + np.sum(p["v"] * p["x"])


@numba.njit
def _drag(body, k):
    body.v -= k * body.v * abs(body.v)


@numba.njit
def dragged_by_a_helper(p, r0, k):
    for i in range(p.shape[0]):
        _drag(p[i], k)
    _drag(r0, k)
    return np.sum(p["v"] ** 2) + r0.v * r0.m


RECORDS_NOT_FROM_AN_ARRAY = {
    "a record argument written": (scales_a_record_argument, lambda: (_bodies()[1], 1.5)),
    "a record chosen by a branch, written (true)": (writes_a_chosen_record,
                                                    lambda: (_bodies(), 0.7)),
    "a record chosen by a branch, written (false)": (writes_a_chosen_record,
                                                     lambda: (_bodies(), -0.7)),
    "a record carried around a loop": (heaviest, lambda: (_bodies(n=6),)),
    "records of two arrays": (from_either_array, lambda: (_bodies(), _bodies()[::-1].copy(),
                                                          0.4)),
    "the argument or an entry (argument)": (the_argument_or_an_entry,
                                            lambda: (_bodies()[0], _bodies(), 0.7)),
    "the argument or an entry (entry)": (the_argument_or_an_entry,
                                         lambda: (_bodies()[0], _bodies(), -0.7)),
    "a helper writing a record it is given": (dragged_by_a_helper,
                                              lambda: (_bodies(), _bodies()[3], 0.3)),
}


@pytest.mark.parametrize("name", RECORDS_NOT_FROM_AN_ARRAY)
def test_records_not_read_from_an_array_here_in_every_mode(name):
    """Record arguments are read as `record_view(r)[0]` (capture/parameters.py), phis of
    records as phis of indices (capture/record_phis.py): every mode follows them."""
    kernel, make_args = RECORDS_NOT_FROM_AN_ARRAY[name]
    check_rule(kernel, *make_args(), second_order=True, vjp=False)


def test_a_record_argument_written_is_restored_by_grad_and_its_gradient_is_one_entry():
    r = _bodies()[1]
    before = r.copy()
    g = moonlite.grad(scales_a_record_argument, argnums=(0, 1))(r, 1.5)
    assert r == before  # the pullback restores what the sweep wrote
    x, v, s = before["x"], before["v"], 1.5
    assert g[0].shape == (1,) and g[0].dtype == BODY
    assert g[0][0]["x"] == pytest.approx(s * (v + x * s) + x * s * s)
    assert g[0][0]["v"] == pytest.approx(x * s)
    assert g[1] == pytest.approx(x * (v + x * s) + x * s * x)


def test_a_record_phi_becomes_a_phi_of_indices():
    fn = moonlite.capture(heaviest, _bodies(n=6))
    moonlite.verify(fn)
    record_phis = [op for op in fn.ops() if isinstance(op, ops.Phi)
                   and not isinstance(op.result.type, (IntType,))]
    assert not record_phis, [str(op.result.type) for op in record_phis]


def test_a_view_of_a_helpers_record_holds_the_callers_array():
    """Inlined, a helper's `record_view(r)` of an entry `p[i]` becomes `entry_view(p[i], p)`:
    a view holding `p` alive (a record holds nothing, and a view of the entry of an array
    whose last use had passed read freed memory: the Hessian of a record argument written
    came out wrong before this)."""
    from moonlite.ad.inline import inline_njit_calls
    from moonlite.driver import PASS_CONTEXT
    fn = inline_njit_calls(moonlite.capture(dragged_by_a_helper, _bodies(), _bodies()[3], 0.3),
                           context=PASS_CONTEXT)
    moonlite.verify(fn)
    callees = [op.callee for op in fn.ops() if isinstance(op, ops.Call)]
    assert entry_view in callees and record_view in callees  # p[i] and the argument r0


def test_the_helpers_are_primitives_with_rules():
    assert field_view("x") is field_view("x") and field_setter("x") is field_setter("x")
    assert lookup_jvp(field_view("x")) is not None and lookup_jvp(field_setter("x")) is not None
    body = numba.typeof(_bodies()).dtype
    flagged = numba.typeof(_bodies(FLAGGED)).dtype
    assert field_is_aligned(body, "v") and not field_is_aligned(flagged, "v")
    assert field_view_of(flagged, "v") is field_view("v", False)


def test_a_view_of_a_field_is_a_view_typed_aligned_when_its_entries_are():
    p = _bodies()
    view = field_view("x")(p)
    view[1] = 7.0
    assert p[1]["x"] == 7.0  # a view, not a copy
    assert field_view("x").nopython_signatures[-1].return_type.aligned
    q = _bodies(FLAGGED)
    field_view("x", False)(q)[0] = 5.0
    assert q[0]["x"] == 5.0
    assert not field_view("x", False).nopython_signatures[-1].return_type.aligned


@pytest.mark.parametrize("index, case", enumerate(RECORD_CASES),
                         ids=[c.name for c in RECORD_CASES])
def test_corpus_kernel_with_records_in_every_mode(index, case):
    """The record kernels of tests/corpus/constructs.py (the others: test_constructs.py)."""
    check_corpus_case(case, index)


@numba.njit
def writes_an_entry_given_beside_its_array(s, p, x):
    s.x = s.x * x
    return p[0].x * p[1].v + s.x


@numba.njit
def writes_one_of_two_records(s, t, x):
    s.x = s.x * x
    t.x = t.x + s.x
    return t.x * t.v


def test_a_written_record_sharing_memory_with_another_argument_is_refused():
    """`f(p[0], p, x)`: a derivative follows each argument separately (adversarial tests: a
    wrong gradient before the guards asked records too, ad/guards.py)."""
    p = _bodies()
    zero = np.zeros(1, BODY)[0]
    runs = {"grad": lambda q: moonlite.grad(writes_an_entry_given_beside_its_array,
                                            argnums=2)(q[0], q, 1.3),
            "jvp": lambda q: moonlite.jvp(writes_an_entry_given_beside_its_array,
                                          (q[0], q, 1.3), (zero, np.zeros_like(q), 1.0)),
            "vjp": lambda q: moonlite.vjp(writes_an_entry_given_beside_its_array, q[0], q, 1.3),
            "hvp": lambda q: moonlite.hvp(writes_an_entry_given_beside_its_array,
                                          (q[0], q, 1.3), (zero, np.zeros_like(q), 1.0)),
            "one record twice": lambda q: moonlite.grad(writes_one_of_two_records,
                                                        argnums=2)(q[1], q[1], 1.3)}
    for name, run in runs.items():
        with pytest.raises(moonlite.errors.ArgumentError, match="share memory"):
            run(p.copy())


BODY_WITH_POINTS = np.dtype([("pos", [("x", "f8"), ("y", "f8")]), ("v", "f8", (2,)),
                             ("m", "f8"), ("k", "i8")])


@numba.njit
def bubble_pass(p):
    """One bubble-sort pass by mass, whole records swapped through a temporary (`p[i] = q`)."""
    tmp = np.zeros(1, p.dtype)
    for i in range(p.shape[0] - 1):
        if p[i].m > p[i + 1].m:
            tmp[0] = p[i]
            p[i] = p[i + 1]
            p[i + 1] = tmp[0]
    s = 0.0
    for i in range(p.shape[0]):
        s += (i + 1) * (p[i].m * p[i].pos.x + p[i].v[1] * p[i].pos.y)
    return s


@numba.njit
def a_record_argument_stored(r, p, c):
    p[1] = r
    p[0].m = p[0].m * c
    return np.sum(p["m"] * p["pos"]["x"]) + np.sum(p["v"])


def _points():
    rng = np.random.default_rng(7)
    p = np.zeros(4, BODY_WITH_POINTS)
    p["pos"]["x"], p["pos"]["y"] = rng.uniform(size=4), rng.uniform(size=4)
    p["v"], p["m"], p["k"] = rng.uniform(size=(4, 2)), [2.0, 1.0, 3.5, 0.5], [1, 2, 3, 4]
    return p


def test_whole_records_assigned_in_every_mode():
    """`p[i] = r` copies every field (nested records and array fields too: capture writes
    them one by one, record_fields.copy_record_into)."""
    check_rule(bubble_pass, _points(), second_order=True)
    check_rule(a_record_argument_stored, _points()[3], _points(), 0.7, second_order=True, vjp=False)
    p = _points()
    bubble_pass(p)
    assert list(p["k"]) == [2, 1, 4, 3]  # the int field moved with its record
