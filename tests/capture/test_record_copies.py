"""Whole records copied between structured arrays (`capture/record_fields.py`:
`copy_records_into`, `copy_record_array`, `gather_records`), and structured arrays returned by
a kernel (`rules/records.py: records_adder`): every mode against finite differences (the rule
checker), and what numba itself computes for the primal (overlapping copies copy first)."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ir import ops
from moonlite.rules.records import records_gathered_like
from moonlite.testing import check_rule, check_vjp
from tests.helpers import check_in_turn

INNER = np.dtype([("a", "f8"), ("n", "i4")])
# a float, a 3-vector, a nested record and a bool: not aligned, every kind of field
PARTICLE = np.dtype([("x", "f8"), ("pos", "f8", (3,)), ("inner", INNER), ("alive", "?")])
STATE = np.dtype([("q", "f8"), ("p", "f8"), ("id", "i8")])


def _particles(shape=(5,), seed=0):
    rng = np.random.default_rng(seed)
    p = np.zeros(shape, PARTICLE)
    p["x"] = rng.uniform(-1.0, 1.0, shape)
    p["pos"] = rng.uniform(-1.0, 1.0, shape + (3,))
    p["inner"]["a"] = rng.uniform(0.5, 1.5, shape)
    p["inner"]["n"] = np.arange(np.prod(shape)).reshape(shape)
    p["alive"] = (np.arange(np.prod(shape)) % 3 != 1).reshape(shape)
    return p


def _states(n=4, seed=1):
    rng = np.random.default_rng(seed)
    s = np.zeros(n, STATE)
    s["q"], s["p"], s["id"] = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), np.arange(n)
    return s


@numba.njit
def shifted_history(p, x0):
    """A history kept newest first: the older entries move down, the new one goes on top."""
    p[1:] = p[:-1]
    p[0].x = x0
    t = 0.0
    for i in range(p.shape[0]):
        t += (i + 1.0) * p[i].x * np.sum(p[i].pos ** 2) + p[i]["inner"]["a"] * p[i].x
    return t


@numba.njit
def grid_rows_copied(g, s):
    """Rows and columns of a 2-D structured grid copied, a record broadcast into a slice."""
    g[:, 0] = g[:, 1]
    g[2] = g[0]
    g[1, 1].x *= s
    g[0, :] = g[1, 1]
    return np.sum(g["x"] ** 2 * g["inner"]["a"]) + np.sum(g["pos"] * s)


@numba.njit
def swapped_through_a_copy(g, s):
    """The usual swap of two rows through a temporary copy."""
    tmp = g[0].copy()
    g[0] = g[1]
    g[1] = tmp
    g[0, 0].x *= s
    return np.sum(g["x"] * g["pos"][:, :, 0]) + g[1, 1].x * s


@numba.njit
def copies_then_writes(p, s):
    q = p.copy()
    q[0].x = s
    r = np.copy(q)
    r[1:3] = p[0]
    return np.sum(q["x"] * p["inner"]["a"]) + np.sum(r["pos"][:, 1]) * s + r[0].x * q[1].x


@numba.njit
def grown(p, s):
    q = np.empty(2 * p.shape[0], p.dtype)
    q[:p.shape[0]] = p
    q[p.shape[0]:] = p[::-1]
    q[0].x = s
    return np.sum(q["x"] * q["pos"][:, 0])


@numba.njit
def sorted_and_filtered(p, s):
    """Entries sorted by a field, then the live ones kept: gathers by an index array and a
    mask, the way particle codes reorder their arrays."""
    q = p[np.argsort(p["x"])]
    live = q[q["alive"]]
    t = 0.0
    for i in range(live.shape[0]):
        t += (i + 1.0) * live[i].x * s + np.sum(live[i].pos ** 2) * live[i]["inner"]["a"]
    return t


@numba.njit
def views_moved(p, s):
    """Views of a structured array: reshaped, transposed, flipped, given an axis, and written
    through."""
    g = p.reshape((2, 3))
    g[1, 2].x *= s
    t = np.transpose(g)
    f = np.flip(p)
    e = np.expand_dims(p, 0)
    e[0, 1].x += s * f[0].x
    return np.sum(t["x"] * np.swapaxes(t, 0, 1).T["inner"]["a"]) + f[1].x * s


@numba.njit
def joined(p, s):
    """Structured arrays concatenated (pieces of one, reversed), then written."""
    q = np.concatenate((p[:2], p, p[::-2]))
    q[1].x *= s
    r = np.concatenate((q, p), axis=0)
    return np.sum(r["x"] * r["inner"]["a"]) + np.sum(q["pos"] ** 2) * s


CASES = [
    (shifted_history, lambda: (_particles(), 0.7)),
    (grid_rows_copied, lambda: (_particles((3, 2)), 0.7)),
    (swapped_through_a_copy, lambda: (_particles((2, 2)), 0.7)),
    (copies_then_writes, lambda: (_particles(), 0.7)),
    (grown, lambda: (_particles(), 0.7)),
    (sorted_and_filtered, lambda: (_particles(), 0.7)),
    (views_moved, lambda: (_particles((6,)), 0.7)),
    (joined, lambda: (_particles(), 0.7)),
]


@pytest.mark.parametrize("index, kernel, make_args", [(i, *c) for i, c in enumerate(CASES)],
                         ids=[k.__name__ for k, _ in CASES])
def test_whole_records_copied_in_every_mode(index, kernel, make_args):
    check_in_turn(index, kernel, *make_args())


def test_overlapping_copy_is_numbas():
    """`p[1:] = p[:-1]` copies its source first (numpy's meaning), in the primal moonlite
    compiles as in numba's own."""
    p = _states(5)
    expected = p["q"].copy()
    expected[1:] = expected[:-1].copy()

    @numba.njit
    def shift(p):
        p[1:] = p[:-1]
        return p

    out, _ = moonlite.jvp(shift, (p.copy(),), (np.zeros_like(p),))
    np.testing.assert_array_equal(out["q"], expected)
    np.testing.assert_array_equal(shift(p.copy())["q"], expected)


def test_copies_are_field_views_in_the_ir():
    """No structured-array copy or gather is left for the AD passes: field-view writes and a
    fresh allocation (`records_gathered_like`)."""
    ir = moonlite.capture(sorted_and_filtered, _particles(), 0.7)
    callees = [op.callee for op in ir.ops() if isinstance(op, ops.Call)]
    assert records_gathered_like in callees
    copies = [op for op in ir.ops() if isinstance(op, ops.MethodCall) and op.name == "copy"]
    assert not copies


@numba.njit
def leapfrog(s, dt, n):
    """A symplectic step of harmonic oscillators held in a structured array: the new states
    returned as a structured array of the same dtype, as simulation codes do."""
    out = s.copy()
    for _ in range(n):
        for i in range(out.shape[0]):
            out[i].p -= 0.5 * dt * np.sin(out[i].q)
            out[i].q += dt * out[i].p
            out[i].p -= 0.5 * dt * np.sin(out[i].q)
            out[i].id += 1
    return out


def test_structured_output_in_every_mode():
    check_rule(leapfrog, _states(), 0.1, 3)


def test_structured_output_vjp_and_its_cotangent():
    s = _states()
    out, pullback = moonlite.vjp(leapfrog, s.copy(), 0.1, 3)
    np.testing.assert_array_equal(out, leapfrog(s.copy(), 0.1, 3))
    cotangent = np.zeros_like(out)
    cotangent["q"] = 1.0
    ds, ddt, dn = pullback(cotangent)
    assert ds.dtype == STATE and dn is None
    # d sum(q_out) / d dt by central differences
    h = 1e-6
    fd = (np.sum(leapfrog(s.copy(), 0.1 + h, 3)["q"])
          - np.sum(leapfrog(s.copy(), 0.1 - h, 3)["q"])) / (2 * h)
    assert ddt == pytest.approx(fd, rel=1e-6)
    check_vjp(leapfrog, s, 0.1, 3)


def test_structured_output_cotangent_of_another_dtype_is_refused():
    s = _states()
    _, pullback = moonlite.vjp(leapfrog, s.copy(), 0.1, 3)
    with pytest.raises(moonlite.ArgumentError, match="dtype"):
        pullback(np.zeros(s.shape[0]))


@numba.njit
def energy_after_leapfrog(s, dt):
    out = leapfrog(s, dt, 2)
    return np.sum(out["p"] ** 2 + out["q"] ** 2)


def test_structured_output_of_a_helper_to_second_order():
    check_rule(energy_after_leapfrog, _states(), 0.1, second_order=True)


def test_structured_output_vjp_inside_njit_code():
    @numba.njit
    def pulled(s, dt, cotangent):
        _, pullback = moonlite.vjp(leapfrog, s, dt, 3)
        return pullback(cotangent)

    s = _states()
    cotangent = np.zeros_like(s)
    cotangent["p"] = 1.0
    ds, ddt, _ = pulled(s.copy(), 0.1, cotangent)
    h = 1e-6
    fd = (np.sum(leapfrog(s.copy(), 0.1 + h, 3)["p"])
          - np.sum(leapfrog(s.copy(), 0.1 - h, 3)["p"])) / (2 * h)
    assert ddt == pytest.approx(fd, rel=1e-6)


def test_jacobians_of_structured_outputs_are_refused():
    for jacobian in (moonlite.jacfwd, moonlite.jacrev):
        with pytest.raises(moonlite.ArgumentError, match="must return a float or a float"):
            jacobian(leapfrog, argnums=1)(_states(), 0.1, 3)


# --- ravel and flatten of structured arrays (capture/record_fields.py: record_array_method) ---

@numba.njit
def _written_and_summed(flat, g, s):
    flat[0].x = flat[1].x * s
    t = 0.0
    for i in range(flat.shape[0]):
        t += flat[i].x * np.sum(flat[i].pos) * s
    return t + np.sum(g["x"] ** 2)


@numba.njit
def ravel_then_written(g, s):
    """numba's ravel of a C grid is a view: the write through it reaches g."""
    return _written_and_summed(g.ravel(), g, s)


@numba.njit
def flatten_then_written(g, s):
    """flatten copies: the write through it does not reach g."""
    return _written_and_summed(g.flatten(), g, s)


@numba.njit
def ravel_of_a_strided_view(g, s):
    """ravel of a view that is not C-contiguous copies."""
    flat = g[:, ::2].ravel()
    flat[0].x = flat[1].x * s
    return np.sum(flat["x"] ** 3) + np.sum(g["x"] ** 2) * s


@numba.njit
def np_ravel_then_written(g, s):
    flat = np.ravel(g)
    flat[0].x = s * 3.0
    return np.sum(flat["x"] ** 3) + np.sum(g["x"] ** 2) * s


@numba.njit
def ravel_of_a_transpose(g, s):
    """A transposed (F-ordered) grid: ravel and flatten copy in C order, np.copy keeps F."""
    flat = g.T.ravel()
    flat[1].x = s * flat[2].x
    kept = np.copy(g.T)
    kept[0, 1].x = s
    return np.sum(flat["x"] * np.arange(flat.size)) + np.sum(g.T.flatten()["pos"][2] * s) \
        + np.sum(kept["x"] ** 2) + np.sum(g["x"] ** 2)


@pytest.mark.parametrize("kernel", [ravel_then_written, flatten_then_written,
                                    ravel_of_a_strided_view, np_ravel_then_written,
                                    ravel_of_a_transpose],
                         ids=["ravel", "flatten", "ravel_strided", "np_ravel", "transposed"])
def test_ravel_and_flatten_in_every_mode(kernel):
    check_rule(kernel, _particles((3, 4)), 0.7)


def test_ravel_is_a_view_and_flatten_a_copy_as_in_numba():
    for kernel, changed in [(ravel_then_written, True), (flatten_then_written, False)]:
        g = _particles((3, 4))
        before = g["x"].copy()
        kernel(g, 0.7)
        assert (g["x"][0, 0] != before[0, 0]) == changed
