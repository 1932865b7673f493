"""Calls in numba's typed IR imported into moonlite IR (a mixin of `importer.Importer`): calls
of functions (njit helpers, numpy, builtins, classes), of bound methods, and of the callables
capture reads itself (`range`, `zip`, `slice`, `bool`, number classes: `Importer.SPECIAL_CALLS`).
Keyword arguments of njit helpers and numpy functions are put in position, and calls that every
AD mode handles better in another form are rewritten on the way (`rewrites.py`,
`record_fields.py`)."""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir import ops
from ..ir.types import ArrayType, BoolType, FloatType, IntType, TupleType, int64, none
from ..ir.typing import TypingFailure, call_result_type
from ..rules.jitclasses import is_jitclass
from ..rules.records import record_places
from . import rewrites
from . import statics as st
from .constructs import jitclass_method
from .list_helpers import ListArgument
from .lists import ListMethod
from .record_fields import is_record_array_type

nbt = nb.types

NUMBER_TYPES = (FloatType, IntType, BoolType)
# numpy functions of a float array moving its entries that no rule covers: gathered
_GATHERED = (np.take, np.delete, np.repeat, np.append)


class CallReads:
    SPECIAL_CALLS: dict = {}  # callee -> handler, filled by importer.py

    def ex_call(self, expr, target):
        if expr.varkwarg is not None:
            self.unsupported("calls with **kwargs", "pass the keyword arguments explicitly")
        callee = self.lookup(expr.func)
        if isinstance(callee, st.BoundMethod):
            return self._method_call(callee, expr, target)
        if isinstance(callee, ListMethod):
            return self._list_method_call(callee, expr, target)
        if not isinstance(callee, st.StaticObject):
            fn_type = self.typemap.get(expr.func.name)
            if isinstance(fn_type, nbt.Dispatcher) and nb.is_njit_dispatcher(fn_type.dispatcher):
                # an njit function passed as an argument (`rk4(f, y, h)`): numba's type of
                # the variable is that one function, so the call is a call of it
                return self._call(fn_type.dispatcher, expr, target)
            if type(fn_type).__name__ == "PullbackType":  # (api_vjp's: capture may not import it)
                self.unsupported("differentiating a call of a vjp pullback (a derivative of "
                                 "code that takes a reverse-mode derivative)",
                                 "differentiate the gradient in forward mode (moonlite.jvp of "
                                 "a function calling moonlite.grad, or moonlite.hvp)")
            self.unsupported("a call of a function held in a variable (other than an njit "
                             "function passed as an argument)",
                             "call the function by its global name")
        return self._call(callee.obj, expr, target)

    def _call(self, fn, expr, target):
        special = self.SPECIAL_CALLS.get(fn) if _hashable(fn) else None
        if expr.vararg is not None and (special is not None or isinstance(fn, type)
                                        or isinstance(fn, nbt.NumberClass)):
            self.unsupported(f"spreading a tuple with * into {getattr(fn, '__name__', fn)}()",
                             "pass the entries explicitly")
        if special is not None:
            return special(self, expr, target)
        if is_jitclass(fn) or isinstance(self.typemap[target.name], nbt.StructRef):
            built = self.jitclass_construction(expr, target)
            if built is not None:
                return built
        read = self.call_reading_a_list(fn, expr, target)
        if read is not None:
            return read
        if type(fn).__name__ in ("ObjModeLiftedWith", "LiftedWith", "LiftedLoop"):
            self.unsupported("an objmode block", "move the object-mode code out of the kernel")
        if _is_exception_intrinsic(fn):
            self.unsupported("try/except", "move the try/except out of the kernel; check inputs "
                             "before calling it")
        if isinstance(fn, type) and issubclass(fn, BaseException):
            return st.ExceptionInstance(fn, [self.value(a) for a in expr.args])
        if isinstance(self.typemap[target.name], nbt.BaseNamedTuple) and isinstance(fn, type):
            return self.build_namedtuple(fn, expr, target)
        if isinstance(fn, nbt.NumberClass) or _is_number_class(self.typemap[expr.func.name]):
            return self._cast_call(expr, target)
        if isinstance(fn, nb.Dispatcher) and not nb.is_njit_dispatcher(fn):
            self.unsupported("object-mode code (a call into a function compiled without "
                             "nopython)", "make the callee @njit")
        self.refuse_list_returned(fn, expr, target)
        args = self._positional(expr)
        kws = {name: self._argument(expr, v, name) for name, v in expr.kws}
        if kws and nb.is_njit_dispatcher(fn):
            folded = rewrites.fold_keywords(fn, args, kws, self._const_value)
            if folded is not None:
                args, kws = folded, {}
        args = self._coerced_to_signature(args, self.calltypes.get(expr))
        if nb.is_njit_dispatcher(fn) and isinstance(self.typemap[target.name], nbt.List):
            return self.list_from_helper(fn, args, kws, target)
        if any(isinstance(a, ListArgument) and a.changed for a in args) \
                or self.hands_a_list_on(fn, args, kws):
            return self.list_changing_call(fn, args, kws, self.type_of(target))
        fn, args = self.helper_call(fn, args, kws)
        result_type = self.type_of(target)
        if fn in (np.copy, np.ravel) and len(args) == 1 and not kws \
                and is_record_array_type(args[0].type):
            return self.record_array_method("copy" if fn is np.copy else "ravel", args[0],
                                            result_type)
        in_position = rewrites.numpy_keywords_in_position(fn, args, kws, result_type)
        if in_position is not None:
            args, kws = in_position, {}
        if fn is np.concatenate and args and not kws \
                and isinstance(getattr(args[0], "op", None), ops.BuildTuple) \
                and (len(args) == 1 or ops.constant_value(args[1]) == 0):
            joined = self.join_records(list(args[0].op.items), result_type)
            if joined is not None:
                return joined
        if args and not kws and is_record_array_type(result_type):
            moved = self.move_records(fn, args, result_type)
            if moved is None:
                moved = self.at_least_records(fn, args[0], result_type)
            if moved is not None:
                return moved
        if fn in _GATHERED and not kws:
            moved = self.moved_numbers(fn, args, result_type)
            if moved is not None:
                return moved
        rewritten = rewrites.rewrite_call(self.b, fn, args, kws, result_type)
        if rewritten is not None:
            return rewritten
        return self.b.call(fn, args, kws, result_type)

    def moved_numbers(self, fn, args: list, result_type):
        """`np.take(a, idx)`, `np.delete(a, idx)`, `np.repeat(a, k)` (and the methods) of a
        float array: `fn` called on the places of a's entries (numba's own index rules:
        wrapped, checked, flattened) and a's numbers gathered from the places it returns, a
        float gather every mode follows (as `move_records` does for structured arrays). None
        for other arguments."""
        if fn is np.append:
            return self._appended_numbers(args, result_type)
        a, rest = args[0], args[1:]
        if not (isinstance(a.type, ArrayType) and isinstance(a.type.dtype, FloatType)) \
                or any(isinstance(r.type, ArrayType) and not isinstance(r.type.dtype, IntType)
                       for r in rest):
            return None
        b = self.b
        places = b.call(record_places, [a, b.const(0, int64)], None,
                        ArrayType(int64, a.type.ndim, "C"))
        try:
            moved_type = call_result_type(fn, [places.type] + [r.type for r in rest])
        except TypingFailure:
            return None
        moved = b.call(fn, [places, *rest], None, moved_type)
        flat = b.call(np.ravel, [a], None, ArrayType(a.type.dtype, 1, "C"))
        if isinstance(moved_type, IntType):  # np.take(a, 3): one number
            return b.getitem(flat, moved, type=result_type)
        gathered = b.getitem(flat, b.call(np.ravel, [moved], None, ArrayType(int64, 1, "C")),
                             type=ArrayType(a.type.dtype, 1, "C"))
        if moved_type.ndim == 1:
            return gathered
        shape = b.getattr(moved, "shape", TupleType((int64,) * moved_type.ndim))
        return b.call(np.reshape, [gathered, shape], None, result_type)

    def _appended_numbers(self, args: list, result_type):
        """`np.append(a, v)` of a float array and an array or a number of its dtype: numba's
        flattens both and joins them, as `np.concatenate` of the two ravelled does."""
        if len(args) != 2 or not isinstance(args[0].type, ArrayType):
            return None
        (a, v), b = args, self.b
        flat = ArrayType(a.type.dtype, 1, "C")
        if isinstance(v.type, ArrayType) and v.type.dtype == a.type.dtype:
            tail = b.call(np.ravel, [v], None, flat)
        elif v.type == a.type.dtype and isinstance(v.type, FloatType):
            tail = b.call(np.full, [b.const(1, int64), v], None, flat)
        else:
            return None
        head = b.call(np.ravel, [a], None, flat)
        return b.call(np.concatenate, [b.build_tuple([head, tail])], None, result_type)

    def _method_call(self, method: st.BoundMethod, expr, target):
        if jitclass_method(method) is not None:
            return self._jitclass_method_call(method, expr, target)
        overloaded = self.overloaded_method(method, expr)
        if overloaded is not None:
            return self._instance_method_call(overloaded, True, method, expr, target)
        args = self._positional(expr)
        kws = {name: self.value(v) for name, v in expr.kws}
        if method.name in ("copy", "ravel", "flatten") and not args and not kws \
                and is_record_array_type(method.receiver.type):
            return self.record_array_method(method.name, method.receiver, self.type_of(target))
        if method.name in ("repeat", "take") and not kws \
                and is_record_array_type(method.receiver.type):
            moved = self.move_records(getattr(np, method.name), [method.receiver] + args,
                                      self.type_of(target))
            if moved is not None:
                return moved
        if method.name in ("take", "repeat") and not kws and args:
            moved = self.moved_numbers(getattr(np, method.name), [method.receiver] + args,
                                       self.type_of(target))
            if moved is not None:
                return moved
        if rewrites.rewrite_method(self.b, method.name, method.receiver, args, kws):
            return self.b.const(None, none)
        as_call = rewrites.method_as_call(self.b, method.name, method.receiver, args, kws,
                                          self.type_of(target))
        if as_call is not None:
            return as_call
        return self.b.method_call(method.name, method.receiver, args, kws, self.type_of(target))

    def _cast_call(self, expr, target):
        t = self.type_of(target)
        if len(expr.args) != 1 or expr.kws or not isinstance(t, NUMBER_TYPES):
            args = [self.value(a) for a in expr.args]
            return self.b.call(self.lookup(expr.func).obj, args, None, t)
        value = self.value(expr.args[0])
        if not isinstance(value.type, NUMBER_TYPES):
            return self.b.call(self.lookup(expr.func).obj, [value], None, t)
        return self.b.cast(value, t)

    def call_slice(self, expr, target):
        parts = [self.value(a) for a in expr.args]
        while len(parts) < 3:
            parts.append(self.b.const(None, none))
        if len(expr.args) == 1:  # slice(stop)
            parts = [parts[1], parts[0], parts[2]]
        return self.b.build_slice(*parts)

    def call_bool(self, expr, target):
        (value,) = [self.value(a) for a in expr.args]
        return self.b.cast(value, BoolType()) if isinstance(value.type, NUMBER_TYPES) \
            else self.b.call(bool, [value], None, BoolType())


def _hashable(obj) -> bool:
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def _is_exception_intrinsic(fn) -> bool:
    """numba lowers try/except to calls of these intrinsics."""
    return any(fn is f for f in nb.EXCEPTION_INTRINSICS)


def _is_number_class(t) -> bool:
    return isinstance(t, nbt.NumberClass)
