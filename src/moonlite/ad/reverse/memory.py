"""Adjoints of reads, writes, calls and tuples: indexing (gathers and scatters), writes
undone and their targets' shadows cleared, calls dispatched to their primitive's registered
adjoint (`rules/registry.py`) or to the elementwise derivation, tuple entries.

A mixin of the reverse pass (`core._ReversePass`)."""

from __future__ import annotations

from ...ir import ops
from ...ir.core import Argument, Op
from ...ir.types import (ArrayType, BoolType, IntType, TupleType, int64, is_float_record, is_record,
                        none)
from ...rules.custom import lookup_custom
from ...rules.registry import ANY_KEYWORD, lookup as _lookup
from ...rules.strong_zeros import strong_product
from ...ir.traits import ALLOCATES
from ..opinfo import (describe as _describe,
                     positional as _positional, primitive as _primitive)
from ...rules.records import field_adder
from .helpers import RESTORE, last_writes_only, masked_add, scatter_add
from ...rules.records import record_source
from .types import (Entry, entry_at, has_adjoint as _has_adjoint, is_float as _is_float,
                    is_float_array as _is_float_array, leaves, path_of)
from .sweep import _advanced_index, _shadow_item_type, _view_source
from .keep import Saved


class MemoryAdjoints:
    def rv_getattr(self, op: ops.GetAttr) -> None:
        """`.T` is a view (its shadow is the source's); `.shape`, `.size`, `.ndim` carry no
        derivative; a float field of an entry of a structured array sends its adjoint to the
        same field of the shadow array's entry. Any other attribute holding a float of a varied
        value has no rule."""
        if is_float_record(op.value.type):
            return self._rv_record_field(op)
        if _has_adjoint(op.result.type) and op.name != "T" and op.value in self.varied:
            raise self.unsupported(op, f"differentiating {_describe(op)} in reverse mode",
                                   "compute the value from arrays and floats directly")

    def _rv_record_field(self, op: ops.GetAttr) -> None:
        if not _is_float(op.result.type) or op.value not in self.varied:
            return
        entry = self._shadow_record(op)
        if entry is not None:
            self.b.call(field_adder(op.name), [entry, self.take_adjoint(op.result)], type=none)

    def _shadow_record(self, op: ops.GetAttr):
        """Where the adjoints of the fields of the record `op` reads go: entry 0 of a record
        argument's one-entry shadow (records.py), or `shadow[i]` for a record read as `p[i]`;
        None when that shadow does not exist (constant data)."""
        record = op.value
        if isinstance(record, Argument):
            holder, index = self.shadow(record), self.b.const(0, int64)
        else:
            source = record_source(record)
            parent = getattr(record, "op", None)
            if source is None and isinstance(parent, ops.GetAttr) and is_record(parent.value.type):
                # a record field of a record (`r.pos` of a nested dtype): the same field of the
                # parent's shadow record, a reference into the shadow's bytes as in numba
                entry = self._shadow_record(parent)
                return None if entry is None else self.b.getattr(entry, parent.name, record.type)
            if source is None:
                raise self.unsupported(op, "differentiating a field of a record that is not "
                                       f"read from a structured array here ({record.type}) in "
                                       "reverse mode",
                                       "read fields as p[i]['a'] of a structured array p")
            holder, index = self.shadow(source.value), self.recall(source.index)
        return None if holder is None else self.b.getitem(holder, index, type=record.type)

    def rv_getitem(self, op: ops.GetItem) -> None:
        if isinstance(op.value.type, TupleType):
            return self._rv_tuple_entry_at(op)
        if isinstance(op.result.type, ArrayType) and _advanced_index(op):
            return self._rv_gather(op)
        if not _is_float(op.result.type):
            return  # an array result is a view: its shadow is a view of the source's shadow
        shadow = self.shadow(op.value)
        if shadow is None:
            return
        adjoint = self.take_adjoint(op.result)
        index = self.recall(op.index)
        self.b.setitem(shadow, index, self.b.add(self.b.getitem(shadow, index), adjoint))

    def _rv_gather(self, op: ops.GetItem) -> None:
        """y = x[idx] or x[mask] (a copy): x's shadow at idx += y's shadow (repeats add up)."""
        shadow, result_shadow = self.shadow(op.value), self.shadow(op.result)
        index_type = op.index.type
        if shadow is None or result_shadow is None:
            return
        if not (isinstance(index_type, ArrayType) and index_type.ndim == 1):
            raise self.unsupported(op, f"indexing with {index_type} (an index array of several "
                                   "dimensions, or several index arrays) in reverse mode",
                                   "index with one 1-D array of ints or bools")
        helper = masked_add if isinstance(index_type.dtype, BoolType) else scatter_add
        self.b.call(helper, [shadow, self.recall(op.index), result_shadow], type=none)

    def rv_setitem(self, op: ops.SetItem) -> None:
        target, index = self.recall(op.target), self.recall(op.index)
        shadow = self.shadow(op.target)
        if shadow is not None:
            written = self.b.getitem(shadow, index, type=_shadow_item_type(op))
            if not isinstance(written.type, ArrayType):
                if _has_adjoint(op.value.type):
                    self.send(op.value, written)
                self.b.setitem(shadow, index, self.b.const(0.0, written.type))
            else:
                self._rv_setitem_array(op, shadow, index, written)
        if op in self.unrestored:  # nothing saved: nobody reads the array back (scratch.py)
            return
        saved = self.recall(op, key=Saved(op))
        self.b.setitem(target, index, saved)
        self.release(op, key=Saved(op))

    def _rv_setitem_array(self, op: ops.SetItem, shadow, index, written) -> None:
        """`target[index] = value` of an array: value's adjoint gets the written region's, which
        is then cleared. The value may view the target's own memory (`x[i][:] += v` is
        `t = x[i][:]; t += v; x[i][:] = t`): its shadow is then (part of) the written region, so
        that region is copied before it is cleared, and sent after."""
        if not _has_adjoint(op.value.type):
            self.b.setitem(shadow, index, self.b.const(0.0, op.target.type.dtype))
            return
        if isinstance(op.index.type, ArrayType) and isinstance(op.index.type.dtype, IntType):
            # an index may repeat (`y[[0, 2, 0]] = v`): only the last write of a place counts
            written = self.b.call(last_writes_only, [written, index, self.recall(op.target)],
                                  type=written.type)
        shared = self._may_share_shadow(op.value, op.target)
        if shared:
            written = self.b.method_call("copy", written, [])
        else:
            self.send(op.value, written)
        self.b.setitem(shadow, index, self.b.const(0.0, op.target.type.dtype))
        if shared:
            self.send(op.value, written)

    def _may_share_shadow(self, value, target) -> bool:
        """False when the shadows of `value` and of the array `target` are surely apart: both
        lead back through views to different arrays whose shadows are their own (arguments,
        results of arithmetic or of allocating calls). True for one array (`x[1:] = x[:-1]`)
        or where a shadow may view another's (phis, in-place results, locals, tuple entries)."""
        value_root, target_root = self._shadow_root(value), self._shadow_root(target)
        return value_root is target_root or not (_own_shadow(value_root)
                                                 and _own_shadow(target_root))

    def _shadow_root(self, v):
        """The array whose shadow `v`'s shadow is a view of: views followed to their sources,
        a record `p[i]` to `p`, an in-place result to its target."""
        while True:
            if v in self.shadow_alias:
                v = self.shadow_alias[v]
                continue
            op = getattr(v, "op", None)
            if isinstance(op, ops.GetItem) and is_record(op.result.type):
                v = op.value
                continue
            source = None if op is None else _view_source(op)
            if source is None:
                return v
            v = source

    def rv_inplace(self, op: ops.InplaceBinary) -> None:
        """`t op= v`: t restored first, so that v, when it is t itself (`x *= x`), reads its
        old entries; v's contribution is computed from the target's shadow before that shadow
        is scaled, and sent after (when v is t, it adds to the scaled shadow: d(t*t) = 2 t)."""
        target = self.recall(op.target)
        saved = self.recall(op, key=Saved(op))
        shadow = self.shadow(op.target)
        kind = op.binop
        if shadow is not None and kind not in (ops.Add, ops.Sub, ops.Mul, ops.TrueDiv):
            raise self.unsupported(op, f"the in-place operator {kind.SYMBOL}= in reverse mode",
                                   f"write it as a = a {kind.SYMBOL} b")
        self._restore(target, saved)
        contribution = None
        if shadow is not None and _has_adjoint(op.value.type):
            contribution = self._inplace_contribution(op, kind, shadow, saved)
        if shadow is not None and kind in (ops.Mul, ops.TrueDiv):
            self.b.inplace(kind, shadow, self.recall(op.value))
        if contribution is not None:
            self.send(op.value, contribution)
        self.release(op, key=Saved(op))

    def _inplace_contribution(self, op, kind, shadow, saved):
        """What `t op= v` sends to v, computed before t's shadow is scaled (`+=` scales
        nothing: its contribution is the shadow itself, `x += x` doubles it as it should)."""
        if kind is ops.Add:
            return shadow
        if kind is ops.Sub:
            return self.b.neg(shadow)
        if kind is ops.Mul:
            return self._adjoint_product(shadow, saved)
        value = self.recall(op.value)
        return self.b.neg(self.b.div(self._adjoint_product(shadow, saved),
                                     self.b.mul(value, value)))

    def _restore(self, target, saved) -> None:
        """target[...] = saved (a copy of target): entry by entry for up to 3 dimensions
        (helpers.RESTORE), numba's slice store beyond."""
        restore = RESTORE.get(target.type.ndim) if isinstance(target.type, ArrayType) else None
        if restore is not None:
            self.b.call(restore, [target, saved], type=none)
        else:
            self.b.setitem(target, self.b.build_slice(*(self.b.const(None, none),) * 3), saved)

    def _adjoint_product(self, shadow, saved):
        """shadow * saved, exactly zero where the shadow is in the strong-zeros variant."""
        if self.strong_zeros:
            return strong_product(self.b, shadow, saved)
        return self.b.mul(shadow, saved)

    def rv_call(self, op: ops.Call) -> None:
        custom = lookup_custom(op.callee)
        if custom is not None and self.rv_custom(op, custom):
            return None
        registered = _lookup(op.callee)
        if registered is not None and registered.adjoint is not None:
            self._check_keywords_read(op, registered)
            return registered.adjoint(self, op)
        if op.traits() & ALLOCATES or (op.result is not None and _is_float_array(
                op.result.type) and not any(_has_adjoint(v.type) for v in op.operands)):
            return  # an allocation (np.zeros, np.empty_like, ...): nothing flows back
        return self.rv_elementwise(op)

    def rv_method(self, op: ops.MethodCall) -> None:
        registered = _lookup(_primitive(op))
        if registered is not None and registered.adjoint is not None:
            self._check_keywords_read(op, registered)
            return registered.adjoint(self, op)
        return self.rv_elementwise(op)

    def rv_primitive(self, op: Op) -> None:
        """An op class with a registered adjoint (`@`)."""
        return _lookup(type(op)).adjoint(self, op)

    def rv_nothing(self, op: Op) -> None:
        """Constants, slices, globals: no adjoint."""

    def _check_keywords_read(self, op: Op, registered) -> None:
        unread = _unread_keywords(registered, op)
        if unread:
            raise self.unsupported(op, f"{_describe(op)} with the keyword argument(s) "
                                   f"{', '.join(unread)} in reverse mode",
                                   "pass the argument by position (np.tril(A, -1)) or leave "
                                   "the keyword out")

    def _rv_tuple_entry_at(self, op: ops.GetItem) -> None:
        """t[i] with i known at run time (a homogeneous tuple): the entry i was gets the
        adjoint, through a select per entry (tuples are short); an array entry shares its
        shadow with the result. An entry that is a tuple: each float in it likewise."""
        if isinstance(op.result.type, ArrayType) or not _has_adjoint(op.result.type):
            return  # an array: its shadow is the entry's (sweep._shadow_of_entry_at)
        if isinstance(op.result.type, TupleType):
            floats = [(entry, path_of(entry)) for entry, t in leaves(op.result) if _is_float(t)]
        elif _is_float(op.result.type):
            floats = [(op.result, ())]
        else:  # (capture makes constant slices tuples of entries)
            raise self.unsupported(op, f"indexing a tuple ({op.value.type}) by "
                                   f"{op.index.type} in reverse mode",
                                   "index tuples by constants or by one int")
        if not floats:
            return
        n = len(op.value.type.elements)
        index = self.recall(op.index)
        index = self.b.select(self.b.binary(ops.Lt, index, self.b.const(0, index.type)),
                              self.b.add(index, self.b.const(n, index.type)), index)
        taken = [self.b.binary(ops.Eq, index, self.b.const(k, index.type)) for k in range(n)]
        for key, path in floats:
            adjoint = self.take_adjoint(key)
            zero = self.b.const(0.0, key.type)
            for k in range(n):
                self.accumulate(entry_at(op.value, (k, *path)),
                                self.b.select(taken[k], adjoint, zero))

    def rv_tuple_getitem(self, op: ops.TupleGetItem) -> None:
        if _is_float(op.result.type):
            self.accumulate(Entry(op.tuple, op.index), self.take_adjoint(op.result))
        elif isinstance(op.result.type, TupleType):  # a tuple in the tuple: float by float
            for entry, t in leaves(op.result):
                if _is_float(t):
                    self.accumulate(entry_at(op.tuple, (op.index, *path_of(entry))),
                                    self.take_adjoint(entry))

    def rv_build_tuple(self, op: ops.BuildTuple) -> None:
        for k, item in enumerate(op.items):
            if _is_float(item.type):  # (the entry's adjoint may be made later in this pass)
                self.accumulate(item, self.take_adjoint(Entry(op.result, k)))
            elif isinstance(item.type, TupleType):
                for entry, t in leaves(item):
                    if _is_float(t):
                        self.accumulate(entry, self.take_adjoint(
                            entry_at(op.result, (k, *path_of(entry)))))


def _unread_keywords(registered, op: Op) -> tuple:
    """The keyword arguments of `op` its registered adjoint would not read. A keyword beside a
    positional second argument counts as unread too (adjoints read one optional argument)."""
    if registered.keywords == ANY_KEYWORD:
        return ()
    unread = tuple(k for k in op.kwnames if not registered.reads_keyword(k))
    if not unread and len(_positional(op)) + len(op.kwnames) > 2:
        return tuple(op.kwnames)
    return unread


def _own_shadow(root) -> bool:
    """An array whose shadow is its own, not possibly a view of another's."""
    return not isinstance(getattr(root, "op", None),
                          (ops.Phi, ops.InplaceBinary, ops.TupleGetItem, ops.LoadLocal))
