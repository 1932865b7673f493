"""The pullback of an in-place operation on an array puts back what the array held before it:
entry by entry for up to 3 dimensions (`helpers.RESTORE`, no numba broadcasting store and its
error formatting to compile), numba's slice store beyond. Every mode, second order included,
against finite differences."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ad.reverse.helpers import RESTORE
from moonlite.driver import derived_reverse_rule
from moonlite.ir import ops
from moonlite.testing import check_rule


@numba.njit
def relaxed(x, y):
    z = y.copy()
    for _ in range(3):
        z += x
        z *= x
        z -= 0.5 * y
        z /= 1.0 + x * x
    return np.sum(z * z)


@numba.njit
def column_updates(a, w):
    b = a.copy()
    for j in range(b.shape[1]):
        b[:, j] *= w[j]  # a strided 1-d view of a 2-d array
        b[:, j] += np.sin(b[:, 0])
    return np.sum(b * b)


@numba.njit
def in_place_nd(x):
    z = x * 1.5
    z *= x
    z += np.cos(x)
    return np.sum(z * x)


ATOM = np.dtype([("mass", "f8"), ("pos", "f8", (3,)), ("vel", "f8", (3,))])


@numba.njit
def drift(atoms, dt, steps):
    for _ in range(steps):
        for i in range(atoms.shape[0]):
            atoms[i].pos += dt * atoms[i].vel  # a record's array field, written in place
            atoms[i].vel *= 1.0 - 0.1 * dt * atoms[i].mass
    e = 0.0
    for i in range(atoms.shape[0]):
        e += np.sum(atoms[i].pos * atoms[i].pos) + atoms[i].mass * np.sum(atoms[i].vel ** 2)
    return e


def _atoms():
    atoms = np.zeros(3, dtype=ATOM)
    atoms["mass"] = [1.0, 2.0, 0.5]
    atoms["pos"] = np.arange(9.0).reshape(3, 3) / 4.0
    atoms["vel"] = np.linspace(-1.0, 1.0, 9).reshape(3, 3)
    return atoms


rng = np.random.default_rng(11)
CASES = [
    ("2-d, in a loop", relaxed, (rng.uniform(0.5, 1.5, (3, 4)), rng.uniform(0.5, 1.5, (3, 4)))),
    ("float32", relaxed, (rng.uniform(0.5, 1.5, (3, 2)).astype(np.float32),
                          rng.uniform(0.5, 1.5, (3, 2)).astype(np.float32))),
    ("a strided column", column_updates, (rng.standard_normal((4, 3)), rng.standard_normal(3))),
    ("1-d", in_place_nd, (rng.standard_normal(5),)),
    ("3-d", in_place_nd, (rng.standard_normal((2, 3, 2)),)),
    ("4-d: numba's slice store", in_place_nd, (rng.standard_normal((2, 1, 2, 2)),)),
    ("a record's array field", drift, (_atoms(), 0.1, 3)),
]


@pytest.mark.parametrize("kernel, args", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_in_place_operations_differentiate_in_every_mode(kernel, args):
    tolerances = {"rtol": 1e-3, "atol": 1e-4} if args[0].dtype == np.float32 else {}
    check_rule(kernel, *args, second_order=True, **tolerances)


def _calls_and_stores(kernel, args):
    rule = derived_reverse_rule(kernel, tuple(numba.typeof(a) for a in args))
    ops_ = list(rule.ir.ops())
    restores = [op for op in ops_ if isinstance(op, ops.Call) and op.callee in RESTORE.values()]
    slice_stores = [op for op in ops_ if isinstance(op, ops.SetItem)
                    and isinstance(op.index.op, ops.BuildSlice)]
    return restores, slice_stores


def test_up_to_three_dimensions_restore_entry_by_entry_beyond_by_a_slice_store():
    restores, slice_stores = _calls_and_stores(in_place_nd, (np.ones((2, 3)),))
    assert len(restores) == 2 and not slice_stores
    restores, slice_stores = _calls_and_stores(in_place_nd, (np.ones((2, 1, 2, 2)),))
    assert not restores and len(slice_stores) == 2


@numba.njit
def squares_itself(x, y):
    z = x * 1.5
    z *= z  # the value is the target: d(z * z) = 2 z dz
    w = y.copy()
    w /= w  # ones: no derivative through w
    z += z
    z -= y
    return np.sum(z * (w + y))


def test_an_in_place_operation_on_the_array_itself():
    """`x *= x` sent v's share of the adjoint after scaling the target's shadow by the new
    x (x squared): the gradient was wrong (found by trying constructs adversarially)."""
    x, y = np.array([0.3, 0.7, 0.2]), np.array([0.5, -0.1, 0.9])
    check_rule(squares_itself, x, y, second_order=True)
    z = 1.5 * x
    np.testing.assert_allclose(moonlite.grad(squares_itself)(x, y),
                               2 * 2 * z * 1.5 * (1 + y), rtol=1e-12)


@numba.njit
def writes_at_repeated_places(y, idx, s):
    y[idx] += s * y[idx]  # idx repeats a place: numba keeps the last write
    y[idx[::-1]] = y[idx] * s + 1.0
    return np.sum(y ** 3)


def test_an_index_array_repeating_a_place_counts_the_last_write_only():
    """With idx = [0, 2, 0] every write's value got the adjoint of the place it wrote, the
    overwritten ones too: the gradient was twice what it is at y[0] (adversarial tests)."""
    y, idx = np.array([0.3, 0.7, 0.2, 0.5]), np.array([0, 2, 0, -1])
    check_rule(writes_at_repeated_places, y, idx, 0.7, second_order=True, vjp=False)


@numba.njit
def reads_views_after_writing_their_base(x, s):
    y = x[None, :]  # np.reshape: numba's is always a view
    z = np.expand_dims(x[::2], 1)  # a view of a strided view
    w = x.reshape((x.size, 1))
    x[0] = s * x[1]  # written after the views were taken: they see the write
    w[1, 0] += s  # a write through a reshape reaches x
    return np.sum(y * y * x) + np.sum(z ** 3) + np.sum(np.sin(w))


def test_reshape_and_expand_dims_results_are_views_in_reverse_mode():
    """Their shadows were arrays of their own: a write into the base read back through the
    view sent its adjoint to the old entry (adversarial tests of x[None, :]); writes through
    them were refused. Their shadows are now the same views of the base's shadow."""
    check_rule(reads_views_after_writing_their_base, np.array([0.3, 0.7, 0.2, -0.4]), 0.6,
               second_order=True)


@numba.njit
def layers_decayed_in_place(Ws, x, n):
    """Weights picked at run time out of a tuple and written in place (Fortran-ordered in the
    test: vjp's private copies were C-ordered, which the sweep's tapes, typed from the caller's
    arrays, could not take: numba's lowering failed on an assertion)."""
    s = 0.0
    for k in range(n):
        W = Ws[k % len(Ws)]
        W *= 0.9
        s += np.sum(np.sin(W @ x))
    return s


@numba.njit
def pairs_decayed_in_place(layers, x):
    s = 0.0
    for W, b in layers:
        W *= 0.9
        s += np.sum(np.sin(W @ x + b))
    return s


@numba.njit
def vjp_of_pairs_in_njit(layers, x):
    out, pullback = moonlite.vjp(pairs_decayed_in_place, layers, x)
    return out, pullback(1.0)


def test_fortran_ordered_arrays_in_a_tuple_written_in_place_in_every_mode():
    rng = np.random.default_rng(4)
    W1, W2 = (np.asfortranarray(rng.standard_normal((3, 3))) for _ in range(2))
    x, b = rng.standard_normal(3), rng.standard_normal(3)
    check_rule(layers_decayed_in_place, (W1, W2), x, 3, second_order=True, vjp=False)
    layers = ((W1, b), (W2, 0.5 * b))
    check_rule(pairs_decayed_in_place, layers, x)

    def fresh():  # (the kernel writes its weights: each run gets its own)
        return tuple((W.copy(order="K"), c.copy()) for W, c in layers)

    h = 1e-6
    fd = [(pairs_decayed_in_place(fresh(), x + h * e) - pairs_decayed_in_place(fresh(), x - h * e))
          / (2 * h) for e in np.eye(3)]
    out, (_, dx) = vjp_of_pairs_in_njit(fresh(), x)  # copies made inside njit code
    assert out == pairs_decayed_in_place(fresh(), x)
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-8)
