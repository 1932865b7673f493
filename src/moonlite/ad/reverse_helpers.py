"""njit helpers the reverse pass calls for adjoints that are not one-liners.

They are plain njit code without `.flat` (which forward mode does not differentiate), so forward
mode over a reverse rule (Hessians) differentiates them like any other njit callee. The
reduction helpers return the derivative of the reduction shaped like its operand; the pass
multiplies it by the adjoint and adds it to the operand's shadow.
"""

import numba
import numpy as np


@numba.njit
def one_at_argmax(x):
    # np.max picks the first maximum; its adjoint goes there (the derivative from that side)
    out = np.zeros(x.size, x.dtype)
    out[np.argmax(x)] = 1
    return out.reshape(x.shape)


@numba.njit
def one_at_argmin(x):
    out = np.zeros(x.size, x.dtype)
    out[np.argmin(x)] = 1
    return out.reshape(x.shape)


@numba.njit
def product_of_others(x):
    # d prod(x) / d x_i = the product of the other entries: prefix times suffix products, exact
    # with zeros (no division)
    values = np.ascontiguousarray(x).ravel()
    n = values.shape[0]
    out = np.empty(n, values.dtype)
    acc = np.ones(1, values.dtype)[0]
    for i in range(n):
        out[i] = acc
        acc = acc * values[i]
    acc = np.ones(1, values.dtype)[0]
    for i in range(n - 1, -1, -1):
        out[i] = out[i] * acc
        acc = acc * values[i]
    return out.reshape(x.shape)


@numba.njit
def add_to_diagonal(gx, adjoint, k):
    """gx's diagonal k += adjoint: the adjoint of np.trace(x, k)."""
    for i in range(gx.shape[0]):
        if 0 <= i + k < gx.shape[1]:
            gx[i, i + k] += adjoint
    return None


@numba.njit
def add_along_diagonal(gx, g, k):
    """gx's diagonal k += g: the adjoint of np.diag(x, k) for a matrix x (any shape)."""
    for i in range(g.shape[0]):
        if k >= 0:
            gx[i, i + k] += g[i]
        else:
            gx[i - k, i] += g[i]
    return None


@numba.njit
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


@numba.njit
def scatter_add(shadow, index, g):
    """The adjoint of y = x[index] for a 1-D array of ints: repeats add up."""
    for k in range(index.shape[0]):
        shadow[index[k]] += g[k]
    return None


@numba.njit
def masked_add(shadow, mask, g):
    """The adjoint of y = x[mask] for a 1-D array of bools."""
    k = 0
    for i in range(mask.shape[0]):
        if mask[i]:
            shadow[i] += g[k]
            k += 1
    return None


@numba.njit
def add_concatenated_piece(shadow, g, start, axis):
    """shadow += the piece of g that concatenate took from shadow's array, starting at `start`
    along `axis` (the adjoint of np.concatenate is a split)."""
    n = shadow.shape[axis]
    shadow += np.swapaxes(np.swapaxes(g, 0, axis)[start:start + n], 0, axis)
    return None


@numba.njit
def add_stacked_piece(shadow, g, k, axis):
    """shadow += entry k of g along the new `axis` np.stack made. (moveaxis, not swapaxes:
    swapping axes 0 and 2 of a 3-d g also reverses the piece's own axes, and numba's `+=`
    does not check shapes: stacking matrices along axis -1 had a wrong gradient.)"""
    shadow += np.moveaxis(g, axis, 0)[k]
    return None


# Broadcasting: the adjoint of an operand numpy stretched along an axis of length 1 is summed
# along that axis. Whether an axis has length 1 is known only at run time, and numba's
# `shadow += g` does not check shapes (it reads past g's end), so every array adjoint with the
# operand's number of dimensions goes through one of these (chosen by that number). An adjoint
# with length 1 where the operand has more (np.sum with an axis sends one) is returned as it is:
# `+=` stretches it correctly. Any other mismatch raises.

_SHAPE_MISMATCH = "moonlite: an adjoint's shape does not match its array's (a bug: please report it)"


@numba.njit
def sum_to_shape_1d(g, like):
    n = like.shape[0]
    if g.shape[0] == n or g.shape[0] == 1:
        return np.ascontiguousarray(g)  # as it is (`+=` stretches a length-1 axis); no copy if C
    if n != 1:
        raise ValueError(_SHAPE_MISMATCH)
    out = np.zeros(1, g.dtype)
    out[0] = np.sum(g)
    return out


@numba.njit
def sum_to_shape_2d(g, like):
    r, c = like.shape[0], like.shape[1]
    gr, gc = g.shape[0], g.shape[1]
    if (gr == r or gr == 1) and (gc == c or gc == 1):
        return np.ascontiguousarray(g)  # as it is (`+=` stretches length-1 axes); no copy if C
    if (r != 1 and r != gr) or (c != 1 and c != gc):
        raise ValueError(_SHAPE_MISMATCH)
    out = np.zeros((r, c), g.dtype)
    for i in range(gr):
        for j in range(gc):
            out[min(i, r - 1), min(j, c - 1)] += g[i, j]
    return out


@numba.njit
def sum_to_shape_3d(g, like):
    p, r, c = like.shape[0], like.shape[1], like.shape[2]
    gp, gr, gc = g.shape[0], g.shape[1], g.shape[2]
    if (gp == p or gp == 1) and (gr == r or gr == 1) and (gc == c or gc == 1):
        return np.ascontiguousarray(g)  # as it is (`+=` stretches length-1 axes); no copy if C
    if (p != 1 and p != gp) or (r != 1 and r != gr) or (c != 1 and c != gc):
        raise ValueError(_SHAPE_MISMATCH)
    out = np.zeros((p, r, c), g.dtype)
    for h in range(gp):
        for i in range(gr):
            for j in range(gc):
                out[min(h, p - 1), min(i, r - 1), min(j, c - 1)] += g[h, i, j]
    return out


@numba.njit
def same_size_or_raise(g, like):
    """More than 3 dimensions: no broadcasting over axes of length 1 in reverse mode."""
    if g.size != like.size:
        raise ValueError("moonlite: broadcasting over axes of length 1 of arrays with more "
                         "than 3 dimensions is not supported in reverse mode")
    return np.ascontiguousarray(g)


SUM_TO_SHAPE = {1: sum_to_shape_1d, 2: sum_to_shape_2d, 3: sum_to_shape_3d}


# --- tapes crossing between the sweep and the pullback of a vjp (reverse_split.py) ------------

@numba.njit
def tape_as_array(tape):
    return np.asarray(tape)


@numba.njit
def tape_from_array(values):
    return list(values)


@numba.njit
def tape_as_typed_list(tape):
    out = numba.typed.List()
    for item in tape:
        out.append(item)
    return out


@numba.njit
def tape_from_typed_list(items):
    return list(items)


@numba.njit
def add_cumsum_adjoint(dy, gx, axis):
    # y = cumsum(x, axis): dx[..., j, ...] += sum of dy[..., j:, ...] along the axis. The array
    # is viewed as (before, along, after) in C order, whatever its number of dimensions.
    shape = dy.shape
    axis = axis % len(shape)
    before, after = 1, 1
    for d in range(len(shape)):
        if d < axis:
            before *= shape[d]
        elif d > axis:
            after *= shape[d]
    along = shape[axis]
    d3 = np.ascontiguousarray(dy).reshape((before, along, after))
    out = np.empty((before, along, after), dy.dtype)
    for i in range(before):
        for k in range(after):
            acc = np.zeros(1, dy.dtype)[0]
            for j in range(along - 1, -1, -1):
                acc += d3[i, j, k]
                out[i, j, k] = acc
    gx += out.reshape(shape)
    return None
