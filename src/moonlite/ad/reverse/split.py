"""Cutting a reverse rule into a sweep and a pullback that Python calls one after the other (vjp).

`grad` runs the forward sweep and the pullback as one compiled function, so its tapes (numba
lists) never leave compiled code. `vjp` returns to Python between the two, so the rule is cut at
the block where the sweep hands over to the pullback:

    sweep(*primals) -> (out, state)
    pullback(*primals, dout, *state) -> (out, grads)

`state` holds what the pullback reads that the sweep made: tapes of numbers as numpy arrays (a
list of 1e5 floats costs 46 ms to cross into Python; an array costs nothing), other tapes (of
arrays, of tuples) as `numba.typed.List`s (not reflected lists: numba deprecates those, and
views stay views of the arrays they were taken from), shadow arrays, and the locals the sweep
filled. (Turning a tape of index tuples into a 2-D array and back gave a list of 1-D arrays,
which index by fancy indexing: silently wrong values. Only tapes of numbers become arrays.)
Adjoint locals start from zero in the pullback.
"""

from __future__ import annotations

from ...ir import Builder, ops
from ...ir.core import Argument, Block, Function, Value
from ..._numba import types as nbt
from ...ir.types import (ArrayType, BoolType, FloatType, IntType, OpaqueType, TapeType,
                        TupleType)
from .helpers import (tape_as_array, tape_as_typed_list, tape_from_array,
                              tape_from_typed_list)


def split_rule(fn: Function, handoff: Block, resume: Block, out_var: ops.LocalVar,
               fresh_locals: list, n_primals: int) -> tuple:
    """(sweep, pullback) from the combined rule `fn` (consumed: its blocks move)."""
    sweep_blocks = _reachable(fn.entry, stop=resume)
    pull_blocks = _reachable(resume, stop=None)
    assert not sweep_blocks & pull_blocks, "the sweep and the pullback share a block"
    sweep_order = [b for b in fn.blocks if b in sweep_blocks]
    pull_order = [b for b in fn.blocks if b in pull_blocks]
    values, local_vars = _crossing(sweep_order, pull_order, set(fresh_locals))
    primals, dout = fn.args[:n_primals], fn.args[n_primals]
    out_type, grads_type = fn.return_type.elements

    state_types = [_state_type(v.type) for v in values] + [var.type for var in local_vars]
    sweep = _sweep_function(fn, sweep_order, handoff, values, local_vars, primals, out_var,
                            out_type, state_types)
    pullback = _pullback_function(fn, pull_order, resume, values, local_vars, fresh_locals,
                                  primals, dout, state_types)
    return sweep, pullback


def _reachable(start: Block, stop) -> set:
    seen, work = set(), [start]
    while work:
        block = work.pop()
        if block in seen or block is stop:
            continue
        seen.add(block)
        work.extend(block.successors())
    return seen


def _crossing(sweep_order: list, pull_order: list, fresh: set) -> tuple:
    """SSA values the sweep defines and the pullback reads; locals it fills and the pullback
    reads. Both in a deterministic order."""
    defined = {op.result for b in sweep_order for op in b.ops if op.result is not None}
    stored = {op.var for b in sweep_order for op in b.ops if isinstance(op, ops.StoreLocal)}
    values, local_vars = {}, {}
    for block in pull_order:
        for op in block.ops:
            for v in op.operands:
                if v in defined:
                    values.setdefault(v, None)
            if isinstance(op, ops.LoadLocal) and op.var in stored and op.var not in fresh:
                local_vars.setdefault(op.var, None)
    return list(values), list(local_vars)


def _as_array(t) -> bool:
    """Tapes of numbers cross as arrays; tapes of anything else (arrays, tuples) as lists."""
    return isinstance(t, TapeType) and isinstance(t.element, (FloatType, IntType, BoolType))


def _state_type(t):
    if _as_array(t):
        return ArrayType(t.element, 1, "C", False)
    if isinstance(t, TapeType):
        return OpaqueType(nbt.ListType(t.element.to_numba()))
    return t


def _sweep_function(fn, blocks, handoff, values, local_vars, primals, out_var, out_type,
                    state_types):
    result_type = TupleType((out_type, TupleType(tuple(state_types))))
    sweep = Function(f"{fn.name}_sweep", primals, result_type, loc=fn.loc,
                     boundscheck=fn.boundscheck)
    for block in blocks:
        sweep.add_block(block)
    handoff.ops.pop()  # its jump into the pullback
    b = Builder(sweep)
    b.position_at_end(handoff)
    state = [_tape_out(b, v) for v in values] + [b.load(var) for var in local_vars]
    b.ret(b.build_tuple([b.load(out_var), b.build_tuple(state)]))
    return sweep


def _tape_out(b: Builder, value: Value) -> Value:
    if _as_array(value.type):
        return b.call(tape_as_array, [value], type=_state_type(value.type))
    if isinstance(value.type, TapeType):
        return b.call(tape_as_typed_list, [value], type=_state_type(value.type))
    return value


def _pullback_function(fn, blocks, resume, values, local_vars, fresh_locals, primals, dout,
                       state_types):
    names = [a.name for a in primals] + ["dout"] + [f"state{k}" for k in range(len(state_types))]
    b = Builder.new_function(f"{fn.name}_pullback",
                             [a.type for a in primals] + [dout.type] + state_types, names,
                             fn.return_type, loc=fn.loc, boundscheck=fn.boundscheck)
    new_args = b.function.args
    b.position_at_end(b.new_block("unpack"))
    mapping = dict(zip(primals + [dout], new_args))
    state_args = new_args[len(primals) + 1:]
    for old, arg in zip(values, state_args):
        mapping[old] = _tape_in(b, old, arg)
    for var, arg in zip(local_vars, state_args[len(values):]):
        b.store(var, arg)
    for var in fresh_locals:
        b.store(var, b.const(0.0, var.type))
    b.jump(resume)
    for block in blocks:
        b.function.add_block(block)
        for op in block.ops:
            op.operands = tuple(mapping.get(v, v) for v in op.operands)
    return b.function


def _tape_in(b: Builder, old: Value, arg: Argument) -> Value:
    """A fresh list the pullback may pop."""
    if not isinstance(old.type, TapeType):
        return arg
    helper = tape_from_array if _as_array(old.type) else tape_from_typed_list
    return b.call(helper, [arg], type=old.type)

