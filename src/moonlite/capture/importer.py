"""Import numba's typed IR into moonlite IR.

The importer walks numba's blocks in reverse post-order and translates each statement with a
handler chosen by the statement's class (and, for expressions, by `expr.op`). numba variables map
either to moonlite values or to compile-time objects (`statics.py`); copies between variables
just alias. Normalisations (see docs/architecture.md): for-loops become counted loops; `$phi`
copies and numba phis become SSA phis; `bool()` predicates and casts become `Cast` (or vanish);
literal and omitted types become plain types and constants; implicit argument conversions numba
would do become explicit `Cast`s; tuple unpacking reads the tuple directly; raises become `Raise`.
"""

from __future__ import annotations

import linecache
import operator
from typing import Optional

import numpy as np

from .. import _numba as nb
from ..errors import SourceLoc, UnsupportedError
from ..ir import ops
from ..ir.builder import Builder
from ..ir.cfg import Dominators, predecessors
from ..ir.cleanup import remove_dead_code
from ..ir.verifier import _Problems, _check_schema
from ..ir.core import Block, Function, Value
from ..ir.types import ArrayType, BoolType, IntType, NamedTupleType, TupleType, from_numba, none
from . import rewrites
from . import statics as st
from .calls import NUMBER_TYPES as _NUMBER_TYPES, CallReads
from .constructs import ConstructReads
from .lists import GrowingList, GrowingLists, ListMethod
from .loops import LoopReads
from .messages import (CONTAINER_HINT, construct_of, container_construct, hint_of,
                       is_container, is_string, unsupported_expr, user_type)
from .parameters import Parameters
from .record_phis import route_record_phis
from .pipeline import TypedIR
from .record_fields import RecordFields
from ..rules.jitclasses import any_layout
from ..rules.overlap import may_view_memory, refuse_overlap

ir = nb.ir
nbt = nb.types



class Importer(CallReads, Parameters, ConstructReads, GrowingLists, LoopReads, RecordFields):
    """One use: `Importer(dispatcher, typed).run()` returns the moonlite Function."""

    def __init__(self, py_func, typed: TypedIR, error_model: str = "python",
                 boundscheck: bool = False, list_params: bool = False,
                 returns_list: bool = False, changes_lists: bool = False):
        self.py_func = py_func
        self.boundscheck = boundscheck
        # list parameters given as their buffers and lengths (`list_helpers.py`)
        self.list_params = list_params
        # the list returned as its buffers and length (`list_helpers.py`)
        self.returns_list = returns_list
        # the list parameters' buffers and lengths returned beside the result (`list_helpers`)
        self.changes_lists = changes_lists
        # numba's default error model raises ZeroDivisionError for scalar division by zero:
        # such divisions are marked `checked` (derived code compiles with numpy's model)
        self.checks_division = error_model == "python"
        self.typed = typed
        self.fir = typed.func_ir
        self.typemap = typed.typemap
        self.calltypes = typed.calltypes
        self.bindings: dict = {}  # numba variable name -> Value or static record
        self.blocks: dict = {}  # numba label -> Block
        self.pending_phis: list = []  # (Phi, numba phi expr)
        self.loop_phis: list = []  # (Phi, start, next, header block)
        self.body_prologues: dict = {}  # numba label -> LazyElement to materialise there
        self.loop_conds: dict = {}  # id(cond value) -> LoopStep
        self.b: Builder = None  # set in run()

    # --- driver --------------------------------------------------------------------------------

    def run(self) -> Function:
        self._refuse_function_level_constructs()
        self.b = self._new_function()
        self._init_growing_lists()
        order = _numba_rpo(self.fir.blocks)
        for label in order:
            self.blocks[label] = self.b.new_block(hint=f"L{label}")
        self._ensure_entry_has_no_predecessors(order[0])
        for label in order:
            self._import_block(label, self.fir.blocks[label])
        self._fill_phis()
        self._check_list_phis()
        self._remove_trivial_list_phis()
        route_record_phis(self.b.function)
        fn = remove_dead_code(self.b.function)
        rewrites.narrow_optional_return(fn)  # (np.linalg.matrix_power returned)
        self.check_array_lists(fn)
        self._refuse_ill_typed_ops(fn)
        return fn

    def _ensure_entry_has_no_predecessors(self, entry_label) -> None:
        targets = {t for blk in self.fir.blocks.values() for t in blk.terminator.get_targets()}
        if entry_label in targets:
            trampoline = Block(hint="entry")
            self.b.function.blocks.insert(0, trampoline)
            trampoline.function = self.b.function
            self.b.position_at_end(trampoline)
            self.b.jump(self.blocks[entry_label])

    def _import_block(self, label, nblock) -> None:
        block = self.blocks[label]
        self.b.position_at_end(block)
        self._label = label
        self._enter_block_lists(label)
        lazy = self.body_prologues.get(label)
        if lazy is not None:
            self.b.loc = self._loc(nblock.body[0].loc)
            lazy.value = lazy.build(self.b)
        for stmt in nblock.body:
            self.b.loc = self._loc(stmt.loc)
            self.stmt = stmt
            handler = _STMT_HANDLERS.get(type(stmt))
            if handler is None:
                self._unsupported_stmt(stmt)
            handler(self, stmt)
            if self.given_lists and not self.changes_lists:
                self.check_given_lists_kept()
        self._leave_block_lists(label)

    # --- errors --------------------------------------------------------------------------------

    def _loc(self, loc) -> SourceLoc:
        return SourceLoc(getattr(loc, "filename", "<unknown>") or "<unknown>",
                         getattr(loc, "line", 0) or 0)

    def unsupported(self, construct: str, hint: str, loc=None):
        raise self.refusal(construct, hint, loc)

    def refusal(self, construct: str, hint: str, loc=None) -> UnsupportedError:
        loc = loc or self.b.loc if self.b is not None else self._loc(self.fir.loc)
        return UnsupportedError(
            construct, function=self.py_func.__qualname__,
            argtypes=tuple(str(t) for t in self.typed.argtypes), loc=loc, hint=hint,
            source_line=linecache.getline(loc.filename, loc.line))

    def overlap_message(self) -> str:
        """What `refuse_overlap` says at run time (`rules/overlap.py`)."""
        return str(self.refusal(
            "an in-place operation whose right-hand side overlaps its target in memory "
            "(`x[1:] += x[:-1]`: numba updates entry by entry, each entry seeing the ones "
            "already updated, unlike NumPy)", "copy the right-hand side first "
            "(`x[1:] += x[:-1].copy()`), or write the recurrence as a loop"))

    def _refuse_function_level_constructs(self) -> None:
        if self.fir.is_generator:
            self.unsupported("generators (a function that uses `yield`)",
                             "return an array of the values instead of yielding them",
                             self._loc(self.fir.loc))

    def _refuse_ill_typed_ops(self, fn: Function) -> None:
        """A last check: an op whose operand types moonlite's IR does not allow (an operator on
        strings, indexing something that is neither an array nor a tuple, ...) is refused here,
        naming the source line, rather than failing verification later with an IR dump."""
        for op in fn.ops():
            problems = _Problems()
            _check_schema(op, problems)
            if problems.items:
                types = ", ".join(str(user_type(v.type)) for v in op.operands)
                self.unsupported(f"{construct_of(op)} ({op.mnemonic()} on {types})",
                                 hint_of(op), op.loc)

    def _unsupported_stmt(self, stmt):
        what = {ir.Print: ("print()", "remove the print from the kernel you differentiate"),
                ir.EnterWith: ("`with` blocks (objmode and context managers)",
                               "move the code outside the `with` block"),
                ir.PopBlock: ("try/except or `with` blocks", "move the try/except out of the "
                              "kernel; check inputs before calling it"),
                ir.TryRaise: ("try/except", "move the try/except out of the kernel"),
                ir.StaticTryRaise: ("try/except", "move the try/except out of the kernel"),
                ir.DynamicTryRaise: ("try/except", "move the try/except out of the kernel"),
                ir.SetAttr: ("attribute assignment", "write to an array instead"),
                ir.DelItem: ("`del x[i]`", "use arrays and index them"),
                }.get(type(stmt), (f"the numba IR statement {type(stmt).__name__}",
                                   "write the kernel without this construct, or report it"))
        self.unsupported(*what)

    # --- variables -----------------------------------------------------------------------------

    def lookup(self, var):
        try:
            return self.bindings[var.name]
        except KeyError:
            self.unsupported(f"a use of variable {var.name!r} before moonlite saw its definition",
                             "this is a moonlite bug: please report the kernel")

    def value(self, var) -> Value:
        """The IR value of a numba variable, materialising compile-time objects if needed."""
        bound = self.lookup(var)
        if isinstance(bound, Value):
            return bound
        if isinstance(bound, st.LazyElement) and bound.value is not None:
            return bound.value
        if isinstance(bound, st.StaticObject):
            return self.b.global_ref(bound.obj, from_numba(self.typemap[var.name]))
        if isinstance(bound, st.FlatIterator):
            return self.b.getattr(bound.array, "flat", bound.type)
        if isinstance(bound, st.ListLiteral):
            self.unsupported("a list literal used other than read (np.array([...]), "
                             "np.asarray, sum, len, min, max, a constant index, a for loop)",
                             "make it a tuple, or fill a numpy array")
        if isinstance(bound, (GrowingList, ListMethod)):
            self.unsupported("a list built by append used other than read (np.array(...), "
                             "np.asarray, sum, len, min, max, an index, a for loop, a copy) or "
                             "changed by its methods: passed to a function that is no njit "
                             "helper, returned, or stored in a tuple",
                             "fill a preallocated numpy array instead")
        self.unsupported(f"using {type(bound).__name__} {var.name!r} as a value",
                         "keep ranges, iterators and exceptions inside their for/raise "
                         "statements")

    def type_of(self, var):
        return from_numba(self.typemap[var.name])

    def bind(self, target, bound) -> None:
        if isinstance(bound, Value) and is_container(bound.type):
            self.unsupported(container_construct(bound.type), CONTAINER_HINT)
        if isinstance(bound, Value) and bound.hint is None and not target.name.startswith("$"):
            bound.hint = target.name.split(".")[0]
        self.bindings[target.name] = bound

    # --- statements ----------------------------------------------------------------------------

    def on_assign(self, stmt) -> None:
        handler = _VALUE_HANDLERS.get(type(stmt.value))
        if handler is None:
            self.unsupported(f"the numba IR value {type(stmt.value).__name__}",
                             "write the kernel without this construct")
        self.bind(stmt.target, handler(self, stmt.value, stmt.target))

    def on_setitem(self, stmt) -> None:
        if isinstance(self.lookup(stmt.target), GrowingList):
            return self.list_setitem(self.lookup(stmt.target), self.value(stmt.index),
                                     self.value(stmt.value))
        key = self.typemap.get(stmt.index.name)
        if isinstance(key, nbt.StringLiteral) and self._is_record(stmt.target):
            return self.write_record_field(self.value(stmt.target), key.literal_value,
                                           self.value(stmt.value))
        target = self.value(stmt.target)
        index = self.value(stmt.index)
        index = rewrites.without_ellipsis(self.b, target, index) or index
        value = self._coerce_setitem_value(stmt, target, self.value(stmt.value))
        if not self.copy_records_into(target, index, value):
            self.b.setitem(target, index, value)

    def on_static_setitem(self, stmt) -> None:
        if isinstance(self.lookup(stmt.target), GrowingList) and stmt.index_var is not None:
            return self.list_setitem(self.lookup(stmt.target), self.value(stmt.index_var),
                                     self.value(stmt.value))
        if isinstance(stmt.index, str) and self._is_record(stmt.target):
            return self.write_record_field(self.value(stmt.target), stmt.index,
                                           self.value(stmt.value))
        target = self.value(stmt.target)
        if stmt.index_var is not None:
            index = self.value(stmt.index_var)
        else:
            index = self._static_index(stmt.index)
        index = rewrites.without_ellipsis(self.b, target, index) or index
        value = self._coerce_setitem_value(stmt, target, self.value(stmt.value))
        if not self.copy_records_into(target, index, value):
            self.b.setitem(target, index, value)

    def _coerce_setitem_value(self, stmt, target, value):
        sig = self.calltypes.get(stmt)
        if sig is not None and len(sig.args) == 3:
            return self._coerce(value, from_numba(sig.args[2]))
        return value

    def _static_index(self, index) -> Value:
        if isinstance(index, slice):
            parts = [self.b.const(p) if p is not None else self.b.const(None, none)
                     for p in (index.start, index.stop, index.step)]
            return self.b.build_slice(*parts)
        if isinstance(index, tuple):
            return self.b.build_tuple([self._static_index(i) for i in index])
        return self.b.const(index)

    def on_jump(self, stmt) -> None:
        self.b.jump(self.blocks[stmt.target])

    def on_branch(self, stmt) -> None:
        cond = self.value(stmt.cond)
        if not isinstance(cond.type, BoolType):
            cond = self.b.cast(cond, BoolType())
        step = self.loop_conds.get(id(cond))
        if step is not None and isinstance(step.element, st.LazyElement):
            self.body_prologues[stmt.truebr] = step.element
        self.b.branch(cond, self.blocks[stmt.truebr], self.blocks[stmt.falsebr])

    def on_return(self, stmt) -> None:
        if self.returns_list:
            self.b.ret(self.returned_list_state(self.lookup(stmt.value)))
            return
        if self.changes_lists:
            self.b.ret(self.result_and_list_states(stmt.value))
            return
        self.b.ret(self._coerce(self.value(stmt.value), self.b.function.return_type))

    def on_static_raise(self, stmt) -> None:
        args = [self._const_value(a) for a in (stmt.exc_args or ())]
        self.b.raise_(stmt.exc_class, args)

    def on_dynamic_raise(self, stmt) -> None:
        args = [self.value(a) if isinstance(a, ir.Var) else self._const_value(a)
                for a in (stmt.exc_args or ())]
        self.b.raise_(stmt.exc_class, args)

    def on_raise(self, stmt) -> None:
        exc = self.lookup(stmt.exception) if stmt.exception is not None else None
        if isinstance(exc, st.ExceptionInstance):
            self.b.raise_(exc.exc_class, exc.args)
        elif isinstance(exc, st.StaticObject):
            self.b.raise_(exc.obj, [])
        else:
            self.unsupported("re-raising an exception", "raise a new exception instead")

    def _const_value(self, value) -> Value:
        if value is None:
            return self.b.const(None, none)
        t = nb.typeof(value)
        return self.b.const(value, from_numba(t))

    # --- values ----------------------------------------------------------------------------------

    def on_var(self, value, target):
        return self.lookup(value)

    def on_const(self, value, target):
        if not _is_data(value.value):
            return st.StaticObject(value.value)  # e.g. the dispatcher of a lifted objmode block
        t = self.typemap.get(target.name)
        mtype = from_numba(t) if t is not None else from_numba(nb.typeof(value.value))
        return self.b.const(value.value, mtype)

    def on_global(self, value, target):
        obj = value.value
        t = self.typemap.get(target.name)
        if isinstance(obj, np.ndarray) or isinstance(obj, (bool, int, float, np.number)) \
                or obj is None or (isinstance(obj, tuple) and t is not None
                                   and isinstance(from_numba(t), TupleType)):
            return self.b.const(obj, from_numba(t) if t is not None
                                else from_numba(nb.typeof(obj)))
        if isinstance(obj, complex):
            return self.b.const(obj, from_numba(t))
        return st.StaticObject(obj)

    def on_expr(self, expr, target):
        handler = _EXPR_HANDLERS.get(expr.op)
        if handler is None:
            self.unsupported(*unsupported_expr(expr))
        return handler(self, expr, target)

    # --- expressions -----------------------------------------------------------------------------

    def ex_binop(self, expr, target):
        if expr.fn is operator.mul and isinstance(self.typemap[target.name], nbt.List):
            return self.repeated_list(expr, target)
        if expr.fn is operator.add and isinstance(self.lookup(expr.lhs), GrowingList):
            return self.joined_lists(self.lookup(expr.lhs), self.lookup(expr.rhs))
        if expr.fn in (operator.eq, operator.ne) and all(
                is_string(self.type_of(v)) for v in (expr.lhs, expr.rhs)):
            # a string compared (`method == "euler"`): a call of the operator, a flag without
            # derivatives (IR comparisons take numbers); numba compares the strings at run time
            return self.b.call(expr.fn, [self.value(expr.lhs), self.value(expr.rhs)], None,
                               BoolType())
        if expr.fn is operator.contains and isinstance(self.type_of(expr.lhs), TupleType) \
                and isinstance(self.type_of(expr.rhs), IntType):
            return self.contains_index(self.value(expr.lhs), self.value(expr.rhs))
        if expr.fn is operator.add and all(isinstance(self.type_of(v), TupleType)
                                           for v in (expr.lhs, expr.rhs)):
            # tuples joined (also how Python passes `f(a, *t)`): one tuple of all entries
            lhs, rhs = self.value(expr.lhs), self.value(expr.rhs)
            return self.b.build_tuple([self.b.tuple_getitem(t, k) for t in (lhs, rhs)
                                       for k in range(len(t.type))])
        cls = ops.BINARY_OP_BY_PYFUNC.get(expr.fn)
        if expr.fn in (operator.is_, operator.is_not):
            self.unsupported("`is None` / `is not None` tests (numba's optional values, a "
                             "variable that holds None on some paths)", "keep a flag beside "
                             "the value (found = False), or start from a sentinel "
                             "(best = np.inf)")
        if cls is None:
            self.unsupported(f"the operator {expr.fn}", "rewrite it with supported arithmetic")
        lhs, rhs = self._coerced_operands(expr, [expr.lhs, expr.rhs])
        return self.b.binary(cls, lhs, rhs, self.type_of(target),
                             checked=self._raises_on_zero(cls, lhs, rhs))

    def ex_inplace_binop(self, expr, target):
        bound = self.lookup(expr.lhs)
        if expr.fn is operator.iadd and isinstance(bound, GrowingList):
            self.extend_list(bound, self.lookup(expr.rhs), "+=")
            return bound
        cls = ops.BINARY_OP_BY_PYFUNC.get(expr.immutable_fn)
        if cls is None:
            self.unsupported(f"the in-place operator {expr.fn}", "rewrite it as x = x op y")
        lhs, rhs = self._coerced_operands(expr, [expr.lhs, expr.rhs])
        if isinstance(lhs.type, ArrayType):
            if isinstance(rhs.type, ArrayType) and rhs is not lhs and may_view_memory(rhs):
                message = self.b.const(self.overlap_message(), from_numba(nbt.unicode_type))
                self.b.call(refuse_overlap, [lhs, rhs, message], type=none)
            return self.b.inplace(cls, lhs, rhs)
        return self.b.binary(cls, lhs, rhs, self.type_of(target),
                             checked=self._raises_on_zero(cls, lhs, rhs))

    def _raises_on_zero(self, cls, lhs, rhs) -> bool:
        """Whether numba raises ZeroDivisionError for this op in the primal: scalar `/`, `//`
        and `%` under the python error model, and `**` with an integer exponent (0 ** -1)."""
        if not (self.checks_division and cls.CAN_DIVIDE_BY_ZERO and lhs.type.is_scalar
                and rhs.type.is_scalar):
            return False
        k = ops.constant_value(rhs)
        if cls is ops.Pow:  # x ** 2 cannot divide by zero
            return rhs.type.is_integer and not (isinstance(k, int) and k >= 0)
        return k is None or k == 0  # nor can x / 2.0

    def ex_unary(self, expr, target):
        cls = next((c for c in ops.UNARY_OPS if c.PYFUNC is expr.fn or c.NUMBA_SYMBOL == expr.fn),
                   None)
        if cls is None:
            self.unsupported(f"the unary operator {expr.fn}", "rewrite it with arithmetic")
        (value,) = self._coerced_operands(expr, [expr.value])
        return self.b.unary(cls, value, self.type_of(target))

    def ex_cast(self, expr, target):
        if self.returns_list:  # (the list itself: `on_return` returns its buffers)
            return self.lookup(expr.value)
        return self.value(expr.value)  # return casts happen at `ret`, to the declared type

    def ex_phi(self, expr, target):
        if isinstance(self.typemap[target.name], nbt.List):
            return self.list_phi(expr, target)
        phi = self.b.phi(self.type_of(target), hint=None)
        self.pending_phis.append((phi, expr))
        return phi.result

    def ex_getattr(self, expr, target):
        base = self.lookup(expr.value)
        if isinstance(base, st.LazyElement) and base.value is not None:
            base = base.value  # a for loop's element (`for p in pts: p.x`)
        t = self.typemap[target.name]
        if isinstance(base, st.StaticObject):
            attr = getattr(base.obj, expr.attr)
            if isinstance(attr, (int, float, bool, np.number)):
                return self.b.const(attr, from_numba(t))
            return st.StaticObject(attr)
        if isinstance(base, GrowingList) and isinstance(t, nbt.BoundFunction):
            return ListMethod(base, expr.attr)
        if isinstance(t, nbt.BoundFunction):
            return st.BoundMethod(self.value(expr.value), expr.attr)
        if isinstance(base, Value) and isinstance(base.type, NamedTupleType) \
                and expr.attr in base.type.fields:  # p.alpha: the entry at alpha's position
            return self.b.tuple_getitem(base, base.type.fields.index(expr.attr))
        if expr.attr == "flat" and isinstance(t, nbt.NumpyFlatType):
            return st.FlatIterator(self.value(expr.value), from_numba(t))
        if self._is_record(expr.value):
            return self.read_record_field(self.value(expr.value), expr.attr, target)
        return self.b.getattr(self.value(expr.value), expr.attr, from_numba(t))

    def ex_getitem(self, expr, target):
        base = self.lookup(expr.value)
        key = self.typemap.get(expr.index.name)
        if isinstance(key, nbt.StringLiteral) and self._is_record(expr.value):
            # r['a'] with 'a' in a variable numba knows: the field read r.a
            return self.read_record_field(self.value(expr.value), key.literal_value, target)
        if isinstance(key, nbt.StringLiteral) and self.is_record_array_var(expr.value):
            return self.field_of_records(self.value(expr.value), key.literal_value, target)
        if isinstance(base, GrowingList):
            return self.list_getitem(base, self.value(expr.index))
        if isinstance(base, st.ListLiteral):
            index = self.value(expr.index)
            if ops.constant_value(index) is None and index.type.is_integer:
                # read as the tuple of its items (runtime index: entries must share a type)
                return self._getitem(self._list_as_tuple(base), index, target)
            return self._list_entry(base, ops.constant_value(index))
        return self._getitem(self.value(expr.value), self.value(expr.index), target)

    def ex_static_getitem(self, expr, target):
        base = self.lookup(expr.value)
        if isinstance(base, GrowingList) and expr.index_var is not None:
            return self.list_getitem(base, self.value(expr.index_var))
        if isinstance(base, st.ListLiteral):
            return self._list_entry(base, expr.index)
        if isinstance(expr.index, str) and self._is_record(expr.value):
            # r['a'] is r.a (a field read; records.py for their derivatives)
            return self.read_record_field(self.value(expr.value), expr.index, target)
        if isinstance(expr.index, str) and self.is_record_array_var(expr.value):
            return self.field_of_records(self.value(expr.value), expr.index, target)
        if isinstance(base, Value) and isinstance(base.type, TupleType) \
                and isinstance(expr.index, int):
            return self.b.tuple_getitem(base, expr.index)
        index = (self.value(expr.index_var) if expr.index_var is not None
                 else self._static_index(expr.index))
        return self._getitem(self.value(expr.value), index, target)

    def _is_record(self, var) -> bool:
        return isinstance(self.typemap.get(var.name), nbt.Record)

    def _getitem(self, value, index, target):
        if isinstance(value.type, TupleType):
            k = ops.constant_value(index)
            if isinstance(k, int):
                return self.b.tuple_getitem(value, k)
            picked = _constant_slice(index)
            if picked is not None:  # t[1:], t[:2], t[::-1]: the tuple of the entries picked
                entries = range(len(value.type.elements))[picked]
                return self.b.build_tuple([self.b.tuple_getitem(value, k) for k in entries])
        added = rewrites.newaxis_getitem(self.b, value, index, self.type_of(target))
        if added is not None:
            return added
        index = rewrites.without_ellipsis(self.b, value, index) or index
        gathered = self.gather_records(value, index, self.type_of(target))
        if gathered is not None:
            return gathered
        return self.b.getitem(value, index, self.type_of(target))

    def ex_build_tuple(self, expr, target):
        return self.b.build_tuple([self.value(v) for v in expr.items])

    # --- implicit conversions ------------------------------------------------------------------

    def _coerce(self, value: Value, to) -> Value:
        """Insert the scalar conversion numba would do implicitly (int -> float, ...)."""
        if value.type != to and isinstance(value.type, _NUMBER_TYPES) \
                and isinstance(to, _NUMBER_TYPES):
            return self.b.cast(value, to)
        return value

    def _coerced_operands(self, expr, nvars) -> list:
        values = [self.value(v) for v in nvars]
        sig = self.calltypes.get(expr)
        if sig is None or len(sig.args) != len(values):
            return values
        return [self._coerce(v, from_numba(t)) for v, t in zip(values, sig.args)]

    def _coerced_to_signature(self, values: list, sig) -> list:
        if sig is None or len(sig.args) < len(values):
            return values  # star-args signatures (min, max) type a tuple of all arguments
        return [self._coerce(v, from_numba(t)) if isinstance(v, Value) else v
                for v, t in zip(values, sig.args)]

    # --- phis ------------------------------------------------------------------------------------

    def _fill_phis(self) -> None:
        fn = self.b.function
        preds = predecessors(fn)
        label_of = {block: label for label, block in self.blocks.items()}
        self._fill_list_phis(preds, label_of)
        for phi, expr in self.pending_phis:
            incoming = dict(zip(expr.incoming_blocks, expr.incoming_values))
            for pred in preds[phi.block]:
                var = incoming.get(label_of.get(pred), ir.UNDEFINED)
                phi.add_incoming(pred, self._phi_operand(var, phi, pred))
        dom = Dominators(fn)
        for phi, start, nxt, header in self.loop_phis:
            header = self._move_to_loop_header(phi, header, preds, dom)
            for pred in preds[header]:
                phi.add_incoming(pred, nxt if dom.dominates(header, pred) else start)

    @staticmethod
    def _move_to_loop_header(phi, block: Block, preds: dict, dom) -> Block:
        """The block the loop's back edge enters. numba may put `iternext` in a block that the
        header (holding only numba's phis) jumps to; a counter phi there would never see the
        back edge, and the loop would never end. Move the phi up to the header."""
        header = block
        while not any(dom.dominates(header, p) for p in preds[header]) \
                and len(preds[header]) == 1 and isinstance(preds[header][0].terminator, ops.Jump):
            header = preds[header][0]
        if header is block or not any(dom.dominates(header, p) for p in preds[header]):
            return block
        block.ops.remove(phi)
        header.insert(len(header.phis), phi)
        return header

    def _phi_operand(self, var, phi, pred: Block) -> Value:
        if var is ir.UNDEFINED or not isinstance(var, ir.Var):
            return self._undef(phi.result.type)
        self.b.loc = phi.loc
        value = self.value_at_end(var, pred)
        if value.type != phi.result.type:
            value = self._cast_at_end(pred, value, phi.result.type)
        return value

    def value_at_end(self, var, block: Block) -> Value:
        bound = self.lookup(var)
        if isinstance(bound, st.LazyElement):
            return bound.value
        if not isinstance(bound, Value):
            self.unsupported(f"a loop-carried {type(bound).__name__}",
                             "keep such objects out of loops and branches")
        return bound

    def _cast_at_end(self, block: Block, value: Value, to) -> Value:
        if _of_any_layout(value.type, to):
            # (numba types a variable holding arrays of different layouts "A", `b = a if c
            # else a.T`, `m = inv(m)` in a loop from a C-ordered start: the array itself,
            # retyped, which every mode follows as a view)
            relayout = ops.Call(any_layout, [value], to, (), self.b.loc)
            block.insert(len(block.ops) - 1, relayout)
            return relayout.result
        if not (isinstance(value.type, _NUMBER_TYPES) and isinstance(to, _NUMBER_TYPES)):
            self.unsupported(f"a variable that is {value.type} on one path and {to} on another",
                             "give the variable one type on every path")
        cast = ops.Cast(value, to, self.b.loc)
        block.insert(len(block.ops) - 1, cast)
        return cast.result

    def _undef(self, t) -> Value:
        undef = ops.Undef((), t, self.b.function.loc)
        self.b.function.entry.insert(0, undef)
        return undef.result


def _of_any_layout(t, to) -> bool:
    """Whether `to` is the array type `t` of layout "A" (what numba gives a variable holding
    arrays of several layouts)."""
    return isinstance(t, ArrayType) and isinstance(to, ArrayType) and to.layout == "A" \
        and t.layout != "A" and (t.dtype, t.ndim, t.readonly) == (to.dtype, to.ndim, to.readonly)


def _constant_slice(index) -> Optional[slice]:
    """The Python slice `index` is, when it is built from constants (numba slices tuples by
    constant slices only), else None."""
    op = getattr(index, "op", None)
    if not isinstance(op, ops.BuildSlice):
        return None
    parts = [ops.constant_value(v, default=...) for v in op.operands]
    if any(p is ... or not (p is None or isinstance(p, int)) for p in parts):
        return None
    return slice(*parts)


def _is_data(value) -> bool:
    """Values that become Constant ops (everything else is a compile-time object)."""
    return value is None or isinstance(value, (bool, int, float, complex, str, bytes, tuple,
                                               np.number, np.ndarray, np.bool_))


def _numba_rpo(blocks: dict) -> list:
    """Labels of the blocks reachable from the entry, in reverse post-order."""
    entry = min(blocks)
    seen, order = {entry}, []
    stack = [(entry, iter(blocks[entry].terminator.get_targets()))]
    while stack:
        label, succs = stack[-1]
        nxt = next((s for s in succs if s not in seen), None)
        if nxt is None:
            order.append(label)
            stack.pop()
        else:
            seen.add(nxt)
            stack.append((nxt, iter(blocks[nxt].terminator.get_targets())))
    order.reverse()
    return order


_STMT_HANDLERS = {
    ir.Assign: Importer.on_assign,
    ir.SetItem: Importer.on_setitem,
    ir.StaticSetItem: Importer.on_static_setitem,
    ir.SetAttr: Importer.on_setattr,
    ir.Jump: Importer.on_jump,
    ir.Branch: Importer.on_branch,
    ir.Return: Importer.on_return,
    ir.StaticRaise: Importer.on_static_raise,
    ir.DynamicRaise: Importer.on_dynamic_raise,
    ir.Raise: Importer.on_raise,
}

_VALUE_HANDLERS = {
    ir.Arg: Importer.on_arg,
    ir.Var: Importer.on_var,
    ir.Const: Importer.on_const,
    ir.Global: Importer.on_global,
    ir.FreeVar: Importer.on_global,
    ir.Expr: Importer.on_expr,
}

_EXPR_HANDLERS = {
    "binop": Importer.ex_binop,
    "inplace_binop": Importer.ex_inplace_binop,
    "unary": Importer.ex_unary,
    "cast": Importer.ex_cast,
    "phi": Importer.ex_phi,
    "getattr": Importer.ex_getattr,
    "getitem": Importer.ex_getitem,
    "static_getitem": Importer.ex_static_getitem,
    "build_tuple": Importer.ex_build_tuple,
    "build_list": Importer.ex_build_list,
    "exhaust_iter": Importer.ex_exhaust_iter,
    "call": Importer.ex_call,
    "getiter": LoopReads.ex_getiter,
    "iternext": LoopReads.ex_iternext,
    "pair_first": LoopReads.ex_pair_first,
    "pair_second": LoopReads.ex_pair_second,
    "typed_getitem": Importer.ex_typed_getitem,
}


_SPECIAL_CALLS = {
    range: LoopReads.call_range,
    nb.prange: LoopReads.call_range,  # moonlite compiles serially; prange means range here
    zip: LoopReads.call_zip,
    enumerate: LoopReads.call_enumerate,
    slice: Importer.call_slice,
    tuple: Importer.call_tuple,
    nb.literal_unroll: Importer.call_literal_unroll,
    nb.length_of_iterator: LoopReads.call_length_of_iterator,
    nb.empty_inferred: Importer.call_empty_inferred,
    bool: Importer.call_bool,
    float: Importer._cast_call,
    int: Importer._cast_call,
}
Importer.SPECIAL_CALLS = _SPECIAL_CALLS
