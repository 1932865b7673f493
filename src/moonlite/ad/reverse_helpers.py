"""njit helpers the reverse pass calls for reductions whose adjoint is not a one-liner.

Each adds into the shadow `gx` of the reduced array `x` (any number of dimensions, any layout),
addressing both through their flat (C-order) index, as np.argmax does.
"""

import numba
import numpy as np


@numba.njit
def add_at_argmax(x, gx, adjoint):
    # np.max picks the first maximum; its adjoint goes there (the derivative from that side)
    i = np.argmax(x)
    gx.flat[i] = gx.flat[i] + adjoint
    return None


@numba.njit
def add_at_argmin(x, gx, adjoint):
    i = np.argmin(x)
    gx.flat[i] = gx.flat[i] + adjoint
    return None


@numba.njit
def add_prod_adjoint(x, gx, adjoint):
    # d prod / d x_i = prod of the other entries: prefix times suffix products, exact with zeros
    values = np.ascontiguousarray(x).ravel()
    n = values.shape[0]
    prefix = np.ones(n)
    for i in range(1, n):
        prefix[i] = prefix[i - 1] * values[i - 1]
    suffix = 1.0
    for i in range(n - 1, -1, -1):
        gx.flat[i] = gx.flat[i] + adjoint * prefix[i] * suffix
        suffix *= values[i]
    return None


@numba.njit
def add_to_diagonal(gx, adjoint):
    for i in range(min(gx.shape[0], gx.shape[1])):
        gx[i, i] += adjoint
    return None


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
            acc = dy.dtype.type(0)
            for j in range(along - 1, -1, -1):
                acc += d3[i, j, k]
                out[i, j, k] = acc
    gx += out.reshape(shape)
    return None
