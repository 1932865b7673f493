"""numpy's reductions: np.sum, np.mean, np.cumsum, np.trace, np.prod, np.max/np.min (and their
method forms), np.median and np.linalg.norm, each registered once with its forward rule, its adjoint, what
the adjoint reads and the keywords it reads (`registry.py`). Their test cases are at
the bottom (`CASES`), and in the systematic suite (`tests/rules/`).

The njit helpers here are plain njit code without `.flat` (which forward mode does not
differentiate), so forward mode over a reverse rule (Hessians) differentiates them like any
other njit callee.
"""

from __future__ import annotations

from .. import _numba as nb
import numpy as np

from ..ir.types import ArrayType, int64, none
from .define import (Method, RuleNotApplicable, defrule, linear_call, linear_method,
                     piecewise_constant, positional_only)
from .operands import (describe, first_optional, keyword_values, name_of, positional,
                       reads_all, reads_first, reads_options)
from .registry import register, register_each
from .cases import MAT as _MAT, VEC as _VEC, NumpyRuleCase, array_case as _E
from .cases import uniform as _uniform, with_zeros as _with_zeros


def _is_array(v) -> bool:
    return isinstance(v.type, ArrayType)


# --- sums, means, running sums, traces: linear ---------------------------------------------------

def _sum_adjoint(rv, op) -> None:
    axis = first_optional(op)
    axis = rv.recall(axis[0]) if axis else None  # (recalled once whatever follows: it was kept)
    operand = positional(op)[0]
    if axis is None or op.result.type.is_scalar:  # (a 1-d array summed along its only axis)
        return rv.send_to_every_entry(operand, rv.take_adjoint(op.result))
    dy = rv.shadow(op.result)
    if dy is not None:
        rv.send(operand, rv.b.call(np.expand_dims, [dy, axis]))


def _mean_adjoint(rv, op) -> None:
    operand = positional(op)[0]
    x = rv.recall(operand)
    size = rv.b.cast(rv.b.getattr(x, "size"), op.result.type)
    rv.send_to_every_entry(operand, rv.b.div(rv.take_adjoint(op.result), size))


def _cumsum_adjoint(rv, op) -> None:
    operand = positional(op)[0]
    dy = rv.shadow(op.result)
    axis = first_optional(op)
    if dy is None:
        return
    b = rv.b
    if axis:
        gx = rv.shadow(operand)
        if gx is not None:
            b.call(add_cumsum_adjoint, [dy, gx, rv.recall(axis[0])], type=none)
        return
    # no axis: cumsum works on the flattened array; its adjoint is a reversed cumsum
    backwards = b.build_slice(b.const(None, none), b.const(None, none), b.const(-1, int64))
    sums = b.getitem(b.call(np.cumsum, [b.getitem(dy, backwards)]), backwards)
    if operand.type.ndim > 1:
        shape = b.getattr(rv.recall(operand), "shape")
        sums = b.method_call("reshape", b.method_call("copy", sums, []), [shape])
    rv.send(operand, sums)


def _trace_adjoint(rv, op) -> None:
    shadow = rv.shadow(positional(op)[0])
    adjoint = rv.take_adjoint(op.result)
    offset = first_optional(op)
    offset = rv.recall(offset[0]) if offset else rv.b.const(0, int64)
    if shadow is not None:
        rv.b.call(add_to_diagonal, [shadow, adjoint, offset], type=none)


@nb.njit(cache=True)
def add_to_diagonal(gx, adjoint, k):
    """gx's diagonal k += adjoint: the adjoint of np.trace(x, k)."""
    for i in range(gx.shape[0]):
        if 0 <= i + k < gx.shape[1]:
            gx[i, i + k] += adjoint
    return None


@nb.njit(cache=True)
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


for _fn, _adjoint, _reads, _keywords in [(np.sum, _sum_adjoint, reads_options, ("axis",)),
                                         (np.mean, _mean_adjoint, reads_first, ()),
                                         (np.cumsum, _cumsum_adjoint, reads_all, ("axis",)),
                                         (np.trace, _trace_adjoint, reads_options, ("offset",))]:
    register(_fn, jvp=linear_call(_fn), adjoint=_adjoint, reads=_reads, keywords=_keywords)
    if _fn is not np.trace:
        register(Method(_fn.__name__), jvp=linear_method(_fn.__name__), adjoint=_adjoint,
                 reads=_reads, keywords=_keywords)


# --- products and extrema of a whole array -------------------------------------------------------

@nb.njit(cache=False, error_model="numpy")
def prod_tangent(x, dx):
    """sum_i dx_i prod_{j != i} x_j, by suffix products and a running prefix product: no
    division, so exact zeros in x are handled."""
    xs, ds = np.ravel(x), np.ravel(dx)
    n = xs.size
    suffix = np.empty(n + 1)
    suffix[n] = 1.0
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] * xs[i]
    prefix, total = 1.0, 0.0
    for i in range(n):
        total += ds[i] * prefix * suffix[i + 1]
        prefix *= xs[i]
    return total


@nb.njit(cache=False, error_model="numpy")
def argmax_tangent(x, dx):
    """The tangent of x's (first) largest element, both read in C order."""
    return np.ravel(dx)[np.argmax(x)]


@nb.njit(cache=False, error_model="numpy")
def argmin_tangent(x, dx):
    return np.ravel(dx)[np.argmin(x)]


@nb.njit(cache=True)
def one_at_argmax(x):
    # np.max picks the first maximum; its adjoint goes there (the derivative from that side)
    out = np.zeros(x.size, x.dtype)
    out[np.argmax(x)] = 1
    return out.reshape(x.shape)


@nb.njit(cache=True)
def one_at_argmin(x):
    out = np.zeros(x.size, x.dtype)
    out[np.argmin(x)] = 1
    return out.reshape(x.shape)


@nb.njit(cache=True)
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


def _whole_array(helper):
    """Forward rule of a reduction over the whole array (numba supports no axis for these)."""

    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 1)
        if not _is_array(primals[0]):
            raise RuleNotApplicable("the rule reduces arrays only")
        return b.call(helper, [primals[0], tangents[0]])

    return rule


def _reduction_adjoint(derivative):
    """dx += adjoint * derivative(x), for a reduction of the whole array."""

    def adjoint(rv, op) -> None:
        if keyword_values(op) or len(positional(op)) > 1:
            raise rv.unsupported(op, f"{describe(op)} with an axis in reverse mode",
                                 "reduce the whole array")
        operand = positional(op)[0]
        dy = rv.take_adjoint(op.result)
        if rv.shadow(operand) is not None:
            x = rv.recall(operand)
            rv.send(operand, rv.b.mul(rv.b.call(derivative, [x]), dy))

    return adjoint


def _extremum_adjoint(rv, op) -> None:
    pick = one_at_argmax if name_of(op) in ("max", "amax") else one_at_argmin
    return _reduction_adjoint(pick)(rv, op)


for _keys, _tangent, _adjoint in [
        ((np.prod, Method("prod")), prod_tangent, _reduction_adjoint(product_of_others)),
        ((np.max, np.amax, Method("max")), argmax_tangent, _extremum_adjoint),
        ((np.min, np.amin, Method("min")), argmin_tangent, _extremum_adjoint)]:
    register_each(_keys, jvp=_whole_array(_tangent), adjoint=_adjoint, reads=reads_first,
                  keywords=())

# the adjoints' one-hot weights: forward mode over a reverse rule takes their zero tangent
# rather than capturing them (0.16 s of numba typing in a first Hessian of np.max)
for _weights in (one_at_argmax, one_at_argmin):
    piecewise_constant(_weights)


# --- the median: the entry (or the two entries) in the middle --------------------------------

@nb.njit(cache=True)
def median_weights(x):
    """d median(x) / dx: 1 at the middle entry of x in sorted order (an odd count), 1/2 at each
    of the two middle ones (an even count), 0 elsewhere, in x's shape. Where x holds a nan,
    numba's median is whatever its selection leaves there, and the derivative is nan."""
    values = np.ravel(x)
    n = values.size
    out = np.zeros(n, x.dtype)
    if np.isnan(values).any():
        out[:] = np.nan
    elif n > 0:
        order = np.argsort(values, kind="mergesort")  # (ties: one side's derivative)
        if n % 2 == 1:
            out[order[n // 2]] = 1
        else:
            out[order[n // 2 - 1]] = 0.5
            out[order[n // 2]] = 0.5
    return out.reshape(x.shape)


@nb.njit(cache=False, error_model="numpy")
def median_tangent(x, dx):
    return np.sum(median_weights(x) * dx)


register_each((np.median,), jvp=_whole_array(median_tangent),
              adjoint=_reduction_adjoint(median_weights), reads=reads_first, keywords=())
piecewise_constant(median_weights)


# --- the norm ------------------------------------------------------------------------------------

def _norm_rule(b, primals, tangents, kwargs):
    # The default norm (2-norm of a vector, Frobenius of a matrix): <x, dx> / |x|; a vector's
    # norm of another order: <d|x|_p/dx, dx>.
    if kwargs or len(primals) not in (1, 2):
        raise RuleNotApplicable("np.linalg.norm(x) and np.linalg.norm(x, ord) are "
                                "differentiated (no axis)")
    x, dx = primals[0], tangents[0]
    if len(primals) == 2:
        if x.type.ndim != 1 or tangents[1] is not None:
            raise RuleNotApplicable("a norm with an order is differentiated for vectors, in "
                                    "the vector (not the order)")
        return b.call(np.sum, [b.mul(b.call(vector_norm_gradient, primals), dx)])
    return b.call(np.sum, [b.mul(b.call(norm_direction, [x]), dx)])


def _norm_adjoint(rv, op) -> None:
    args = positional(op)
    if keyword_values(op) or len(args) > 2 or len(args) == 2 and (
            args[0].type.ndim != 1 or args[1] in rv.varied):
        raise rv.unsupported(op, f"{describe(op)} with an axis, of a matrix with an order, or "
                             f"differentiated in its order, in reverse mode",
                             "compute the norm with np.sqrt(np.sum(x * x))")
    operand = args[0]
    x = rv.recall(operand)
    dy = rv.take_adjoint(op.result)
    if len(args) == 2:
        gradient = rv.b.call(vector_norm_gradient, [x, rv.recall(args[1])])
        return rv.send(operand, rv.b.mul(gradient, dy))
    rv.send(operand, rv.b.mul(rv.b.call(norm_direction, [x]), dy))


@nb.njit(cache=True)
def norm_direction(x):
    """x / np.linalg.norm(x) (the default norm's derivative), 0 at x = 0: a kink, where 0 is
    what the strong products give np.sqrt(np.sum(x * x)); 0 / 0 gave nan (a pairwise
    energy over every pair i, j, i == j included, had an all-nan gradient)."""
    norm = np.linalg.norm(x)
    out = np.zeros(x.shape, x.dtype)
    if norm != 0.0:
        out += x
        out /= norm
    return out


@nb.njit(cache=True)
def vector_norm_gradient(x, order):
    """d np.linalg.norm(x, order) / dx for a vector x: sign(x) for order 1, x / |x| for 2, the
    sign at the first entry largest (smallest) in magnitude for inf (-inf), none for 0 (a
    count), sign(x) |x|^(p-1) / |x|_p^(p-1) for another p."""
    out = np.zeros(x.shape[0])
    p = float(order)
    if p == np.inf or p == -np.inf:
        magnitudes = np.abs(x)
        k = np.argmax(magnitudes) if p > 0 else np.argmin(magnitudes)
        out[k] = np.sign(x[k])
    elif p == 1.0:
        out[:] = np.sign(x)
    elif p != 0.0:
        norm = np.linalg.norm(x, order)
        if norm != 0.0:  # (0 at x = 0, as norm_direction)
            out[:] = np.sign(x) * np.abs(x) ** (p - 1.0) / norm ** (p - 1.0)
    return out


defrule(np.linalg.norm, _norm_rule)
register(np.linalg.norm, adjoint=_norm_adjoint, reads=reads_all, keywords=())


# --- test cases (checked in every mode against finite differences) ---------------------------

CASES = [
    _E("sum", lambda x: np.sum(x), _MAT),
    _E("sum_axis", lambda x: np.sum(x, axis=0), _MAT),
    _E("sum_axis_positional", lambda x: np.sum(x, 1), _MAT),
    _E("mean", lambda x: np.mean(x), _MAT),
    _E("prod", lambda x: np.prod(x), _uniform(0.5, 1.5, 3, 4)),
    NumpyRuleCase("prod_one_zero", lambda x: np.prod(x), lambda rng: (_with_zeros(5)(rng),),
                  (0,)),
    NumpyRuleCase("prod_two_zeros", lambda x: np.prod(x) + np.sum(x),
                  lambda rng: (_with_zeros(2, 9)(rng),), (0,)),
    _E("max", lambda x: np.max(x), _MAT),
    _E("min", lambda x: np.min(x), _MAT),
    _E("amax", lambda x: np.amax(x), _MAT),
    _E("amin", lambda x: np.amin(x), _MAT),
    _E("max_of_transpose", lambda x: np.max(x.T), _MAT),
    _E("median_odd", lambda x: np.median(x), _uniform(-2.0, 2.0, 7)),
    _E("median_even", lambda x: np.median(x), _MAT),
    _E("median_of_transpose", lambda x: np.median(x.T * x.T), _MAT),
    _E("cumsum", lambda x: np.cumsum(x), _MAT),
    _E("cumsum_axis", lambda x: np.cumsum(x, axis=1), _MAT),
    _E("cumsum_axis_0_of_3d", lambda x: np.cumsum(x, axis=0), _uniform(-2.0, 2.0, 3, 2, 4)),
    _E("cumsum_negative_axis", lambda x: np.cumsum(x, axis=-1), _MAT),
    _E("trace", lambda x: np.trace(x), _uniform(-2.0, 2.0, 4, 4)),
    _E("norm_vector", lambda x: np.linalg.norm(x), _VEC),
    _E("norm_matrix", lambda x: np.linalg.norm(x), _MAT),
    _E("norm_1", lambda x: np.linalg.norm(x, 1), _VEC),
    _E("norm_inf", lambda x: np.linalg.norm(x, np.inf) ** 2, _VEC),
    _E("norm_minus_inf", lambda x: np.linalg.norm(x, -np.inf), _VEC),
    _E("norm_3", lambda x: np.linalg.norm(x, 3) * x[0], _VEC),
    _E("norm_2_given", lambda x: np.linalg.norm(x, 2), _VEC),
    _E("method_sum", lambda x: x.sum(), _MAT),
    _E("method_sum_axis", lambda x: x.sum(axis=1), _MAT),
    _E("method_mean", lambda x: x.mean(), _MAT),
    _E("method_prod", lambda x: x.prod(), _uniform(0.5, 1.5, 3, 4)),
    _E("method_max", lambda x: x.max(), _MAT),
    _E("method_min", lambda x: x.min(), _MAT),
    _E("method_cumsum", lambda x: x.cumsum(), _MAT),
]
