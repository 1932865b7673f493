"""Calls (and indexing with `None`) rewritten at capture into forms every AD mode already handles.

Each rewrite replaces a call by plain IR with the same value, so forward mode, reverse mode and
forward over reverse need no handler of their own for it (and cannot disagree about it):

| call | becomes |
|---|---|
| `helper(x, factor=a)` (an njit function) | `helper(x, <default of b>, a)`: keywords in position, skipped defaults as constants |
| `np.tril(A, k=-1)`, `np.clip(x, a_min=lo, a_max=hi)` (numpy) | `np.tril(A, -1)`: keywords in position where numba types it alike |
| `np.array((a, b))`, `np.asarray(((a, b), (c, d)))` of numbers | `out = np.empty(shape)`, then `out[i, j] = leaf` per entry |
| `np.mean((a, b))`, any numpy function given a tuple of numbers | the same function of the tuple made an array as above |
| `sum((a, b, c))` | `0 + a + b + c` (Python's order) |
| `sum(v)` of a 1-d float array | `np.sum(v)` |
| `np.sum(x)`, `np.prod(x)`, `np.mean(x)`, ... of a scalar | `x` |
| `a.fill(v)` | `a[:, ..., :] = v` |
| `a.var()`, `a.std()` | `np.var(a)`, `np.std(a)` |
| `np.average(a)`, `np.average(a, weights=w)` (no axis) | `np.mean(a)`, `weighted_average(a, w)` (an njit function) |
| `np.linalg.matrix_power(a, n)` (float matrix, int n) | `rules.linalg.matrix_power(a, n)`: numba's products, returning an array, not an Optional |
| `a[:, None]`, `a[None, 1:]`, `X[:, np.newaxis, :]` (indexing with newaxis) | `np.reshape(a[:], (n, 1))` of a C-contiguous view, else `np.expand_dims` per new axis |

A rewrite that does not apply returns None and the call is kept as it is.
"""

from __future__ import annotations

import builtins
import inspect
import itertools
import operator
from typing import Optional

import numpy as np

from .. import _numba as nb
from ..ir import ops
from ..ir.builder import Builder
from ..ir.core import Value
from ..ir.types import (ArrayType, FloatType, IntType, OpaqueType, SliceType, TupleType,
                        from_numba, int64, none)
from ..ir.typing import TypingFailure, call_result_type
from ..rules.linalg import matrix_power

nbt = nb.types


# --- keyword calls of njit functions ---------------------------------------------------------

def fold_keywords(fn, args: list, kws: dict, const_of) -> Optional[list]:
    """Positional arguments for a call of njit `fn` with keywords: each keyword in its position,
    a skipped default as a constant (`const_of(python_value)`), trailing defaults left out (the
    callee is captured with them, as numba compiles it). None if `fn`'s parameters are not all
    plain (keyword-only, *args, **kwargs) or a skipped default is not a constant: moonlite then
    refuses the keyword call."""
    params = list(inspect.signature(fn.py_func).parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return None
    kws = dict(kws)
    folded = [args[i] if i < len(args) else kws.pop(p.name, None) for i, p in enumerate(params)]
    if kws:
        return None
    while folded and folded[-1] is None:
        folded.pop()
    for i, value in enumerate(folded):
        if value is None:  # a default with a later argument passed
            if not _is_constant_default(params[i].default):
                return None
            folded[i] = const_of(params[i].default)
    return folded


def numpy_keywords_in_position(fn, args: list, kws: dict, result_type) -> Optional[list]:
    """`np.tril(A, k=-1)` -> `np.tril(A, -1)`: keywords of a numpy function moved to their
    positions, when they fill the parameters right after the positional arguments and numba
    types the positional call alike. Adjoints then read one argument list and cannot miss a
    keyword (an adjoint of `tril` that ignored `k` gave a wrong gradient). None: keep the call."""
    if not kws or isinstance(fn, np.ufunc) or not _numpy_function(fn):
        return None
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # builtins and numba-only functions without a signature
        return None
    kws, folded = dict(kws), list(args)
    for param in params[len(args):]:
        if not kws:
            break
        if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD) \
                or param.name not in kws:
            return None
        folded.append(kws.pop(param.name))
    if kws:
        return None
    try:
        same = call_result_type(fn, [a.type for a in folded]) == result_type
    except TypingFailure:
        return None
    return folded if same else None


def _is_constant_default(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, np.number, str))


# --- calls of numpy functions and builtins ---------------------------------------------------

_IDENTITY_ON_SCALARS = (np.sum, np.prod, np.mean, np.max, np.min, np.amax, np.amin, np.median)


def rewrite_call(b: Builder, fn, args: list, kws: dict, result_type) -> Optional[Value]:
    """The call's value computed by simpler IR, or None to keep the call."""
    if fn is builtins.sum and len(args) == 1 and not kws:
        return _builtin_sum(b, args[0], result_type)
    if fn is builtins.divmod and len(args) == 2 and not kws:
        return _divmod(b, args, result_type)
    if fn in (np.array, np.asarray) and len(args) == 1 and not kws \
            and _number_tuple(args[0].type):
        return array_from_tuple(b, args[0], result_type)
    if fn in (np.array, np.asarray) and len(args) == 1 and not kws and args[0].type.is_scalar \
            and isinstance(result_type, ArrayType) and result_type.ndim == 0:
        # a 0-d array holding the number: np.asarray's rule is a view's (its shadow is its
        # operand's), which a number has not; reverse mode gave it a zero adjoint
        return b.call(np.full, [b.build_tuple([]), args[0]], type=result_type)
    if _in(fn, _IDENTITY_ON_SCALARS) and len(args) == 1 and not kws \
            and args[0].type.is_scalar and result_type == args[0].type:
        return args[0]  # a reduction of one number is that number
    if _numpy_function(fn) and any(_float_tuple(a.type) for a in args):
        return _with_tuples_as_arrays(b, fn, args, kws, result_type)
    if fn is np.average:
        return _average(b, args, kws, result_type)
    if fn is np.linalg.matrix_power:
        return _matrix_power(b, args, kws)
    if fn in (np.ravel, np.ascontiguousarray) and len(args) == 1 and not kws:
        return contiguous_view(b, fn, args[0], result_type)
    if fn is np.asfortranarray and len(args) == 1 and not kws \
            and isinstance(args[0].type, ArrayType) and args[0].type.layout == "F" \
            and args[0].type == result_type:
        return args[0]  # (numba returns an array typed F itself: a view every mode follows)
    return None


@nb.njit(cache=True)
def weighted_average(a, weights):
    """np.average(a, weights=weights) over the whole array, as numba's: 1-D weights broadcast
    along the last axis, weights of another shape and rank raise (numba: TypeError, here
    too; of the same rank and size but another shape, the product's broadcasting raises)."""
    if weights.ndim != 1 and (a.ndim != weights.ndim or a.size != weights.size):
        raise TypeError("1D weights expected when shapes of a and weights differ.")
    scale = np.sum(weights)
    if scale == 0.0:
        raise ZeroDivisionError("Weights sum to zero, can't be normalized.")
    return np.sum(np.multiply(a, weights)) / scale


def _average(b: Builder, args: list, kws: dict, result_type) -> Optional[Value]:
    """`np.average(a)` as `np.mean(a)`, `np.average(a, weights=w)` as `weighted_average`
    (an njit function every mode differentiates); None with an axis."""
    given = dict(zip(("a", "axis", "weights"), args), **kws)
    if set(given) - {"a", "axis", "weights"} or given.get("axis", None) is not None \
            and given["axis"].type != none or not isinstance(given["a"].type, ArrayType):
        return None
    weights = given.get("weights")
    if weights is None or weights.type == none:
        return b.call(np.mean, [given["a"]], None, result_type)
    return b.call(weighted_average, [given["a"], weights], None, result_type)


def _matrix_power(b: Builder, args: list, kws: dict) -> Optional[Value]:
    """`np.linalg.matrix_power(a, n)` of a float matrix and an int as `rules.linalg.
    matrix_power`, the same products returning an array (numba's returns an Optional, which no
    mode differentiates); None otherwise (numba's typing refuses a float n)."""
    if kws or len(args) != 2 or not isinstance(args[1].type, IntType) \
            or not (isinstance(args[0].type, ArrayType) and args[0].type.ndim == 2
                    and isinstance(args[0].type.dtype, FloatType)):
        return None
    return b.call(matrix_power, args, None, call_result_type(matrix_power,
                                                            [a.type for a in args]))


def narrow_optional_return(fn) -> None:
    """A function numba types as returning an Optional only because of a call rewritten
    above (`return np.linalg.matrix_power(a, n)`, whose numba implementation has a path
    returning None) returns the Optional's type, if every return gives a value of it: no
    mode differentiates an Optional output."""
    t = fn.return_type
    if not (isinstance(t, OpaqueType) and isinstance(t.numba_type, nbt.Optional)):
        return
    returned = {op.value.type for op in fn.ops() if isinstance(op, ops.Return)}
    inner = from_numba(t.numba_type.type)
    if len(returned) == 1 and _same_array_but_layout(next(iter(returned)), inner):
        fn.return_type = next(iter(returned))


def _same_array_but_layout(t, u) -> bool:
    return isinstance(t, ArrayType) and isinstance(u, ArrayType) and t.ndim == u.ndim \
        and t.dtype == u.dtype


def rewrite_method(b: Builder, name: str, receiver: Value, args: list, kws: dict) -> bool:
    """Emit a method call's effect by simpler IR; True if done (the call returns None)."""
    t = receiver.type
    if name == "fill" and isinstance(t, ArrayType) and t.ndim > 0 and len(args) == 1 \
            and not kws and args[0].type.is_scalar:
        b.setitem(receiver, _whole_array_index(b, t.ndim), b.cast(args[0], t.dtype))
        return True
    return False


# methods numba implements as the numpy function of the receiver, whose rules are the function's
_METHODS_AS_FUNCTIONS = {"var": np.var, "std": np.std}


def method_as_call(b: Builder, name: str, receiver: Value, args: list, kws: dict,
                   result_type) -> Optional[Value]:
    """`a.var()`, `a.std()` as `np.var(a)`, `np.std(a)`, `a.ravel()` of a C array as the
    view it is (`contiguous_view`); None for other methods."""
    if name == "ravel" and not args and not kws:
        return contiguous_view(b, np.ravel, receiver, result_type)
    fn = _METHODS_AS_FUNCTIONS.get(name)
    if fn is None or args or kws or not isinstance(receiver.type, ArrayType):
        return None
    return b.call(fn, [receiver], None, result_type)


def _divmod(b: Builder, args: list, result_type) -> Optional[Value]:
    """`divmod(x, y)` of two numbers of one type: `(x // y, x % y)`, operators every mode
    differentiates (numba's divmod is refused by name otherwise)."""
    x, y = args
    if not (isinstance(result_type, TupleType) and x.type == y.type
            and all(e == x.type for e in result_type.elements)):
        return None
    return b.build_tuple([b.binary(ops.FloorDiv, x, y, x.type), b.binary(ops.Mod, x, y, x.type)])


def contiguous_view(b: Builder, fn, a: Value, result_type) -> Optional[Value]:
    """`np.ravel(a)` and `np.ascontiguousarray(a)` of an array typed C-contiguous: numba's
    are then always views of `a` (`a.reshape(a.size)`, `a` itself), so they are captured as
    such: every mode follows writes through them, and writes into `a` read back through them
    (taken as copies, reverse mode gave those a wrong gradient). None for other arrays, which
    numba copies or views as their run-time layout decides."""
    if not (isinstance(a.type, ArrayType) and a.type.layout == "C"
            and isinstance(result_type, ArrayType) and result_type.layout == "C"):
        return None
    if fn is np.ascontiguousarray:
        return a if a.type == result_type else None
    size = b.getattr(a, "size", int64)
    return b.call(np.reshape, [a, b.build_tuple([size])], None, result_type)


def array_from_tuple(b: Builder, tup: Value, result_type) -> Optional[Value]:
    """`np.array(tup)` for a (nested) tuple of numbers: an empty array filled entry by entry."""
    if not (isinstance(result_type, ArrayType) and isinstance(result_type.dtype, FloatType)
            and result_type.dtype.bits == 64):
        return None  # int arrays carry no derivative; float32 would need a dtype argument
    shape = _tuple_shape(tup.type)
    if shape is None:
        return None
    out = b.call(np.empty, [b.build_tuple([b.const(n, int64) for n in shape])],
                 type=ArrayType(result_type.dtype, len(shape), "C"))
    for index in itertools.product(*(range(n) for n in shape)):
        leaf = tup
        for k in index:
            leaf = b.tuple_getitem(leaf, k)
        position = [b.const(k, int64) for k in index]
        where = position[0] if len(position) == 1 else b.build_tuple(position)
        b.setitem(out, where, b.cast(leaf, result_type.dtype))
    return out


def _builtin_sum(b: Builder, value: Value, result_type) -> Optional[Value]:
    t = value.type
    if isinstance(t, TupleType) and _number_tuple(t) and _tuple_shape(t) is not None \
            and len(_tuple_shape(t)) == 1 and isinstance(result_type, FloatType):
        total = b.const(0, int64)  # Python's sum starts from the int 0
        for k in range(len(t.elements)):
            total = b.add(total, b.tuple_getitem(value, k))
        return b.cast(total, result_type)
    if isinstance(t, ArrayType) and t.ndim == 1 and isinstance(t.dtype, FloatType) \
            and result_type == t.dtype:
        return b.call(np.sum, [value], type=result_type)  # the same loop, in the same order
    return None


def _with_tuples_as_arrays(b, fn, args, kws, result_type) -> Optional[Value]:
    """`fn(..., (a, b), ...)` as `fn(..., np.array((a, b)), ...)` (numpy reads a tuple of numbers
    as that array); None if the array form types differently."""
    types = [_array_type_of_tuple(a.type) if _float_tuple(a.type) else a.type for a in args]
    try:
        if call_result_type(fn, types, {k: v.type for k, v in kws.items()}) != result_type:
            return None
    except TypingFailure:
        return None
    converted = [array_from_tuple(b, a, t) if _float_tuple(a.type) else a
                 for a, t in zip(args, types)]
    return b.call(fn, converted, kws, type=result_type)


# --- helpers -----------------------------------------------------------------------------------

def _whole_array_index(b: Builder, ndim: int) -> Value:
    everything = [b.build_slice(*(b.const(None, none),) * 3) for _ in range(ndim)]
    return everything[0] if ndim == 1 else b.build_tuple(everything)


def _tuple_shape(t) -> Optional[tuple]:
    """The shape of the array numpy makes from a nested tuple of numbers (None if ragged)."""
    if not isinstance(t, TupleType):
        return () if t.is_scalar else None
    if not t.elements:
        return None
    inner = [_tuple_shape(e) for e in t.elements]
    if any(s is None for s in inner) or len(set(inner)) != 1:
        return None
    return (len(t.elements),) + inner[0]


def _number_tuple(t) -> bool:
    return isinstance(t, TupleType) and _tuple_shape(t) is not None


def _float_tuple(t) -> bool:
    """A tuple of numbers with a float among them (a tuple of ints is a shape or an index)."""
    return _number_tuple(t) and any(isinstance(e, FloatType) or _float_tuple(e)
                                    for e in t.elements)


def _array_type_of_tuple(t) -> Optional[ArrayType]:
    shape = _tuple_shape(t)
    return None if shape is None else ArrayType(FloatType(64), len(shape), "C")


def _numpy_function(fn) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return (isinstance(fn, np.ufunc) or module.startswith("numpy")) \
        and fn not in (np.array, np.asarray) and not module.startswith("numpy.random")


def _in(fn, functions: tuple) -> bool:
    return any(fn is f for f in functions)


# --- indexing with np.newaxis ----------------------------------------------------------------

def newaxis_getitem(b: Builder, array: Value, index: Value, result_type) -> Optional[Value]:
    """`a[:, None]`, `a[None]`, `a[1:, np.newaxis]`: the array indexed without the `None`s,
    then given its new axes of length one (`np.reshape` of a C-contiguous view, else
    `np.expand_dims` once per axis), which every mode differentiates. None if the index holds
    no `None`, or holds anything but integers and slices beside one (an index array, an
    Ellipsis: kept as it is, and refused by name)."""
    if not isinstance(array.type, ArrayType):
        return None
    entries = ([b.tuple_getitem(index, k) for k in range(len(index.type.elements))]
               if isinstance(index.type, TupleType) else [index])
    entries = _ellipsis_spelled_out(b, entries, array.type.ndim)
    if not any(e.type == none for e in entries) \
            or not all(isinstance(e.type, (IntType, SliceType)) or e.type == none
                       for e in entries):
        return None
    kept = [e for e in entries if e.type != none]
    inner = array
    if kept:
        inner_index = kept[0] if len(kept) == 1 else b.build_tuple(kept)
        inner = b.getitem(array, inner_index,
                          call_result_type(operator.getitem, [array.type, inner_index.type]))
    axes, position = [], 0  # where each new axis lands in the result
    for e in entries:
        if e.type == none:
            axes.append(position)
        if not isinstance(e.type, IntType):
            position += 1
    if inner.type.layout == "C":
        shape = b.getattr(inner, "shape", TupleType((int64,) * inner.type.ndim))
        sizes = [b.tuple_getitem(shape, k) for k in range(inner.type.ndim)]
        for axis in axes:
            sizes.insert(axis, b.const(1, int64))
        return b.call(np.reshape, [inner, b.build_tuple(sizes)], None, result_type)
    out = inner
    for axis in axes:  # (in increasing order: each axis counts the ones inserted before it)
        out = b.call(np.expand_dims, [out, b.const(axis, int64)], None,
                     call_result_type(np.expand_dims, [out.type, int64]))
    return out


def without_ellipsis(b: Builder, array: Value, index: Value) -> Optional[Value]:
    """`B[..., 0]`, `B[1, ...] = v`: the index with its `...` spelled out as the full slices it
    stands for (ints and slices beside it), which every mode knows; None if the index holds no
    Ellipsis or anything else beside one (a `None`: `newaxis_getitem` spells it out itself)."""
    if not (isinstance(array.type, ArrayType) and isinstance(index.type, TupleType)
            and any(_is_ellipsis(t) for t in index.type.elements)):
        return None
    entries = [b.tuple_getitem(index, k) for k in range(len(index.type.elements))]
    entries = _ellipsis_spelled_out(b, entries, array.type.ndim)
    if not all(isinstance(e.type, (IntType, SliceType)) for e in entries):
        return None
    return entries[0] if len(entries) == 1 else b.build_tuple(entries)


def _ellipsis_spelled_out(b: Builder, entries: list, ndim: int) -> list:
    """The entries of an index with its one `...` replaced by the full slices it stands for."""
    where = [k for k, e in enumerate(entries) if _is_ellipsis(e.type)]
    if len(where) != 1:
        return entries
    spanned = ndim - sum(1 for e in entries if isinstance(e.type, (IntType, SliceType)))
    none_ = b.const(None, none)
    full = [b.build_slice(none_, none_, none_) for _ in range(max(spanned, 0))]
    return entries[:where[0]] + full + entries[where[0] + 1:]


def _is_ellipsis(t) -> bool:
    return isinstance(getattr(t, "numba_type", None), nbt.EllipsisType)
