"""njit helpers the reverse pass calls: scatters of indexed reads, sums over broadcast axes, the
shape check of a custom rule's cotangent, and tapes handed between a sweep and its pullback.
(The helpers of primitives' adjoints live beside their rules in `rules/`.)

They are plain njit code without `.flat` (which forward mode does not differentiate), so forward
mode over a reverse rule (Hessians) differentiates them like any other njit callee.
"""

from ... import _numba as nb
from ...ir.types import ArrayType
from ...rules.define import defrule, positional_only
import numpy as np


@nb.njit(cache=True)
def add_cotangent(shadow, g):
    """shadow += g after checking the shapes agree: a custom rule's cotangent is the user's,
    and numba's `a += b` does not check that b's shape fits a's (it reads past b's end)."""
    # first and last extents and the size pin the shape down for up to 3 dimensions (written
    # without comparing shape tuples, which moonlite does not differentiate through)
    if shadow.size != g.size or (shadow.ndim > 0 and (shadow.shape[0] != g.shape[0]
                                                      or shadow.shape[-1] != g.shape[-1])):
        raise ValueError("a custom VJP rule returned a cotangent whose shape differs from "
                         "its argument's")
    shadow += g
    return None


@nb.njit(cache=True)
def scatter_add(shadow, index, g):
    """The adjoint of y = x[index] for a 1-D array of ints: repeats add up."""
    for k in range(index.shape[0]):
        shadow[index[k]] += g[k]
    return None


@nb.njit(cache=True)
def last_writes_only(written, index, target):
    """The adjoint `written` gathered at `target[index] = value` (a 1-D array of ints), zeroed
    where a later entry of `index` writes the same place: numba keeps the last write, so the
    values written before it reach nothing."""
    out = written.copy()
    n = target.shape[0]
    seen = np.zeros(n, np.bool_)
    for k in range(index.shape[0] - 1, -1, -1):
        i = index[k] + n if index[k] < 0 else index[k]
        if seen[i]:
            out[k] = 0.0
        seen[i] = True
    return out


@nb.njit(cache=True)
def masked_add(shadow, mask, g):
    """The adjoint of y = x[mask] for a 1-D array of bools."""
    k = 0
    for i in range(mask.shape[0]):
        if mask[i]:
            shadow[i] += g[k]
            k += 1
    return None


# Broadcasting: the adjoint of an operand numpy stretched along an axis of length 1 is summed
# along that axis. Whether an axis has length 1 is known only at run time, and numba's
# `shadow += g` does not check shapes (it reads past g's end), so every array adjoint with the
# operand's number of dimensions goes through one of these (chosen by that number). An adjoint
# with length 1 where the operand has more (np.sum with an axis sends one) is returned as it is:
# `+=` stretches it correctly. Any other mismatch raises.

_SHAPE_MISMATCH = ("moonlite: an adjoint's shape does not match its array's: an operation of the "
                   "function mixes arrays whose shapes do not broadcast (`a += w` with w longer "
                   "than a, which NumPy refuses and numba runs on w's first entries); make the "
                   "shapes agree (if they do, this is a moonlite bug: please report it)")


@nb.njit(cache=True)
def sum_to_shape_1d(g, like):
    n = like.shape[0]
    if g.shape[0] == n or g.shape[0] == 1:
        return np.ascontiguousarray(g)  # as it is (`+=` stretches a length-1 axis); no copy if C
    if n != 1:
        raise ValueError(_SHAPE_MISMATCH)
    out = g[:1].copy()  # (not np.zeros: the type of g's copies, aligned or not, see records.py)
    out[0] = np.sum(g)
    return out


@nb.njit(cache=True)
def sum_to_shape_2d(g, like):
    r, c = like.shape[0], like.shape[1]
    gr, gc = g.shape[0], g.shape[1]
    if (gr == r or gr == 1) and (gc == c or gc == 1):
        return np.ascontiguousarray(g)  # as it is (`+=` stretches length-1 axes); no copy if C
    if (r != 1 and r != gr) or (c != 1 and c != gc):
        raise ValueError(_SHAPE_MISMATCH)
    out = g[:r, :c].copy()  # (g's type, aligned or not)
    out[:] = 0.0
    for i in range(gr):
        for j in range(gc):
            out[min(i, r - 1), min(j, c - 1)] += g[i, j]
    return out


@nb.njit(cache=True)
def sum_to_shape_3d(g, like):
    p, r, c = like.shape[0], like.shape[1], like.shape[2]
    gp, gr, gc = g.shape[0], g.shape[1], g.shape[2]
    if (gp == p or gp == 1) and (gr == r or gr == 1) and (gc == c or gc == 1):
        return np.ascontiguousarray(g)  # as it is (`+=` stretches length-1 axes); no copy if C
    if (p != 1 and p != gp) or (r != 1 and r != gr) or (c != 1 and c != gc):
        raise ValueError(_SHAPE_MISMATCH)
    out = g[:p, :r, :c].copy()  # (g's type, aligned or not)
    out[:] = 0.0
    for h in range(gp):
        for i in range(gr):
            for j in range(gc):
                out[min(h, p - 1), min(i, r - 1), min(j, c - 1)] += g[h, i, j]
    return out


@nb.njit(cache=True)
def same_size_or_raise(g, like):
    """More than 3 dimensions: no broadcasting over axes of length 1 in reverse mode."""
    if g.size != like.size:
        raise ValueError("moonlite: broadcasting over axes of length 1 of arrays with more "
                         "than 3 dimensions is not supported in reverse mode")
    return np.ascontiguousarray(g)


SUM_TO_SHAPE = {1: sum_to_shape_1d, 2: sum_to_shape_2d, 3: sum_to_shape_3d}


def _linear_in_the_adjoint(helper):
    """Forward rule of `helper(g, like)`: linear in g, and `like` gives only a shape, so the
    tangent is `helper(dg, like)`. Registered because forward mode over a gradient (Hessians)
    would otherwise capture the helper and compile a derived rule of it in every process
    (0.3 s of least squares' Hessian). The result may be g itself (or dg): the reverse pass
    only adds it into a shadow, never writes into it."""

    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 2)
        dg = tangents[0]
        if dg is None:
            return None
        return b.call(helper, [dg, primals[1]], type=ArrayType(dg.type.dtype, dg.type.ndim, "C"))

    return rule


for _helper in (*SUM_TO_SHAPE.values(), same_size_or_raise):
    defrule(_helper, _linear_in_the_adjoint(_helper))


# The pullback of an in-place operation on an array (`a += b`) puts back the values `a` held
# before it (a copy of the same shape). Written as `a[:] = saved`, numba compiled its broadcasting
# store, whose error message for mismatched shapes (numba's int-to-str formatting,
# `raise_with_shape_context`) took 2 s of the first gradient in a process of a kernel with an
# in-place operation on a 2-d array: the primal, without that store, never compiled it.

@nb.njit(cache=True)
def restore_1d(target, saved):
    for i in range(target.shape[0]):
        target[i] = saved[i]
    return None


@nb.njit(cache=True)
def restore_2d(target, saved):
    for i in range(target.shape[0]):
        for j in range(target.shape[1]):
            target[i, j] = saved[i, j]
    return None


@nb.njit(cache=True)
def restore_3d(target, saved):
    for i in range(target.shape[0]):
        for j in range(target.shape[1]):
            for k in range(target.shape[2]):
                target[i, j, k] = saved[i, j, k]
    return None


RESTORE = {1: restore_1d, 2: restore_2d, 3: restore_3d}


# --- tapes crossing between the sweep and the pullback of a vjp (split.py) ------------

@nb.njit(cache=True)
def tape_as_array(tape):
    return np.asarray(tape)


@nb.njit(cache=True)
def tape_from_array(values):
    return list(values)


@nb.njit(cache=True)
def tape_as_typed_list(tape):
    out = nb.typed.List()
    for item in tape:
        out.append(item)
    return out


@nb.njit(cache=True)
def tape_from_typed_list(items):
    return list(items)


