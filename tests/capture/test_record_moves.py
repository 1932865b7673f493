"""numpy functions that move the entries of structured arrays (`capture/record_fields.py`:
`move_records`, `at_least_records`): `np.roll`, `np.take`, `np.repeat`, `np.append`,
`np.delete`, `np.full_like(p, r)`, joins and stacks make a new array (gathered from the places
the function gives the entries), `np.atleast_1d/2d/3d` a view. Every mode against finite
differences (the rule checker), and what numba itself computes for the primal."""

import numba
import numpy as np
import pytest

import moonlite
from tests.helpers import check_in_turn

BEAD = np.dtype([("x", "f8"), ("k", "f8"), ("id", "i8")])
# a 2-vector field and a nested record as well: every field kind moves with its entry
PARCEL = np.dtype([("m", "f8"), ("v", "f8", (2,)), ("tag", [("w", "f8"), ("n", "i4")])])


def _beads(n=6, seed=0):
    rng = np.random.default_rng(seed)
    p = np.zeros(n, BEAD)
    p["x"], p["k"], p["id"] = rng.uniform(-1, 1, n), rng.uniform(0.5, 1.5, n), np.arange(n)
    return p


def _parcels(shape=(5,), seed=1):
    rng = np.random.default_rng(seed)
    p = np.zeros(shape, PARCEL)
    p["m"] = rng.uniform(0.5, 1.5, shape)
    p["v"] = rng.uniform(-1, 1, shape + (2,))
    p["tag"]["w"] = rng.uniform(-1, 1, shape)
    p["tag"]["n"] = np.arange(np.prod(shape)).reshape(shape)
    return p


@numba.njit
def _kinetic(q):
    """Every float field of every entry, weighted by its place (in C order)."""
    s = 0.0
    w = 1.0
    for r in q.ravel():
        s += w * r["m"] * (r["v"][0] ** 2 + r["v"][1] ** 2) + r["tag"]["w"] * w
        w += 0.25
    return s


@numba.njit
def ring_of_springs(p):
    """A closed chain of beads: each pulled to its left neighbour (np.roll of the chain)."""
    left = np.roll(p, 1)
    e = 0.0
    for i in range(p.shape[0]):
        e += 0.5 * p[i]["k"] * (p[i]["x"] - left[i]["x"] - 0.1) ** 2
    return e


@numba.njit
def bootstrap_mean(p, idx):
    """A resample of the beads (np.take), weighted by stiffness."""
    s = np.take(p, idx)
    return np.sum(s["x"] * s["k"]) / np.sum(s["k"])


@numba.njit
def ghost_cells(p):
    """Periodic ghosts appended at both ends (np.append, np.concatenate of a tuple variable),
    then a centred difference over the padded chain."""
    padded = np.append(p, p[:1])
    ends = (p[-1:], padded)
    padded = np.concatenate(ends)
    e = 0.0
    for i in range(1, padded.shape[0] - 1):
        e += padded[i]["k"] * (padded[i + 1]["x"] - padded[i - 1]["x"]) ** 2
    return e


@numba.njit
def upsampled_without_one(p, k):
    """Each bead twice (np.repeat and the method), then one dropped (np.delete)."""
    twice = np.repeat(p, 2)
    thrice = p.repeat(3)
    kept = np.delete(twice, k)
    return np.sum(np.sin(kept["x"]) * kept["k"]) + np.sum(thrice["x"] ** 2)


@numba.njit
def stacked_beads(p, q):
    """Two chains stacked into grids (np.stack, np.column_stack) and joined (np.hstack)."""
    pages = np.stack((q, p))
    cols = np.column_stack((p, q))
    line = np.hstack((q, p))
    return (np.sum(pages["x"] * pages["k"]) + np.sum(np.cos(cols["x"][:, 1]) * cols["k"][:, 0])
            + line[3]["x"] * line[8]["k"])


@numba.njit
def filled_with_a_record(p, q):
    """Every entry a copy of one record (np.full_like), then one entry changed: the others
    keep the record's numbers."""
    base = np.full_like(p, q[1])
    base[0]["x"] = q[0]["x"] * 3.0
    return np.sum(base["x"] * p["k"]) + np.sum(np.sin(base["x"]) * base["k"])


@numba.njit
def rolled_grid(p):
    """A 2-D grid of parcels rolled (numba rolls the flattened array) and taken by a 2-D
    index array, and its copy written: the copy is new, the parcels stay."""
    g = np.roll(p, 3)
    g[0, 1]["m"] = g[1, 0]["m"] * 2.0
    picked = np.take(p, np.array([[0, 5], [2, 2]]))
    return _kinetic(g) + _kinetic(picked) + _kinetic(p)


@numba.njit
def at_least_views(p):
    """np.atleast_2d and np.atleast_3d are views of a copy of the parcels: a write through
    them changes the copy."""
    q = p.copy()
    g = np.atleast_2d(q)
    g[0, 1]["m"] = g[0, 0]["m"] * g[0, 2]["tag"]["w"]
    h = np.atleast_3d(q)
    h[0, 3, 0]["v"][1] = h[0, 4, 0]["m"] ** 2
    return _kinetic(q) + _kinetic(np.atleast_1d(q)) + _kinetic(np.atleast_3d(g))


CASES = [
    (ring_of_springs, lambda: (_beads(),)),
    (bootstrap_mean, lambda: (_beads(), np.array([0, 3, 3, 5, 1]))),
    (ghost_cells, lambda: (_beads(),)),
    (upsampled_without_one, lambda: (_beads(4), 3)),
    (stacked_beads, lambda: (_beads(), _beads(seed=2))),
    (filled_with_a_record, lambda: (_beads(), _beads(3, seed=4))),
    (rolled_grid, lambda: (_parcels((3, 2)),)),
    (at_least_views, lambda: (_parcels(),)),
]


@pytest.mark.parametrize("index, kernel, make_args", [(i, *c) for i, c in enumerate(CASES)],
                         ids=[k.__name__ for k, _ in CASES])
def test_moved_records_in_every_mode(index, kernel, make_args):
    args = make_args()
    value, _ = moonlite.value_and_grad(kernel)(*args)
    assert value == pytest.approx(kernel(*make_args()), rel=1e-12)
    check_in_turn(index, kernel, *args, second_order=kernel in (ring_of_springs, at_least_views))


def test_moves_moonlite_cannot_follow_are_refused():
    """np.atleast_2d of a strided view (numba's view of a non-contiguous array) stays
    refused by name."""

    @numba.njit
    def strided_at_least_2d(p):
        return np.sum(np.atleast_2d(p[::2])["x"])

    with pytest.raises(moonlite.UnsupportedError, match="np.atleast_2d"):
        moonlite.grad(strided_at_least_2d)(_beads())
