"""Adjoints of numpy's structural and linear-algebra operations (the reverse pass's mixin).

Elementwise primitives need no code here: the reverse pass derives their adjoints from their
forward rules. The operations below mix entries (reductions, products, reshapes, scans), so each
has its adjoint written out, in terms of what `_ReversePass` provides: `shadow(v)` (the adjoint
array of an array), `take_adjoint(v)` (a float's adjoint, reset), `recall(v)` (a primal value in
the pullback), `_send(v, contribution)` (add to v's adjoint, summing over broadcast axes).
"""

from __future__ import annotations

import numpy as np

from ..ir import ops
from ..ir.core import Op, Value
from ..ir.types import int64, none
from .opinfo import describe as _describe, keyword_values as _keyword_values, positional as \
    _positional
from .reverse_helpers import (add_along_diagonal, add_concatenated_piece, add_cumsum_adjoint,
                              add_stacked_piece, add_to_diagonal, one_at_argmax, one_at_argmin,
                              product_of_others)
from .reverse_types import has_adjoint as _has_adjoint


class ArrayAdjoints:
    def rv_nothing(self, op: Op) -> None:
        """Ops whose adjoint needs no work: constants, views (their shadow is their source's),
        allocations, shapes, integer arithmetic, piecewise-constant functions."""

    def rv_sum(self, op: Op) -> None:
        axis = (list(_keyword_values(op)) + list(_positional(op)[1:]))[:1]
        if axis:
            return self.rv_sum_axis(op, self.recall(axis[0]))
        operand = _positional(op)[0]
        self._send_broadcast(operand, self.take_adjoint(op.result))

    def rv_mean(self, op: Op) -> None:
        operand = _positional(op)[0]
        x = self.recall(operand)
        size = self.b.cast(self.b.getattr(x, "size"), op.result.type)
        self._send_broadcast(operand, self.b.div(self.take_adjoint(op.result), size))

    def _send_broadcast(self, operand: Value, scalar: Value) -> None:
        """Every entry of `operand` gets `scalar` (the adjoint of a sum or mean of it)."""
        if operand.type.is_scalar:
            return self._send(operand, scalar)
        shadow = self.shadow(operand)
        if shadow is not None:
            self.b.inplace(ops.Add, shadow, scalar)

    def rv_extremum(self, op: Op) -> None:
        self._reduction_derivative(op, one_at_argmax if _name(op) in ("max", "amax")
                                   else one_at_argmin)

    def rv_prod(self, op: Op) -> None:
        self._reduction_derivative(op, product_of_others)

    def _reduction_derivative(self, op: Op, derivative) -> None:
        """dx += adjoint * derivative(x), for a reduction of the whole array."""
        if _keyword_values(op) or len(_positional(op)) > 1:
            raise self.unsupported(op, f"{_describe(op)} with an axis in reverse mode",
                                   "reduce the whole array")
        operand = _positional(op)[0]
        adjoint = self.take_adjoint(op.result)
        if self.shadow(operand) is not None:
            x = self.recall(operand)
            self._send(operand, self.b.mul(self.b.call(derivative, [x]), adjoint))

    def rv_reshape(self, op: Op) -> None:
        operand = _positional(op)[0]
        shadow_out = self.shadow(op.result)
        if shadow_out is None:
            return
        shape = self.b.getattr(self.recall(operand), "shape")
        back = self.b.method_call("reshape", self.b.method_call("copy", shadow_out, []), [shape])
        self._send(operand, back)

    def rv_sum_axis(self, op: Op, axis: Value) -> None:
        operand = _positional(op)[0]
        if op.result.type.is_scalar:  # a 1-d array summed along its only axis
            return self._send_broadcast(operand, self.take_adjoint(op.result))
        dy = self.shadow(op.result)
        if dy is not None:
            self._send(operand, self.b.call(np.expand_dims, [dy, axis]))

    def rv_cumsum(self, op: Op) -> None:
        operand = _positional(op)[0]
        dy = self.shadow(op.result)
        axis = (list(_keyword_values(op)) + list(_positional(op)[1:]))[:1]
        if dy is None:
            return
        if axis:
            gx = self.shadow(operand)
            if gx is not None:
                self.b.call(add_cumsum_adjoint, [dy, gx, self.recall(axis[0])], type=none)
            return
        # 1-D: cumsum without an axis works on the flattened array
        backwards = self.b.build_slice(self.b.const(None, none), self.b.const(None, none),
                                       self.b.const(-1, int64))
        sums = self.b.getitem(self.b.call(np.cumsum, [self.b.getitem(dy, backwards)]), backwards)
        if operand.type.ndim > 1:
            shape = self.b.getattr(self.recall(operand), "shape")
            sums = self.b.method_call("reshape", self.b.method_call("copy", sums, []), [shape])
        self._send(operand, sums)

    def rv_outer(self, op: Op) -> None:
        a, c = _positional(op)
        dy = self.shadow(op.result)
        if dy is None:
            return
        if _has_adjoint(a.type):
            self._send(a, self.b.binary(ops.MatMul, dy, self.recall(c)))
        if _has_adjoint(c.type):
            self._send(c, self.b.binary(ops.MatMul, self.recall(a), dy))

    def rv_trace(self, op: Op) -> None:
        operand = _positional(op)[0]
        shadow = self.shadow(operand)
        adjoint = self.take_adjoint(op.result)
        offset = (list(_positional(op)[1:]) + list(_keyword_values(op)))[:1]
        offset = self.recall(offset[0]) if offset else self.b.const(0, int64)
        if shadow is not None:
            self.b.call(add_to_diagonal, [shadow, adjoint, offset], type=none)

    def rv_norm(self, op: Op) -> None:
        if _keyword_values(op) or len(_positional(op)) > 1:
            raise self.unsupported(op, f"{_describe(op)} with an order or axis in reverse mode",
                                   "compute the norm with np.sqrt(np.sum(x * x))")
        operand = _positional(op)[0]
        x = self.recall(operand)
        adjoint = self.take_adjoint(op.result)
        norm = self.b.call(np.linalg.norm, [x])
        self._send(operand, self.b.mul(x, self.b.div(adjoint, norm)))

    def rv_self_adjoint(self, op: Op) -> None:
        """np.tril, np.triu, and np.diag of a vector: the adjoint of x -> f(x, k) is
        g -> f(g, k) (a triangle mask is a projection; diag(v, k) places v on diagonal k and
        diag(G, k) reads it back)."""
        shadow_out = self.shadow(op.result)
        if shadow_out is None:
            return
        operand, rest = _positional(op)[0], [self.recall(v) for v in _positional(op)[1:]]
        if op.callee is np.diag and operand.type.ndim == 2:  # diag of a matrix: a vector
            shadow = self.shadow(operand)
            if shadow is not None:
                k = rest[0] if rest else self.b.const(0, int64)
                self.b.call(add_along_diagonal, [shadow, shadow_out, k], type=none)
            return
        self._send(operand, self.b.call(op.callee, [shadow_out, *rest]))

    def rv_join(self, op: Op) -> None:
        """np.concatenate, np.stack, np.vstack, np.hstack of a tuple built in the kernel: each
        piece's shadow gets its part of the result's shadow."""
        g = self.shadow(op.result)
        pieces = _positional(op)[0]
        builder = getattr(pieces, "op", None)
        if g is None:
            return
        if not isinstance(builder, ops.BuildTuple):
            raise self.unsupported(op, f"{_describe(op)} of a tuple not built in the kernel, in "
                                   "reverse mode", "pass the arrays as a tuple literal: "
                                   "np.concatenate((a, b))")
        stacked, axis = _join_kind(op, pieces.type.elements[0].ndim)
        if axis is None:
            raise self.unsupported(op, f"{_describe(op)} along an axis computed at run time, in "
                                   "reverse mode", "write the axis as a constant")
        ndim = g.type.ndim
        axis_value = self.b.const(axis % ndim, int64)
        start = self.b.const(0, int64)
        for k, item in enumerate(builder.items):
            shadow = self.shadow(item) if _has_adjoint(item.type) else None
            if stacked:
                if shadow is not None:
                    self.b.call(add_stacked_piece, [shadow, g, self.b.const(k, int64),
                                                    axis_value], type=none)
                continue
            if shadow is not None:
                self.b.call(add_concatenated_piece, [shadow, g, start, axis_value], type=none)
            length = self.b.getitem(self.b.getattr(self.recall(item), "shape"), axis_value,
                                    type=int64) if k + 1 < len(builder.items) else None
            start = self.b.add(start, length) if length is not None else start

    def rv_full(self, op: Op) -> None:
        """np.full(shape, v), np.full_like(a, v): v gets the sum of the result's adjoint (a's
        values do not matter, only its shape)."""
        values = list(_positional(op)[1:2]) + [v for k, v in op.keywords.items()
                                               if k == "fill_value"]
        dy = self.shadow(op.result)
        if dy is not None and values and _has_adjoint(values[0].type):
            self._send(values[0], dy)

    def rv_copy(self, op: Op) -> None:
        result_shadow = self.shadow(op.result)
        self._send(_positional(op)[0], result_shadow)

    def rv_dot(self, op: Op) -> None:
        a, c = _positional(op)
        self._matmul_adjoint(op, a, c)

    def rv_matmul(self, op: ops.MatMul) -> None:
        self._matmul_adjoint(op, op.lhs, op.rhs)

    def _matmul_adjoint(self, op: Op, a: Value, c: Value) -> None:
        """y = a @ c for 1-D/2-D a, c: da += dy @ c.T (outer for vectors), dc += a.T @ dy."""
        av, cv = self.recall(a), self.recall(c)
        dy = self._result_adjoint(op.result)
        if dy is None:
            return
        na, nc = a.type.ndim, c.type.ndim
        if _has_adjoint(a.type):
            if na == 1 and nc == 1:
                da = self.b.mul(dy, cv)
            elif na == 2 and nc == 1:
                da = self.b.call(np.outer, [dy, cv])
            elif na == 1 and nc == 2:
                da = self.b.binary(ops.MatMul, cv, dy)
            else:
                da = self.b.binary(ops.MatMul, dy, self.b.getattr(cv, "T"))
            self._send(a, da)
        if _has_adjoint(c.type):
            if na == 1 and nc == 1:
                dc = self.b.mul(dy, av)
            elif na == 2 and nc == 1:
                dc = self.b.binary(ops.MatMul, dy, av)
            elif na == 1 and nc == 2:
                dc = self.b.call(np.outer, [av, dy])
            else:
                dc = self.b.binary(ops.MatMul, self.b.getattr(av, "T"), dy)
            self._send(c, dc)


CALL_ADJOINTS = {np.sum: ArrayAdjoints.rv_sum, np.mean: ArrayAdjoints.rv_mean,
                 np.copy: ArrayAdjoints.rv_copy,
                 np.ascontiguousarray: ArrayAdjoints.rv_copy, np.dot: ArrayAdjoints.rv_dot,
                 np.max: ArrayAdjoints.rv_extremum, np.amax: ArrayAdjoints.rv_extremum,
                 np.min: ArrayAdjoints.rv_extremum, np.amin: ArrayAdjoints.rv_extremum,
                 np.prod: ArrayAdjoints.rv_prod, np.reshape: ArrayAdjoints.rv_reshape,
                 np.ravel: ArrayAdjoints.rv_reshape,
                 # views: their shadows are views of their arguments' (reverse._view_source)
                 np.transpose: ArrayAdjoints.rv_nothing, np.swapaxes: ArrayAdjoints.rv_nothing,
                 np.moveaxis: ArrayAdjoints.rv_nothing,
                 np.expand_dims: ArrayAdjoints.rv_reshape,
                 np.full: ArrayAdjoints.rv_full, np.full_like: ArrayAdjoints.rv_full,
                 np.cumsum: ArrayAdjoints.rv_cumsum, np.outer: ArrayAdjoints.rv_outer,
                 np.trace: ArrayAdjoints.rv_trace, np.concatenate: ArrayAdjoints.rv_join,
                 np.stack: ArrayAdjoints.rv_join, np.vstack: ArrayAdjoints.rv_join,
                 np.hstack: ArrayAdjoints.rv_join, np.diag: ArrayAdjoints.rv_self_adjoint,
                 np.tril: ArrayAdjoints.rv_self_adjoint, np.triu: ArrayAdjoints.rv_self_adjoint, np.linalg.norm: ArrayAdjoints.rv_norm,
                 len: ArrayAdjoints.rv_nothing,
                 # piecewise-constant functions: nothing flows back
                 np.round: ArrayAdjoints.rv_nothing, np.around: ArrayAdjoints.rv_nothing,
                 np.sign: ArrayAdjoints.rv_nothing, np.rint: ArrayAdjoints.rv_nothing}
METHOD_ADJOINTS = {"sum": ArrayAdjoints.rv_sum, "mean": ArrayAdjoints.rv_mean,
                   "copy": ArrayAdjoints.rv_copy, "dot": ArrayAdjoints.rv_dot,
                   "max": ArrayAdjoints.rv_extremum, "min": ArrayAdjoints.rv_extremum,
                   "prod": ArrayAdjoints.rv_prod, "reshape": ArrayAdjoints.rv_reshape,
                   "ravel": ArrayAdjoints.rv_reshape, "cumsum": ArrayAdjoints.rv_cumsum}


# The keywords each adjoint reads (as its one optional argument, after the positional ones). A
# call with any other keyword is refused: an adjoint that ignores a keyword (`np.tril(A, k=-1)`
# read as `np.tril(A)`) gives a wrong gradient. Capture puts most keywords in position first
# (`capture/rewrites.numpy_keywords_in_position`); methods keep theirs.
KEYWORDS_READ = {ArrayAdjoints.rv_sum: ("axis",), ArrayAdjoints.rv_cumsum: ("axis",),
                 ArrayAdjoints.rv_trace: ("offset",), ArrayAdjoints.rv_full: ("fill_value",),
                 ArrayAdjoints.rv_join: ("axis",)}
# piecewise-constant functions: nothing flows back, whatever their keywords say
_KEYWORDS_IRRELEVANT = (np.round, np.around, np.sign, np.rint)


def unread_keywords(handler, op: Op) -> tuple:
    """The keyword arguments of `op` that `handler` would not read."""
    if isinstance(op, ops.Call) and any(op.callee is f for f in _KEYWORDS_IRRELEVANT):
        return ()
    read = KEYWORDS_READ.get(handler, ())
    unread = tuple(k for k in op.kwnames if k not in read)
    if not unread and len(_positional(op)) + len(op.kwnames) > 2:
        return tuple(op.kwnames)  # a keyword beside a positional second argument
    return unread


def _join_kind(op: Op, piece_ndim: int) -> tuple:
    """(stacked, axis) of a join: stack adds an axis, concatenate extends one."""
    fn = op.callee
    if fn is np.vstack:
        return (piece_ndim == 1, 0)
    if fn is np.hstack:
        return (False, 0 if piece_ndim == 1 else 1)
    axis = _constant_axis(op)
    return (fn is np.stack, axis)


def _constant_axis(op: Op):
    values = list(_keyword_values(op)) + list(_positional(op)[1:])
    if not values:
        return 0
    const = getattr(values[0], "op", None)
    if not isinstance(const, ops.Constant):
        return None  # not known when the rule is built: refused by the caller
    return int(const.value)


def _name(op: Op) -> str:
    if isinstance(op, ops.MethodCall):
        return op.method
    return getattr(getattr(op, "callee", None), "__name__", "")
