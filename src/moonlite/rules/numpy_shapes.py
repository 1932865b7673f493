"""numpy functions that move entries without combining them: copies, reshapes, views (transposes),
joins (np.concatenate, np.stack, ...), triangles and diagonals, fills, sorts (each row), and
allocations. Each is
registered once with its forward rule (the same call on the tangent: they are linear), its
adjoint, what the adjoint reads, the keywords it reads and its traits (`registry.py`). Their test
cases are at the bottom (`CASES`), and in the systematic suite (`tests/rules/`).
"""

from __future__ import annotations

from .. import _numba as nb
import numpy as np

from ..ir import ops
from ..ir.traits import ALLOCATES, AXES_VIEW, VIEW
from ..ir.types import ArrayType, from_numba, int64, none
from .define import (Attribute, Method, RuleNotApplicable, defzero, linear_attribute, linear_call,
               linear_method, no_adjoint, positional_only)
from .operands import (describe, keyword_values, positional, reads_first, reads_nothing,
                       reads_options)
from .registry import ANY_KEYWORD, has_adjoint, register
from .cases import MAT as _MAT, VEC as _VEC, array_case as _E, uniform as _uniform


# --- copies and reshapes -------------------------------------------------------------------------

def _copy_adjoint(rv, op) -> None:
    rv.send(positional(op)[0], rv.shadow(op.result))


def _reshape_adjoint(rv, op) -> None:
    """reshape, ravel, expand_dims: the result's shadow, reshaped back (they may copy: a
    non-contiguous input, so the result has a shadow of its own)."""
    operand = positional(op)[0]
    shadow_out = rv.shadow(op.result)
    if shadow_out is None:
        return
    shape = rv.b.getattr(rv.recall(operand), "shape")
    back = rv.b.method_call("reshape", rv.b.method_call("copy", shadow_out, []), [shape])
    rv.send(operand, back)


for _fn, _adjoint, _reads in [(np.copy, _copy_adjoint, reads_nothing),
                              (np.ascontiguousarray, _copy_adjoint, reads_nothing),
                              (np.asfortranarray, _copy_adjoint, reads_nothing),
                              (np.ravel, _reshape_adjoint, reads_first)]:
    register(_fn, jvp=linear_call(_fn), adjoint=_adjoint, reads=_reads, keywords=())
for _name, _adjoint, _reads in [("copy", _copy_adjoint, reads_nothing),
                                ("ravel", _reshape_adjoint, reads_first)]:
    register(Method(_name), jvp=linear_method(_name), adjoint=_adjoint, reads=_reads,
             keywords=())


@nb.njit
def c_layout(a):
    """`a` itself, typed C-contiguous: the tangent of an array typed C that reaches derived
    code typed of any layout (a tangent tape holds views of every layout: `forward.py:
    on_tape_new`), where numba's `reshape` would refuse that type. Such a tangent is contiguous
    at run time (a C array's tangent is made or given in its layout); were it not, the copy
    numba's `ascontiguousarray` made would lose writes through the view: that raises."""
    if not a.flags.c_contiguous:
        raise ValueError("moonlite internal error: the tangent of a C-contiguous array is not "
                         "contiguous (please report this)")
    return np.ascontiguousarray(a)


def _c_layout_jvp(b, primals, tangents, kwargs):
    return None if tangents[0] is None else as_c_layout(b, tangents[0])


register(c_layout, jvp=_c_layout_jvp, adjoint=no_adjoint, reads=reads_nothing, keywords=(),
         traits=AXES_VIEW | VIEW)


def as_c_layout(b, tangent):
    """`tangent` typed C-contiguous (`c_layout`), if it is an array typed otherwise."""
    t = tangent.type
    if not isinstance(t, ArrayType) or t.layout == "C":
        return tangent
    return b.call(c_layout, [tangent], type=ArrayType(t.dtype, t.ndim, "C", t.readonly))


def _reshape_jvp(b, primals, tangents, kwargs):
    """`np.reshape(da, shape)`, `da` retyped C where the tangent of a C array came typed of
    any layout (numba reshapes contiguous arrays only)."""
    if tangents[0] is None:
        return None
    return b.call(np.reshape, [as_c_layout(b, tangents[0]), *primals[1:]], kwargs)


def _reshape_method_jvp(b, primals, tangents, kwargs):
    if tangents[0] is None:
        return None
    return b.method_call("reshape", as_c_layout(b, tangents[0]), list(primals[1:]), kwargs)


# numba's reshape takes contiguous arrays only and never copies, and its expand_dims is always
# a view: the result's shadow is the same view of the operand's shadow, so writes through the
# result, and writes into the operand read back through the result, reach the gradient
register(np.reshape, jvp=_reshape_jvp, adjoint=no_adjoint, reads=reads_nothing, keywords=(),
         traits=AXES_VIEW | VIEW)
register(np.expand_dims, jvp=linear_call(np.expand_dims), adjoint=no_adjoint,
         reads=reads_nothing, keywords=(), traits=AXES_VIEW | VIEW)
register(Method("reshape"), jvp=_reshape_method_jvp, adjoint=no_adjoint,
         reads=reads_nothing, keywords=(), traits=AXES_VIEW | VIEW)



# --- a.astype(dtype): a copy converted entry by entry ------------------------------------------

def _astype_target(dtype: "ops.Value"):
    """The numba dtype `a.astype(dtype)` converts to, for `dtype` a number class
    (`np.float64`); RuleNotApplicable for anything else (a string, a np.dtype object)."""
    cls = getattr(dtype.type, "numba_type", None)
    if not isinstance(cls, nb.types.NumberClass):
        raise RuleNotApplicable("astype() is differentiated with a number class as its dtype "
                                "(np.float64, np.float32)")
    return cls.instance_type


def _astype_tangent(b, primals, tangents, kwargs):
    """Linear where both dtypes are floats; a float result of ints or bools, or an int result,
    has tangent zero."""
    positional_only(kwargs, primals, 2)
    a, dtype = primals
    target = _astype_target(dtype)
    if tangents[0] is None or not isinstance(target, nb.types.Float) \
            or not a.type.dtype.is_float:
        return None
    return b.method_call("astype", tangents[0], [dtype])


def _astype_adjoint(rv, op) -> None:
    a, dtype = positional(op)
    target = _astype_target(dtype)
    g = rv.shadow(op.result)
    if g is None or not a.type.dtype.is_float or not isinstance(target, nb.types.Float):
        return
    if a.type.dtype != g.type.dtype:  # converted back to the operand's width
        source = a.type.dtype.to_numba()
        g = rv.b.method_call("astype", g, [rv.b.global_ref(
            np.dtype(str(source)).type, from_numba(nb.types.NumberClass(source)))])
    rv.send(a, g)


register(Method("astype"), jvp=_astype_tangent, adjoint=_astype_adjoint, reads=reads_nothing,
         keywords=())


# --- views: their shadows are the same views of their sources' shadows --------------------------

# always a view of the first argument, its axes permuted: a write through the view reaches the
# argument's gradient, and nothing needs sending back
for _fn in (np.transpose, np.swapaxes, np.moveaxis):
    register(_fn, jvp=linear_call(_fn), adjoint=no_adjoint, reads=reads_nothing, keywords=(),
             traits=AXES_VIEW | VIEW)
register(Method("transpose"), jvp=linear_method("transpose"), adjoint=no_adjoint,
         reads=reads_nothing, keywords=(), traits=AXES_VIEW | VIEW)
register(Attribute("T"), jvp=linear_attribute("T"))

# may return a view of their argument: a write to the result may write the argument (what
# `ir/readonly.py` asks)
for _name in ("ravel", "ascontiguousarray", "asfortranarray", "squeeze",
              "atleast_1d", "atleast_2d", "atleast_3d", "diagonal", "real", "imag", "rot90",
              "broadcast_to"):
    register(getattr(np, _name), traits=VIEW)
# (np.flip, np.fliplr and np.flipud, views too, are registered with their rules in
# numpy_flips.py)


# --- joins: np.concatenate, np.stack, np.vstack, np.hstack ---------------------------------------

def _join_adjoint(rv, op) -> None:
    """Each piece's shadow gets its part of the result's shadow (pieces of a tuple built in the
    kernel)."""
    g = rv.shadow(op.result)
    pieces = positional(op)[0]
    builder = getattr(pieces, "op", None)
    if g is None:
        return
    if not isinstance(builder, ops.BuildTuple):
        raise rv.unsupported(op, f"{describe(op)} of a tuple not built in the kernel, in "
                             "reverse mode", "pass the arrays as a tuple literal: "
                             "np.concatenate((a, b))")
    stacked, axis = _join_kind(op, pieces.type.elements[0].ndim)
    if axis is None:
        raise rv.unsupported(op, f"{describe(op)} along an axis computed at run time, in "
                             "reverse mode", "write the axis as a constant")
    b = rv.b
    axis_value = b.const(axis % g.type.ndim, int64)
    start = b.const(0, int64)
    for k, item in enumerate(builder.items):
        shadow = rv.shadow(item) if has_adjoint(item.type) else None
        if stacked:
            if shadow is not None:
                b.call(add_stacked_piece, [shadow, g, b.const(k, int64), axis_value], type=none)
            continue
        if shadow is not None:
            b.call(add_concatenated_piece, [shadow, g, start, axis_value], type=none)
        if k + 1 < len(builder.items):
            length = b.getitem(b.getattr(rv.recall(item), "shape"), axis_value, type=int64)
            start = b.add(start, length)


def _join_reads(op) -> set:
    """A join's pullback reads the pieces (their lengths along the axis)."""
    builder = getattr(positional(op)[0], "op", None)
    return set(builder.items) if isinstance(builder, ops.BuildTuple) else {positional(op)[0]}


def _join_kind(op, piece_ndim: int) -> tuple:
    """(stacked, axis) of a join: stack adds an axis, concatenate extends one."""
    fn = op.callee
    if fn is np.vstack:
        return (piece_ndim == 1, 0)
    if fn is np.hstack:
        return (False, 0 if piece_ndim == 1 else 1)
    return (fn is np.stack, _constant_axis(op))


def _constant_axis(op):
    values = list(keyword_values(op)) + list(positional(op)[1:])
    if not values:
        return 0
    const = getattr(values[0], "op", None)
    if not isinstance(const, ops.Constant):
        return None  # not known when the rule is built: refused by the caller
    return int(const.value)


@nb.njit(cache=True)
def add_concatenated_piece(shadow, g, start, axis):
    """shadow += the piece of g that concatenate took from shadow's array, starting at `start`
    along `axis` (the adjoint of np.concatenate is a split)."""
    n = shadow.shape[axis]
    shadow += np.swapaxes(np.swapaxes(g, 0, axis)[start:start + n], 0, axis)
    return None


@nb.njit(cache=True)
def add_stacked_piece(shadow, g, k, axis):
    """shadow += entry k of g along the new `axis` np.stack made. (moveaxis, not swapaxes:
    swapping axes 0 and 2 of a 3-d g also reverses the piece's own axes, and numba's `+=`
    does not check shapes: stacking matrices along axis -1 had a wrong gradient.)"""
    shadow += np.moveaxis(g, axis, 0)[k]
    return None


for _fn in (np.concatenate, np.stack, np.vstack, np.hstack):
    register(_fn, jvp=linear_call(_fn), adjoint=_join_adjoint, reads=_join_reads,
             keywords=("axis",))


# --- triangles and diagonals: self-adjoint -------------------------------------------------------

def _self_adjoint(rv, op) -> None:
    """np.tril, np.triu, and np.diag of a vector: the adjoint of x -> f(x, k) is g -> f(g, k)
    (a triangle mask is a projection; diag(v, k) places v on diagonal k and diag(G, k) reads
    it back)."""
    shadow_out = rv.shadow(op.result)
    if shadow_out is None:
        return
    operand, rest = positional(op)[0], [rv.recall(v) for v in positional(op)[1:]]
    if op.callee is np.diag and operand.type.ndim == 2:  # diag of a matrix: a vector
        shadow = rv.shadow(operand)
        if shadow is not None:
            k = rest[0] if rest else rv.b.const(0, int64)
            rv.b.call(add_along_diagonal, [shadow, shadow_out, k], type=none)
        return
    rv.send(operand, rv.b.call(op.callee, [shadow_out, *rest]))


@nb.njit(cache=True)
def add_along_diagonal(gx, g, k):
    """gx's diagonal k += g: the adjoint of np.diag(x, k) for a matrix x (any shape)."""
    for i in range(g.shape[0]):
        if k >= 0:
            gx[i, i + k] += g[i]
        else:
            gx[i - k, i] += g[i]
    return None


for _fn in (np.diag, np.tril, np.triu):
    register(_fn, jvp=linear_call(_fn), adjoint=_self_adjoint, reads=reads_options, keywords=())


# --- fills and allocations -----------------------------------------------------------------------

def _full_rule(b, primals, tangents, kwargs):
    """np.full(shape, v) / np.full_like(a, v): the tangent is filled with dv."""
    if tangents[0] is not None and primals[0].type.is_scalar:
        raise RuleNotApplicable("the shape argument carries no tangent")
    dv = tangents[1] if len(tangents) > 1 else None
    if dv is None:
        return None
    like = isinstance(primals[0].type, ArrayType)
    return b.call(np.full_like if like else np.full, [primals[0], dv], kwargs)


def _full_adjoint(rv, op) -> None:
    """v gets the sum of the result's adjoint (a's values do not matter, only its shape)."""
    values = list(positional(op)[1:2]) + [v for k, v in op.keywords.items()
                                          if k == "fill_value"]
    dy = rv.shadow(op.result)
    if dy is not None and values and has_adjoint(values[0].type):
        rv.send(values[0], dy)


for _fn in (np.full, np.full_like):
    register(_fn, jvp=_full_rule, adjoint=_full_adjoint, reads=reads_nothing,
             keywords=("fill_value",))

# Allocations take only the shape (and dtype) of their argument: a fresh array whose tangent is
# zero (the forward pass materialises a zero array for it, which later writes update), from
# which nothing flows back.
for _fn in (np.empty_like, np.zeros_like, np.ones_like, np.empty, np.zeros, np.ones):
    defzero(_fn)
for _fn in (np.empty_like, np.zeros_like, np.ones_like, np.empty, np.zeros, np.ones, np.eye,
            np.identity, np.tri):
    register(_fn, adjoint=no_adjoint, keywords=ANY_KEYWORD, traits=ALLOCATES)

register(len, adjoint=no_adjoint, keywords=())


# --- np.diff: differences of neighbours (the worked example of docs/rules.md) ------------------

def _diff_adjoint(rv, op) -> None:
    """y = np.diff(x) of a vector, y[k] = x[k + 1] - x[k]: x[k] gets g[k - 1] - g[k]."""
    x = positional(op)[0]
    if len(positional(op)) > 1 or x.type.ndim != 1:
        raise rv.unsupported(op, f"{describe(op)} of a matrix or with n > 1, in reverse mode",
                             "apply np.diff to vectors, once per order")
    g = rv.shadow(op.result)
    if g is not None:
        rv.send(x, rv.b.call(diff_adjoint, [g]))


@nb.njit(cache=True)
def diff_adjoint(g):
    dx = np.zeros(g.shape[0] + 1, g.dtype)
    for k in range(g.shape[0]):
        dx[k] -= g[k]
        dx[k + 1] += g[k]
    return dx


register(np.diff, jvp=linear_call(np.diff), adjoint=_diff_adjoint, reads=reads_nothing,
         keywords=())


# --- np.sort: each row's entries (along the last axis) in sorted order ------------------------

def _sort_rule(b, primals, tangents, kwargs):
    positional_only(kwargs, primals, 1)
    return b.call(sorted_like, [primals[0], tangents[0]])


def _sort_adjoint(rv, op) -> None:
    """y = np.sort(x), y[..., k] = x[..., order[k]] row by row: x[..., order[k]] gets
    g[..., k]."""
    x = positional(op)[0]
    if len(positional(op)) > 1 or keyword_values(op):
        raise rv.unsupported(op, f"{describe(op)} with an axis or kind, in reverse mode",
                             "sort along the last axis (np.sort(x))")
    g = rv.shadow(op.result)
    if g is not None:
        rv.send(x, rv.b.call(unsorted, [rv.recall(x), g]))


@nb.njit(cache=True)
def _rows(a):
    """`a` as a C-contiguous 2-D array of its last-axis rows (a view when it can be)."""
    n = a.shape[-1] if a.ndim > 0 else 1
    return np.ascontiguousarray(a).reshape((a.size // max(n, 1), n))


@nb.njit(cache=True)
def sorted_like(x, dx):
    """dx's entries in the order np.sort puts x's, row by row along the last axis (numba sorts
    each row with the quicksort its argsort uses: the same nan-last order; entries that tie are
    equal, so which goes first changes no value)."""
    xs, ds = _rows(x), _rows(dx)
    out = np.empty(xs.shape, dx.dtype)
    for r in range(xs.shape[0]):
        order = np.argsort(xs[r])
        for k in range(order.shape[0]):
            out[r, k] = ds[r, order[k]]
    return out.reshape(x.shape)


@nb.njit(cache=True)
def unsorted(x, g):
    """The adjoint of np.sort(x): g's entries sent back to where np.sort took them from."""
    xs, gs = _rows(x), _rows(g)
    dx = np.empty(xs.shape, g.dtype)
    for r in range(xs.shape[0]):
        order = np.argsort(xs[r])
        for k in range(order.shape[0]):
            dx[r, order[k]] = gs[r, k]
    return dx.reshape(x.shape)


register(np.sort, jvp=_sort_rule, adjoint=_sort_adjoint, reads=reads_first, keywords=())


# --- test cases (checked in every mode against finite differences) ---------------------------

CASES = [
    _E("astype", lambda x: x.astype(np.float64) * x.T.astype(np.float64).T, _MAT),
    _E("astype_of_ints", lambda x: np.arange(5).astype(np.float64) * x, _VEC),
    _E("sort", lambda x: np.sort(x) * np.arange(1.0, 6.0), _VEC),
    _E("sort_of_a_row", lambda x: np.sort(x[1] * x[1]) ** 2, _MAT),
    _E("sort_of_a_matrix", lambda x: np.sort(x * x[::-1]) * np.arange(1.0, 5.0), _MAT),
    _E("diff", lambda x: np.diff(x), _VEC),
    _E("diff_of_rows", lambda x: np.diff(x), _MAT),  # forward mode: along the last axis
    _E("diff_second_order", lambda x: np.diff(x, 2), _VEC),  # forward mode
    _E("concatenate", lambda x, y: np.concatenate((x, y)) * 2.0, _VEC, _uniform(-2.0, 2.0, 3)),
    _E("concatenate_axis_1", lambda x, y: np.concatenate((x, y), axis=1) ** 2, _MAT,
       _uniform(-2.0, 2.0, 3, 2)),
    _E("concatenate_three", lambda x, y: np.concatenate((x, y, x * y)), _VEC, _VEC),
    _E("stack", lambda x, y: np.stack((x, y)) ** 2, _VEC, _VEC),
    _E("stack_axis_1", lambda x, y: np.stack((x, y), axis=1) ** 2, _VEC, _VEC),
    _E("vstack", lambda x, y: np.vstack((x, y)) ** 2, _VEC, _VEC),
    _E("hstack_matrices", lambda x, y: np.hstack((x, y)) ** 2, _MAT, _MAT),
    _E("diag_of_matrix", lambda x: np.diag(x), _MAT),
    _E("diag_of_vector", lambda x: np.diag(x), _VEC),
    _E("diag_offset", lambda x: np.diag(x, 1) * 2.0, _uniform(-2.0, 2.0, 4, 4)),
    _E("tril", lambda x: np.tril(x), _MAT),
    _E("tril_offset", lambda x: np.tril(x, -1), _uniform(-2.0, 2.0, 4, 4)),
    _E("triu", lambda x: np.triu(x, 1), _MAT),
    _E("transpose", lambda x: np.transpose(x), _MAT),
    _E("transpose_axes", lambda x: np.transpose(x, (1, 0)), _MAT),
    _E("copy", lambda x: np.copy(x), _MAT),
    _E("ascontiguousarray", lambda x: np.ascontiguousarray(x.T) * 2.0, _MAT),
    _E("asfortranarray", lambda x: np.asfortranarray(x) * 2.0, _MAT),
    _E("asfortranarray_of_a_transpose", lambda x: np.sin(np.asfortranarray(x.T)), _MAT),
    _E("ravel", lambda x: np.ravel(x), _MAT),
    _E("reshape", lambda x: np.reshape(x, (4, 3)), _MAT),
    _E("method_copy", lambda x: x.copy(), _MAT),
    _E("method_ravel", lambda x: x.ravel(), _MAT),
    _E("method_reshape", lambda x: x.reshape(4, 3), _MAT),
    _E("method_reshape_tuple", lambda x: x.reshape((2, 6)), _MAT),
    _E("method_transpose", lambda x: x.transpose(), _MAT),
    _E("attribute_T", lambda x: x.T, _MAT),
]
