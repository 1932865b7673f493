"""njit helpers that build a list and return it (`capture/list_helpers.py`: the list-returning
form): a neighbour list of indices, a list of floats or of tuples the caller reads, walks,
appends to and passes on. They were refused ("Python lists and sets") in the caller. Each
kernel is checked in every mode to second order against finite differences."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.testing import check_rule


@numba.njit
def neighbours(pos, i, cutoff):
    out = []
    for j in range(pos.shape[0]):
        if j != i and np.sum((pos[j] - pos[i]) ** 2) < cutoff * cutoff:
            out.append(j)
    return out


@numba.njit
def pair_energy(pos, cutoff):
    """A cell-list-free neighbour loop, as molecular dynamics codes write it."""
    e = 0.0
    for i in range(pos.shape[0]):
        for j in neighbours(pos, i, cutoff):
            e += 1.0 / np.sum((pos[j] - pos[i]) ** 2)
    return e


@numba.njit
def soft_distances(pos, i):
    out = []
    for j in range(pos.shape[0]):
        out.append(np.sqrt(np.sum((pos[j] - pos[i]) ** 2) + 1.0))
    return out


@numba.njit
def extended_distances(pos):
    """The returned list appended to, indexed, measured and summed by the caller."""
    e = 0.0
    for i in range(pos.shape[0]):
        ds = soft_distances(pos, i)
        ds.append(pos[i, 0])
        for d in ds:
            e += d * d
        e += len(ds) * ds[-1] + sum(ds) * ds[0]
    return e


@numba.njit
def candidates(x, k):
    """(value, index) pairs, and a literal list returned as it is."""
    out = [(x[0], 0)]
    for j in range(1, x.size):
        if j % k != 0:
            out.append((x[j] * x[j], j))
    return out


@numba.njit
def ends(x):
    return [x[0], x[-1] * 2.0]


@numba.njit
def best_candidates(x):
    pairs = candidates(x, 3)
    s = 0.0
    for value, j in pairs:
        s += value * x[j]
    first, last = ends(x)
    return s + min(pairs)[0] + first * last


POS = np.random.default_rng(0).uniform(0.0, 2.0, (6, 2))


@pytest.mark.parametrize("kernel, args", [
    (pair_energy, (POS, 1.0)),
    (extended_distances, (POS,)),
    (best_candidates, (np.linspace(-1.0, 1.5, 7),)),
], ids=lambda v: getattr(v, "__name__", None))
def test_lists_returned_by_helpers_in_every_mode(kernel, args):
    check_rule(kernel, *args, fixed=(1,) if len(args) > 1 else (), second_order=True)


@numba.njit
def arrays_list(x):
    out = []
    for k in range(3):
        out.append(x * k)
    return out


@numba.njit
def uses_arrays_list(x):
    s = 0.0
    for a in arrays_list(x):
        s += np.sum(a)
    return s


def test_a_list_of_arrays_returned_is_refused_by_name():
    with pytest.raises(moonlite.UnsupportedError, match="list of array.*returned by "
                                                        "arrays_list"):
        moonlite.grad(uses_arrays_list)(np.ones(3))
