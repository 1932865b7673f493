"""Lists of arrays built by append (capture/array_lists.py): the entries' numbers in one flat
buffer with each entry's place and shape, so entries may differ in shape; checked in every mode
against finite differences to second order by `moonlite.testing.check_rule`; writes that would
tell the buffer's copies from the arrays appended (references) are refused. Methods other than
append: test_array_list_methods.py."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.errors import UnsupportedError
from moonlite.testing import check_rule
from tests.helpers import assert_refused_in_both_modes

X = np.array([0.3, -0.5, 0.8])


@numba.njit
def trajectory_energy(x0, k, steps):
    """A trajectory recorded by appending a copy of the state at each step, then walked."""
    x = x0.copy()
    states = []
    for _ in range(steps):
        x = x + 0.1 * np.sin(k * x)
        states.append(x.copy())
    total = 0.0
    for s in states:
        total += np.sum(s * s)
    return total + np.sum(states[-1]) * len(states)


@numba.njit
def _dot(a, b):  # reads its arguments only
    return np.sum(a * b)


@numba.njit
def scaled_rows(a, w):
    """Fresh rows appended in a loop, read back by index from both ends, given to a helper."""
    parts = []
    for i in range(a.shape[0]):
        parts.append(a[i] * w)
    s = 0.0
    for i in range(len(parts)):
        s += _dot(parts[i], parts[len(parts) - 1 - i])
    return s


@numba.njit
def written_before_appending(x, n):
    """A fresh array written, then appended, in each iteration: no write follows an append."""
    pieces = []
    for i in range(n):
        y = x * (i + 1.0)
        y[0] = 2.0 * y[1]
        pieces.append(y)
    s = 0.0
    for k, e in enumerate(pieces):
        s += e[0] * e[-1] * (k + 1)
    return s


@numba.njit
def matrices(x, n):
    """2-D entries, a list literal appended to, a while loop, unpacking."""
    first = np.outer(x, x)
    mats = [first, first * 0.5]
    t = 0
    while t < n:
        mats.append(mats[-1] @ mats[0] * 0.1)
        t += 1
    a, b = mats[0], mats[1]
    return np.sum(mats[-1]) + np.sum(a * b)


@numba.njit
def windows(x):
    """Views of an argument the kernel never writes, appended (the list holds the views)."""
    pairs = []
    for i in range(x.shape[0] - 1):
        pairs.append(x[i:i + 2])
    s = 0.0
    for p in pairs:
        s += p[0] * p[1] ** 2
    return s


# Each kernel is checked in forward mode and through grad against finite differences; vjp's
# split rule (sweep and pullback, "split") and the Hessian ("second") on about half of them
# each (all four on all of them made this file one of the suite's longest).
@pytest.mark.parametrize("kernel, args, checks", [
    (windows, (np.array([0.3, -0.5, 0.8, 1.1, -0.2]),), "split second"),
    (trajectory_energy, (X, 1.3, 5), "second"),
    (scaled_rows, (np.arange(12.0).reshape(4, 3) / 7.0, X), "split"),
    (written_before_appending, (X, 4), "second"),
    (matrices, (X, 3), "split"),
], ids=["windows", "trajectory", "rows", "written_first", "matrices"])
def test_lists_of_arrays_in_every_mode(kernel, args, checks):
    check_rule(kernel, *args, vjp="split" in checks, second_order="second" in checks)


@numba.njit
def written_after_appending(x):
    seen = []
    for _ in range(2):
        seen.append(x)
        x[0] += 1.0  # every entry is x: the list would see this
    return seen[0][0]


@numba.njit
def entry_written(x):
    seen = []
    seen.append(x * 2.0)
    e = seen[0]
    e[1] = 5.0  # the array appended would see this
    return np.sum(seen[0])


@numba.njit
def _scale_in_place(a):
    a *= 2.0


@numba.njit
def entry_given_to_a_writer(x):
    seen = []
    seen.append(x * 2.0)
    _scale_in_place(seen[0])
    return np.sum(seen[0])


@numba.njit
def _same(a):  # writes nothing, but returns what it is given
    return a


@numba.njit
def entry_written_through_a_helper_result(x):
    seen = []
    seen.append(x * 2.0)
    v = _same(seen[0])
    v[1] = 5.0
    return np.sum(seen[0])


@numba.njit
def written_through_a_tuple(x):
    t = (x * 1.0, 2.0)
    seen = []
    for _ in range(2):
        seen.append(t[0])
        t[0][1] += 1.0  # the same array as the entries: the list would see this
    return seen[0][1] + seen[1][1] * 0.5


@numba.njit
def popped_and_written(x):
    seen = []
    seen.append(x * 2.0)
    top = seen.pop()
    top[0] = 1.0  # the array appended would see this
    return np.sum(top)


@numba.njit
def replaced_then_written(x):
    seen = [x * 2.0]
    y = x * 3.0
    seen[0] = y
    y[1] = 0.5  # the list holds y: it would see this
    return np.sum(seen[0])


@numba.njit
def inserted_then_written(x):
    seen = [x * 2.0]
    y = x * 3.0
    seen.insert(0, y)
    y *= 2.0  # the list holds y: it would see this
    return np.sum(seen[0])


@pytest.mark.parametrize("kernel, construct", [
    (written_after_appending, "writing into an array after appending it to a list"),
    (entry_written, "writing into an entry of a list of arrays"),
    (entry_given_to_a_writer, "writing into an entry of a list of arrays"),
    (entry_written_through_a_helper_result, "writing into an entry of a list of arrays"),
    (written_through_a_tuple, "writing into an array after appending it to a list"),
    (popped_and_written, "writing into an entry of a list of arrays"),
    (replaced_then_written, "writing into an array after appending it to a list"),
    (inserted_then_written, "writing into an array after appending it to a list"),
], ids=["written_after", "entry_written", "entry_to_writer", "helper_result", "tuple",
        "popped_written", "replaced_written", "inserted_written"])
def test_writes_a_copy_would_hide_are_refused(kernel, construct):
    assert_refused_in_both_modes(kernel, construct)


@numba.njit
def appends_an_entry_of_a_tuple_argument(t):
    seen = []
    seen.append(t[0])
    a = t[0]  # another read of the same array
    a[1] += 3.0
    return seen[0][1] * t[1]


def test_a_write_through_another_read_of_a_tuple_argument_is_refused():
    t = (X.copy(), 2.0)
    for run in (lambda: moonlite.grad(appends_an_entry_of_a_tuple_argument)(t),
                lambda: moonlite.jvp(appends_an_entry_of_a_tuple_argument, (t,),
                                     ((np.ones(3), 1.0),))):
        with pytest.raises(UnsupportedError, match="writing into an array after appending"):
            run()


@numba.njit
def ragged_segments(x, w):
    """A ragged batch: the prefixes of x scaled by w, of lengths 1..n, walked and indexed."""
    pieces = []
    for i in range(1, x.shape[0] + 1):
        pieces.append(x[:i] * w[:i])
    s = 0.0
    for p in pieces:
        s += np.sum(np.sin(p)) * p.shape[0]
    return s + np.sum(pieces[-1] * pieces[0][0]) + len(pieces)


@numba.njit
def neighbour_energy(pos, rc):
    """A neighbour list: ragged int index arrays (np.where), then used to gather positions."""
    n = pos.shape[0]
    nbrs = []
    for i in range(n):
        d = np.empty(n)
        for j in range(n):
            d[j] = np.sqrt(np.sum((pos[i] - pos[j]) ** 2))
        nbrs.append(np.where((d < rc) & (d > 0.0))[0])
    e = 0.0
    for i in range(n):
        near = pos[nbrs[i]]
        for k in range(near.shape[0]):
            e += 1.0 / np.sum((pos[i] - near[k]) ** 2)
    return e


@numba.njit
def neighbour_counts(pos, rc):
    nbrs = []
    for i in range(pos.shape[0]):
        d = np.sqrt(np.sum((pos - pos[i]) ** 2, axis=1))
        nbrs.append(np.where((d < rc) & (d > 0.0))[0])
    counts = np.empty(len(nbrs), np.int64)
    for i in range(len(nbrs)):
        counts[i] = nbrs[i].shape[0]
    return counts


@numba.njit
def layers_from_parameters(theta, x):
    """Weight matrices of different shapes cut from one parameter vector in a loop (views of
    an argument nothing writes), applied in turn."""
    sizes = (3, 4, 2)
    layers = []
    at = 0
    for k in range(len(sizes) - 1):
        m, n = sizes[k + 1], sizes[k]
        layers.append(theta[at:at + m * n].reshape((m, n)))
        at += m * n
    h = x
    for W in layers:
        h = np.tanh(W @ h)
    return np.sum(h * h) + layers[-1].shape[0]


@numba.njit
def _segment_norms(pieces):
    out = np.empty(len(pieces))
    for k in range(len(pieces)):
        out[k] = np.sum(pieces[k] ** 2) / pieces[k].size
    return out


@numba.njit
def ragged_given_to_a_helper(x):
    """Ragged 2-D entries (outer products of growing prefixes) read by an njit helper."""
    blocks = []
    for i in range(1, 4):
        blocks.append(np.outer(x[:i], np.sin(x[i - 1:])))
    return np.sum(_segment_norms(blocks) * np.arange(1.0, 4.0)) + np.sum(blocks[1] @ x[1:])


P = np.random.default_rng(1).uniform(0.0, 2.0, (6, 2))


def test_the_neighbour_lists_are_ragged():
    counts = neighbour_counts(P, 1.0)
    assert len(set(counts)) > 1  # (so the test below reads entries of different shapes)


@pytest.mark.parametrize("kernel, args, checks", [
    (ragged_segments, (X, np.array([0.7, 0.2, -0.3])), "split second"),
    (neighbour_energy, (P, 1.0), "split"),
    (layers_from_parameters, (np.random.default_rng(2).normal(size=20) * 0.5,
                              np.array([0.2, -0.4, 0.7])), "second"),
    (ragged_given_to_a_helper, (np.array([0.3, -0.5, 0.8, 1.1]),), "split"),
], ids=["segments", "neighbours", "layers", "helper"])
def test_entries_of_different_shapes_in_every_mode(kernel, args, checks):
    check_rule(kernel, *args, fixed=(1,) if kernel is neighbour_energy else (),
               vjp="split" in checks, second_order="second" in checks)


# --- entries that are views of any layout (numba types such a list's entries 'A') ------------

@numba.njit
def strided_segments(x):
    """Every third number, three phases: each entry a strided view of the argument."""
    ys = []
    for k in range(3):
        ys.append(x[k::3])
    s = 0.0
    for y in ys:
        s += np.sum(np.sin(y) * y)
    return s


@numba.njit
def columns_weighted(A):
    """The columns of a matrix kept in a list, as column-wise statistics codes do."""
    cols = []
    for j in range(A.shape[1]):
        cols.append(A[:, j])
    s = 0.0
    for i in range(len(cols)):
        s += np.dot(cols[i], cols[i]) * (i + 1)
    return s


@numba.njit
def reversed_row_blocks(A):
    """2-D views, one of them reversed along its columns, read by a product."""
    blocks = []
    blocks.append(A[::2, :])
    blocks.append(A[1::2, ::-1])
    return np.sum(blocks[0] * blocks[1]) + np.sum(blocks[1] ** 2)


@numba.njit
def strided_view_written_after(x):
    y = x * 1.0
    ys = []
    ys.append(y[::2])
    y[0] = 5.0 * y[1]  # the list holds the view: it would see this
    return np.sum(ys[0] ** 2)


@pytest.mark.parametrize("kernel, args", [
    (strided_segments, (np.linspace(0.1, 1.3, 9),)),
    (columns_weighted, (np.arange(12.0).reshape(3, 4) / 7,)),
    (reversed_row_blocks, (np.arange(16.0).reshape(4, 4) / 7,)),
], ids=["strided", "columns", "reversed_blocks"])
def test_entries_of_any_layout_in_every_mode(kernel, args):
    check_rule(kernel, *args)


def test_a_strided_entry_written_after_appending_is_refused():
    assert_refused_in_both_modes(strided_view_written_after,
                                 "writing into an array after appending it to a list")


@numba.njit
def transposes_beside_views(A):
    """A transpose (typed F) beside a reversed view: numba types the list's entries "A"."""
    ys = []
    ys.append(A[1::2, ::-1])
    ys.append(A.T)
    s = 0.0
    for Y in ys:
        s += np.sum(Y * Y) + Y[0, 0]
    return s


@numba.njit
def only_transposes(A):
    ys = []
    ys.append(A.T)
    ys.append(A.T * 2.0)
    return np.sum(ys[0] * ys[1])


def test_a_transpose_beside_other_layouts_in_every_mode():
    A = np.arange(1.0, 10.0).reshape(3, 3) / 5
    check_rule(transposes_beside_views, A, second_order=True, vjp=False)


@numba.njit
def inverses_kept(a, n):
    """The inverses of shifted matrices kept in a list (numba's inv is Fortran-ordered, so
    the list is typed F), then walked and read at both ends."""
    invs = []
    for k in range(n):
        invs.append(np.linalg.inv(a + (k + 2.0) * np.eye(a.shape[0])))
    total = 0.0
    for p in invs:
        total += np.sum(p @ a)
    return total + np.sum(invs[0] * invs[-1])


@numba.njit
def _weighted_squares(ms):
    s = 0.0
    for k in range(len(ms)):
        s += (k + 1.0) * np.sum(ms[k] * ms[k])
    return s


@numba.njit
def fortran_list_changed(a):
    """A list typed F changed by its methods, copied, extended and given to a helper."""
    ms = [a.T, (a * a).T]
    ms.append(np.linalg.inv(a + 3.0 * np.eye(3)))
    ms.insert(1, (a + 1.0).T)
    last = ms.pop()
    ms[0] = last * 2.0
    ms.reverse()
    more = ms.copy()
    more.extend(ms[:2])
    total = 0.0
    for m in more:
        total += np.sum(m @ a)
    return total + _weighted_squares(ms) + np.sum(last[0] * last[:, 1])


@numba.njit
def fortran_cubes(x):
    """Entries of three dimensions typed F."""
    cube = np.outer(x, x[:2]).reshape(2, 2, 2).T
    cs = []
    for k in range(3):
        cs.append(cube * (k + 1.0) + cube ** 2)
    return np.sum(cs[1][:, 0, :] * cs[2][1]) + len(cs)


A33 = np.array([[0.4, -0.2, 0.1], [0.3, 0.5, -0.6], [-0.1, 0.2, 0.3]])


@pytest.mark.parametrize("kernel, args, checks", [
    (only_transposes, (np.arange(1.0, 10.0).reshape(3, 3) / 5,), "split second"),
    (inverses_kept, (A33, 3), ""),
    (fortran_list_changed, (A33,), "split"),
    (fortran_cubes, (np.array([0.3, -0.5, 0.7, 1.1]),), "second"),
], ids=["transposes", "inverses", "changed", "cubes"])
def test_a_list_typed_fortran_ordered_in_every_mode(kernel, args, checks):
    """Its entries kept as the numbers of their C-ordered transposes, read back as the
    transpose of a C view (capture/array_lists.py); refused before."""
    check_rule(kernel, *args, vjp="split" in checks, second_order="second" in checks)


@numba.njit
def copy_written_before_appending(x):
    """A copy of an appended array is a new array: writing it before appending is fine."""
    ys = []
    y = np.sin(x)
    ys.append(y[1:])
    z = y.copy()
    z[0] = 4.0 * x[0]
    ys.append(z[:2])
    return np.sum(ys[0] * ys[0]) + np.sum(ys[1] ** 3)


def test_a_copy_written_before_appending_in_every_mode():
    check_rule(copy_written_before_appending, X, second_order=True)


@numba.njit
def entries_joined(x):
    """Entries gathered into a tuple for np.concatenate and np.hstack: read, not written."""
    ys = []
    for k in range(3):
        ys.append(x[k::3])
    z = np.concatenate((ys[0], ys[1], ys[2]))
    w = np.hstack((ys[1], ys[0] * 2.0))
    return np.sum(z * np.arange(z.size)) + np.sum(w * w)


def test_entries_given_to_a_join_in_every_mode():
    check_rule(entries_joined, np.array([0.3, -0.7, 1.1, 0.5, -0.2, 0.9, 1.3]),
               second_order=True, vjp=False)


@numba.njit
def extended_with_comprehensions(a, b):
    """Lists extended with lists built by comprehensions over a list literal of the arguments
    (read by a run-time index into the literal's tuple: no write)."""
    ys = [a]
    zs = [x for x in [b, a]]
    ys.extend(zs)
    ys.extend([x * 1.0 for x in [b]])
    return np.sum(ys[1] * a) + np.sum(ys[3] ** 2) + np.sum(ys[2] * ys[0])


@numba.njit
def written_after_a_comprehension(a, b):  # (2-D arrays: the list holds a)
    ys = [a]
    zs = [x for x in [b, a]]
    ys.extend(zs)
    a[0, 0] = 2.0  # (the lists hold a: they would see this write)
    return np.sum(ys[1] * a)


def test_lists_extended_with_comprehensions_in_every_mode():
    """Found by an adversarial hunt: the run-time index into the list literal's tuple was
    taken for a write into the arrays it holds."""
    a = np.arange(9.0).reshape(3, 3) / 10
    check_rule(extended_with_comprehensions, a, a.T.copy() + 1.0)
    b = a.T.copy() + 1.0
    written_after_a_comprehension(a.copy(), b)
    for derive in (lambda: moonlite.grad(written_after_a_comprehension)(a.copy(), b),
                   lambda: moonlite.jvp(written_after_a_comprehension, (a.copy(), b),
                                        (np.ones_like(a), np.ones_like(b)))):
        with pytest.raises(UnsupportedError, match="writing into an array after appending"):
            derive()
