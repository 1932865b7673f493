"""Emit numba IR (`numba.core.ir`) from moonlite IR.

The emitted IR is untyped, as if numba's bytecode front end had produced it: numba then types it,
inserts reference counting and generates LLVM. Each moonlite op becomes the numba expression a
Python programmer's code would have produced, so numba compiles it as it compiles njit code
(without its SSA reconstruction: see `dispatcher.LoweringPipeline`). SSA phis leave by copies on
incoming edges (critical edges are split first, and copies that would clobber each other go
through temporaries); LLVM's mem2reg rebuilds the phis.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import _numba as nb
from ..errors import LoweringError
from ..ir import ops
from ..ir.cached_calls import wrapper_for
from ..ir.cfg import Dominators, natural_loops, reverse_post_order
from ..ir.core import Argument, Function, Value
from ..ir.traits import Trait
from ..ir.types import ArrayType, BoolType, FloatType, IntType, NamedTupleType
from . import tapes
from .helpers import QUIET_BINOPS, select_impl

ir = nb.ir

_INPLACE = {operator.add: operator.iadd, operator.sub: operator.isub,
            operator.mul: operator.imul, operator.truediv: operator.itruediv,
            operator.floordiv: operator.ifloordiv, operator.mod: operator.imod,
            operator.pow: operator.ipow, operator.matmul: operator.imatmul,
            operator.and_: operator.iand, operator.or_: operator.ior,
            operator.xor: operator.ixor, operator.lshift: operator.ilshift,
            operator.rshift: operator.irshift}


def _quiet_division(op: ops.BinaryOp) -> bool:
    """An unchecked scalar op that the "python" error model would make raise on a zero: true
    division, floor division and modulo; a power with an integer exponent (`0 ** -1` of ints
    raises there), unless the exponent is a constant >= 0 (left to numba, which unrolls
    `x ** 2`). A float power never raises: numba calls `llvm.pow`."""
    if op.checked or not op.CAN_DIVIDE_BY_ZERO or not op.lhs.type.is_scalar \
            or not op.rhs.type.is_scalar:
        return False
    if not isinstance(op, ops.Pow):
        return True
    if not isinstance(op.rhs.type, IntType):
        return False
    exponent = getattr(op.rhs, "op", None)
    return not (isinstance(exponent, ops.Constant) and exponent.value >= 0)


def _needs_typed_constant(t) -> bool:
    """Scalar types a plain Python constant would not give (numba types 1.0 as float64)."""
    return (isinstance(t, FloatType) and t.bits != 64) or \
        (isinstance(t, IntType) and (t.bits != 64 or not t.signed))


def _read_after_a_write(fn: Function) -> set:
    """The values read, later in their block, after an op that may write memory: numba's
    array-expression rewrite moves the computation of a "$" temporary to the statement that
    reads it, which is only right when nothing in between writes an array it reads (a tangent
    `dr = dy * 2.0` evaluated after `dy[0] = 0.0` gave a wrong jvp). They are given variables'
    names, which numba does not fuse."""
    found = set()
    for block in fn.blocks:
        defined_at = {}
        last_write = -1
        for k, op in enumerate(block.ops):
            for v in op.operands:
                if defined_at.get(v, last_write) < last_write:
                    found.add(v)
            if op.result is not None:
                defined_at[op.result] = k
            if op.traits() & Trait.WRITES:
                last_write = k
    return found


def _python_scalar(value, t):
    return float(value) if isinstance(t, FloatType) else int(value)


class NumbaEmitter:
    """One use: `NumbaEmitter(fn, func_id).emit()` returns a fresh numba FunctionIR."""

    def __init__(self, fn: Function, func_id):
        self.fn = fn
        self.func_id = func_id
        self.loc = ir.Loc(fn.loc.filename, fn.loc.line)
        self.scope = ir.Scope(None, self.loc)
        self.vars: dict = {}
        self.counter = 0
        self.labels: dict = {}  # set in emit(), for the reachable blocks
        self.next_label = len(fn.blocks)
        self.nblocks: dict = {}
        self.current = None
        self.locals: dict = {}
        self.uses: dict = {}
        for op in fn.ops():
            for v in op.operands:
                self.uses[v] = self.uses.get(v, 0) + 1
        self.unfusable = _read_after_a_write(fn)

    # --- names ---------------------------------------------------------------------------------

    def _fresh(self, hint, value: Value = None) -> ir.Var:
        # numba fuses array expressions only through temporaries (names starting with "$"), and
        # assumes a temporary is read once: so an unnamed value read exactly once is a "$"
        # temporary, as it would be in code from bytecode, and every other value is a variable.
        self.counter += 1
        if hint:
            base = hint.replace(".", "_")
        elif value is not None and self.uses.get(value, 0) == 1 \
                and value not in self.unfusable:
            base = "$v"
        else:
            base = "v"
        return self.scope.redefine(f"{base}__{self.counter}", self.loc)

    def var(self, value: Value) -> ir.Var:
        v = self.vars.get(value)
        if v is None:
            if isinstance(getattr(value, "op", None), ops.Undef):
                raise LoweringError(f"an undefined value is used outside a phi: {value!r}")
            raise LoweringError(f"value used before its definition was emitted: {value!r}")
        return v

    def define(self, value: Value, expr, loc) -> ir.Var:
        target = self.vars.get(value) or self._fresh(value.hint, value)
        self.vars[value] = target
        self.current.append(ir.Assign(expr, target, loc))
        return target

    def temp(self, expr, loc, hint="t") -> ir.Var:
        target = self._fresh("$" + hint)
        self.current.append(ir.Assign(expr, target, loc))
        return target

    def global_var(self, obj, loc, name="g") -> ir.Var:
        return self.temp(ir.Global(name, obj, loc), loc, hint=name)

    # --- driver --------------------------------------------------------------------------------

    def emit(self):
        live = set(reverse_post_order(self.fn))
        self.labels = {block: i for i, block in enumerate(b for b in self.fn.blocks if b in live)}
        for block in self.labels:
            self.nblocks[self.labels[block]] = ir.Block(self.scope, self.loc)
        self.current = self.nblocks[0]
        self.reused_tapes = _reusable_tapes(self.fn, live)
        for arg in self.fn.args:
            self._emit_arg(arg)
        self._name_phis()
        # Reverse post-order: a value's definition is emitted before its uses, whatever order
        # the pass that built the IR appended its blocks in (unreachable blocks are dropped).
        for block in reverse_post_order(self.fn):
            self.current = self.nblocks[self.labels[block]]
            for op in block.ops:
                if not isinstance(op, ops.Phi):
                    _HANDLERS[type(op)](self, op, self._loc(op))
        self._place_phi_copies()
        names = tuple(a.name for a in self.fn.args)
        return ir.FunctionIR(self.nblocks, False, self.func_id, self.loc,
                             nb.build_definitions(self.nblocks), len(names), names)

    def _loc(self, op) -> ir.Loc:
        return ir.Loc(op.loc.filename, op.loc.line) if op.loc.line else self.loc

    def _emit_arg(self, arg: Argument) -> None:
        target = self.scope.redefine(arg.name, self.loc)
        self.vars[arg] = target
        self.current.append(ir.Assign(ir.Arg(arg.name, arg.index, self.loc), target, self.loc))

    def _name_phis(self) -> None:
        for op in self.fn.ops():
            if isinstance(op, ops.Phi):
                self.vars[op.result] = self._fresh(op.result.hint or "phi")

    # --- phi copies ----------------------------------------------------------------------------

    def _place_phi_copies(self) -> None:
        for block in self.labels:
            phis = block.phis
            if not phis:
                continue
            for pred in {p for phi in phis for p in phi.incoming_blocks if p in self.labels}:
                copies = [(phi.result, phi.value_from(pred)) for phi in phis]
                copies = [(dst, src) for dst, src in copies
                          if not isinstance(getattr(src, "op", None), ops.Undef)]
                self._emit_edge_copies(pred, block, copies)

    def _emit_edge_copies(self, pred, succ, copies) -> None:
        if not copies:
            return
        pred_nblock = self.nblocks[self.labels[pred]]
        term = pred_nblock.body.pop()
        if len(set(pred.successors())) == 1:
            self._append_copies(pred_nblock, copies)
            pred_nblock.append(term)
            return
        # A critical edge: copies on it go into a new block, or they would also run on the
        # other edge (the "lost copy" problem).
        edge = ir.Block(self.scope, term.loc)
        label = self.next_label
        self.next_label += 1
        self.nblocks[label] = edge
        self._append_copies(edge, copies)
        edge.append(ir.Jump(self.labels[succ], term.loc))
        if term.truebr == self.labels[succ]:
            term.truebr = label
        if term.falsebr == self.labels[succ]:
            term.falsebr = label
        pred_nblock.append(term)

    def _append_copies(self, nblock, copies) -> None:
        sources = {self.vars[src] for _, src in copies}
        clobbers = any(self.vars[dst] in sources for dst, _ in copies)
        if clobbers and len(copies) > 1:  # parallel copy semantics through temporaries
            temps = []
            for _, src in copies:
                tmp = self._fresh("$phitmp")
                nblock.append(ir.Assign(self.vars[src], tmp, self.loc))
                temps.append(tmp)
            for (dst, _), tmp in zip(copies, temps):
                nblock.append(ir.Assign(tmp, self.vars[dst], self.loc))
            return
        for dst, src in copies:
            nblock.append(ir.Assign(self.vars[src], self.vars[dst], self.loc))

    # --- ops -----------------------------------------------------------------------------------

    def on_constant(self, op: ops.Constant, loc) -> None:
        t = op.result.type
        if isinstance(t, ArrayType) or isinstance(op.value, np.ndarray):
            self.define(op.result, ir.Global("const_array", op.value, loc), loc)
        elif _needs_typed_constant(t):
            # numba's array-expression fusion rejects numpy scalar constants: a plain Python
            # constant converted by a call of the numba type (LLVM folds the call away).
            const = self.temp(ir.Const(_python_scalar(op.value, t), loc), loc, "c")
            self._call(op.result, t.to_numba(), [const], (), loc)
        else:
            self.define(op.result, ir.Const(op.value, loc), loc)

    def on_global(self, op: ops.GlobalRef, loc) -> None:
        self.define(op.result, ir.Global(getattr(op.obj, "__name__", "g"), op.obj, loc), loc)

    def on_undef(self, op, loc) -> None:
        pass  # only phi edges read undefined values, and those copies are skipped

    def on_binary(self, op: ops.BinaryOp, loc) -> None:
        if _quiet_division(op):  # inf or nan where the derived code's error model would raise
            self._call(op.result, QUIET_BINOPS[op.PYFUNC], [self.var(op.lhs), self.var(op.rhs)],
                       (), loc)
            return
        wrapper = wrapper_for(op.PYFUNC, 2, False)
        if wrapper is not op.PYFUNC:  # `@`, compiled once (ir/cached_calls.py)
            self._call(op.result, wrapper, [self.var(op.lhs), self.var(op.rhs)], (), loc)
            return
        expr = ir.Expr.binop(op.PYFUNC, self.var(op.lhs), self.var(op.rhs), loc)
        self.define(op.result, expr, loc)

    def on_inplace(self, op: ops.InplaceBinary, loc) -> None:
        fn = op.binop.PYFUNC
        expr = ir.Expr.inplace_binop(_INPLACE[fn], fn, self.var(op.target), self.var(op.value),
                                     loc)
        self.define(op.result, expr, loc)

    def on_unary(self, op: ops.UnaryOp, loc) -> None:
        self.define(op.result, ir.Expr.unary(op.PYFUNC, self.var(op.value), loc), loc)

    def on_cast(self, op: ops.Cast, loc) -> None:
        t = op.result.type
        fn = bool if isinstance(t, BoolType) else t.to_numba()
        self._call(op.result, fn, [self.var(op.value)], (), loc)

    def on_select(self, op: ops.Select, loc) -> None:
        self._call(op.result, select_impl, [self.var(v) for v in op.operands], (), loc)

    def on_call(self, op: ops.Call, loc) -> None:
        args = [self.var(v) for v in op.positional]
        kws = [(k, self.var(v)) for k, v in op.keywords.items()]
        self._call(op.result, op.callee, args, kws, loc)

    def _call(self, result, callee, args, kws, loc) -> None:
        callee = wrapper_for(callee, len(args), bool(kws))  # compiled once (ir/cached_calls)
        func = self.global_var(callee, loc, getattr(callee, "__name__", "fn"))
        expr = ir.Expr.call(func, args, kws, loc)
        if result is None:
            self.temp(expr, loc, "call")
        else:
            self.define(result, expr, loc)

    def on_method_call(self, op: ops.MethodCall, loc) -> None:
        method = self.temp(ir.Expr.getattr(self.var(op.receiver), op.method, loc), loc, "meth")
        args = [self.var(v) for v in op.positional]
        kws = [(k, self.var(v)) for k, v in op.keywords.items()]
        self.define(op.result, ir.Expr.call(method, args, kws, loc), loc)

    def on_getattr(self, op: ops.GetAttr, loc) -> None:
        self.define(op.result, ir.Expr.getattr(self.var(op.value), op.name, loc), loc)

    def on_getitem(self, op: ops.GetItem, loc) -> None:
        expr = ir.Expr.getitem(self.var(op.value), self.var(op.index), loc)
        self.define(op.result, expr, loc)

    def on_tuple_getitem(self, op: ops.TupleGetItem, loc) -> None:
        expr = ir.Expr.static_getitem(self.var(op.tuple), op.index, None, loc)
        self.define(op.result, expr, loc)

    def on_setitem(self, op: ops.SetItem, loc) -> None:
        self.current.append(ir.SetItem(self.var(op.target), self.var(op.index),
                                       self.var(op.value), loc))

    def on_build_tuple(self, op: ops.BuildTuple, loc) -> None:
        items = [self.var(v) for v in op.items]
        if isinstance(op.result.type, NamedTupleType):  # a call of the class builds one
            return self._call(op.result, op.result.type.numba_type.instance_class, items, (), loc)
        self.define(op.result, ir.Expr.build_tuple(items, loc), loc)

    def on_build_slice(self, op: ops.BuildSlice, loc) -> None:
        self._call(op.result, slice, [self.var(v) for v in op.operands], (), loc)

    def on_jump(self, op: ops.Jump, loc) -> None:
        self.current.append(ir.Jump(self.labels[op.target], loc))

    def on_branch(self, op: ops.Branch, loc) -> None:
        self.current.append(ir.Branch(self.var(op.cond), self.labels[op.if_true],
                                      self.labels[op.if_false], loc))

    def on_return(self, op: ops.Return, loc) -> None:
        self._release_tapes(loc)
        ret = self.temp(ir.Expr.cast(self.var(op.value), loc), loc, "ret")
        self.current.append(ir.Return(ret, loc))

    def local(self, var: ops.LocalVar) -> ir.Var:
        """The numba variable standing for a moonlite local (assigned many times: LLVM's
        mem2reg makes registers and phis of its stack slot)."""
        v = self.locals.get(var)
        if v is None:
            v = self.locals[var] = self._fresh(f"local_{var.name}")
        return v

    def on_load_local(self, op: ops.LoadLocal, loc) -> None:
        self.define(op.result, self.local(op.var), loc)

    def on_store_local(self, op: ops.StoreLocal, loc) -> None:
        self.current.append(ir.Assign(self.var(op.value), self.local(op.var), loc))

    # Tapes go through intrinsics (lower/tapes.py), not list methods: a bound method increfs
    # and decrefs the list on every push and pop.

    def on_tape_new(self, op: ops.TapeNew, loc) -> None:
        element = self.global_var(op.element_type.to_numba(), loc, "element_type")
        slot = self.reused_tapes.get(op.result)
        if slot is None:
            self._call(op.result, tapes.tape_new, [element], (), loc)
            return
        slot_var = self.temp(ir.Const(slot, loc), loc, "slot")
        self._call(op.result, tapes.tape_new_reused, [element, slot_var], (), loc)

    def _release_tapes(self, loc) -> None:
        """Before a return: tapes that keep their memory go back to their slots."""
        for tape, slot in self.reused_tapes.items():
            slot_var = self.temp(ir.Const(slot, loc), loc, "slot")
            self._call(None, tapes.tape_release, [self.var(tape), slot_var], (), loc)

    def on_tape_push(self, op: ops.TapePush, loc) -> None:
        self._call(None, tapes.tape_push, [self.var(op.tape), self.var(op.value)], (), loc)

    def on_tape_pop(self, op: ops.TapePop, loc) -> None:
        self._call(op.result, tapes.tape_pop, [self.var(op.tape)], (), loc)

    def on_tape_top(self, op: ops.TapePeek, loc) -> None:
        self._call(op.result, tapes.tape_top, [self.var(op.tape)], (), loc)

    def on_raise(self, op: ops.Raise, loc) -> None:
        if all(ops.is_constant(a) for a in op.args):
            args = tuple(ops.constant_value(a) for a in op.args)
            self.current.append(ir.StaticRaise(op.exc_class, args, loc))
        else:
            args = tuple(self.var(a) if not ops.is_constant(a) else ops.constant_value(a)
                         for a in op.args)
            self.current.append(ir.DynamicRaise(op.exc_class, args, loc))


def _reusable_tapes(fn: Function, live: set) -> dict:
    """Tapes of numbers made once per call, in a block that dominates every return: tape value
    -> a slot of its own, where the list waits for the next call (`lower/tapes.py`)."""
    made = [op for b in fn.blocks if b in live for op in b.ops
            if isinstance(op, ops.TapeNew)
            and isinstance(op.element_type, (FloatType, IntType, BoolType))]
    if not made:
        return {}
    in_loops = set().union(*(lp.body for lp in natural_loops(fn)))
    dom = Dominators(fn)
    returns = [b for b in live if isinstance(b.terminator, ops.Return)]
    return {op.result: next(tapes.SLOTS) for op in made if op.block not in in_loops
            and all(dom.dominates(op.block, r) for r in returns)}


_HANDLERS = {
    ops.Constant: NumbaEmitter.on_constant,
    ops.GlobalRef: NumbaEmitter.on_global,
    ops.Undef: NumbaEmitter.on_undef,
    ops.InplaceBinary: NumbaEmitter.on_inplace,
    ops.Cast: NumbaEmitter.on_cast,
    ops.Select: NumbaEmitter.on_select,
    ops.Call: NumbaEmitter.on_call,
    ops.MethodCall: NumbaEmitter.on_method_call,
    ops.GetAttr: NumbaEmitter.on_getattr,
    ops.GetItem: NumbaEmitter.on_getitem,
    ops.TupleGetItem: NumbaEmitter.on_tuple_getitem,
    ops.SetItem: NumbaEmitter.on_setitem,
    ops.BuildTuple: NumbaEmitter.on_build_tuple,
    ops.BuildSlice: NumbaEmitter.on_build_slice,
    ops.Jump: NumbaEmitter.on_jump,
    ops.Branch: NumbaEmitter.on_branch,
    ops.Return: NumbaEmitter.on_return,
    ops.Raise: NumbaEmitter.on_raise,
    ops.LoadLocal: NumbaEmitter.on_load_local,
    ops.StoreLocal: NumbaEmitter.on_store_local,
    ops.TapeNew: NumbaEmitter.on_tape_new,
    ops.TapePush: NumbaEmitter.on_tape_push,
    ops.TapePop: NumbaEmitter.on_tape_pop,
    ops.TapePeek: NumbaEmitter.on_tape_top,
    **{cls: NumbaEmitter.on_binary for cls in ops.BINARY_OPS},
    **{cls: NumbaEmitter.on_unary for cls in ops.UNARY_OPS},
}
