"""The reverse pass: its state, its entry points and its handler tables (the halves of each op's
handling live in the mixins: `keep`, `adjoints`, `sweep`, `pullback`, `elementwise`, `memory`,
`custom`)."""

from __future__ import annotations

import linecache
from typing import Optional


from ...errors import UnsupportedError
from ...ir import Builder, ops, reverse_post_order
from ...ir.cfg import natural_loops, predecessors
from ...ir.cleanup import remove_dead_code
from ...ir.locals import forward_locals
from ...ir.core import Function, Op
from ...ir.types import (ArrayType, BoolType, IntType, OpaqueType, TupleType, int64,
                         is_differentiable, is_float_record, is_record_array, none)
from ..tangents import hides_derivatives
from ..refusals import arrays_held_by_opaque_values
from ..activity import varied_values
from ...ir.readonly import never_written
from ..context import NO_CALLEES, PassContext
from .custom import CustomRuleAdjoints
from .branches import find_choices
from .loops import find_inductions
from .split import split_rule
from .types import (grad_type as _grad_type, has_shadow, is_float as _is_float,
                    is_float_array as _is_float_array, leaf_paths, leaf_types)
from .adjoints import AdjointStore
from .elementwise import ElementwiseAdjoints
from .keep import How, KeptValues
from .memory import MemoryAdjoints
from .pullback import Pullback
from .scratch import unrestored_writes
from .sweep import ForwardSweep


def reverse_transform(fn: Function, active=None, context: PassContext = NO_CALLEES,
                      strong_zeros: bool = False) -> Function:
    """The gradient function of `fn` (see the module docstring); `fn` is left untouched.

    `active` (argument indices, default all) says which gradients are wanted: an array argument
    outside it that `fn` never writes is a constant (no shadow, gradient `None`), so data arrays
    cost nothing in the pullback. `strong_zeros`: every product of an adjoint and a partial is
    exactly zero where either is (`rules/strong_zeros.py`), bounded partials and array
    updates included: the variant the API falls back to when a gradient has a nan
    (`ad/nan_retry.py`), since the checks cost up to 2x on loop kernels."""
    return _ReversePass(fn, active, context, strong_zeros).run()


def reverse_transform_split(fn: Function, context: PassContext = NO_CALLEES) -> tuple:
    """`(sweep, pullback)`: the gradient function of `fn` cut where the sweep hands over to the
    pullback, for callers that return to Python in between (`split.py`)."""
    rp = _ReversePass(fn, context=context)
    combined = rp.run()
    return split_rule(combined, rp.handoff, rp.resume, rp.out_var, list(rp.adjoints.values()),
                      len(fn.args))


class _ReversePass(CustomRuleAdjoints, KeptValues, AdjointStore, ForwardSweep, Pullback, ElementwiseAdjoints, MemoryAdjoints):
    def __init__(self, fn: Function, active=None, context: PassContext = NO_CALLEES,
                 strong_zeros: bool = False):
        self.fn = fn
        self.strong_zeros = strong_zeros  # every adjoint product zero-guarded (elementwise.py)
        self.context = context  # callee IR for custom.py (driver.PASS_CONTEXT)
        out = fn.return_type
        if not (_is_float(out) or _is_float_array(out) or is_record_array(out)
                or _is_tuple_output(out)):
            raise self.unsupported(None, f"reverse mode of a function returning {out}",
                                   "return a float, a float array, a structured array, or a "
                                   "tuple or namedtuple of floats and float arrays (tuples of "
                                   "them too)")
        # arrays without shadows: inactive read-only data, and views of them (and inactive
        # records: never written, see rules/records.py)
        self.constant_arrays = {a for i, a in enumerate(fn.args) if active is not None
                                and i not in active and (has_shadow(a.type)
                                                         or is_float_record(a.type))
                                and never_written(fn, a)}
        grads = TupleType(tuple(none if a in self.constant_arrays else _grad_type(a.type)
                                for a in fn.args))
        names = [a.name for a in fn.args] + ["dout"]
        # an array output is returned as a copy taken at the return (the pullback then undoes
        # writes): a C-contiguous array whatever the layout of the value returned; its
        # cotangent is one too (what jacrev's unit rows and vjp's ascontiguousarray give)
        self.out_type = output_type(out)
        self.b = Builder.new_function(f"{fn.name}_rev", [*fn.argtypes, self.out_type], names,
                                      TupleType((self.out_type, grads)), loc=fn.loc,
                                      boundscheck=fn.boundscheck)
        self.values: dict = dict(zip(fn.args, self.b.function.args))
        self.dout = self.b.function.args[-1]
        self.blocks: dict = {}      # forward block of fn -> its copy
        self.rblocks: dict = {}     # forward block of fn -> its reverse block
        self.exit_of: dict = {}     # forward block of fn -> copy holding its terminator
        self.shadows: dict = {}     # float array value of fn -> shadow Value (forward sweep)
        self.adjoints: dict = {}    # float value of fn -> LocalVar
        self._zeros_in_block = (None, set())  # see _zero_adjoints
        self._local_values = None  # see _used_only_in_own_block
        self._loaded_once: dict = {}  # array LocalVar -> its load in the resume block
        self.kept: dict = {}        # key (a value, Saved, ShadowOf) -> Kept (keep.py)
        self.phis: list = []
        self.shadow_alias: dict = {}  # in-place result -> the array it updated
        loops = natural_loops(fn) if fn.blocks else []
        self.loop_blocks = set().union(*(lp.body for lp in loops))
        self.preds = predecessors(fn)
        self.inductions = find_inductions(fn, loops, self.preds, self.loop_blocks)
        self.induction_of = {ind.phi.result: ind for ind in self.inductions.values()}
        self.choices = find_choices(fn, self.preds, loops, self.inductions)
        self.recalled: dict = {}  # key -> (builder block, value): recomputed once per block
        self.remat: set = set()   # values the pullback recomputes instead of keeping
        self._written: dict = {}
        self.varied = varied_values(fn, active, self.constant_arrays)
        self.hidden_arrays = arrays_held_by_opaque_values(fn)  # refused targets (refusals.py)
        self.need = self._needed_values()
        self.unrestored = unrestored_writes(fn, self.remat)  # writes not saved (scratch.py)

    def run(self) -> Function:
        order = reverse_post_order(self.fn)
        self.setup = self.b.new_block("setup")
        for block in order:
            self.blocks[block] = self.b.new_block(block.hint)
        # every return of the sweep jumps to `handoff`, which jumps to `resume`, where the
        # pullback starts at the reverse of the return taken: `split()` cuts the function there
        self.handoff, self.resume = self.b.new_block("handoff"), self.b.new_block("resume")
        for block in order:
            self.rblocks[block] = self.b.new_block(f"rev_{block.hint or ''}")
        self.finish = self.b.new_block("finish")
        self.b.position_at_end(self.setup)
        self.block_stack = None  # made on first use: numba cannot type a list never pushed to
        self.out_var = ops.LocalVar(self.out_type, "out")
        # the shadows of the arrays of a tuple output, set at the return taken (sweep.py)
        # (of any layout: an entry may be a view, whose shadow is a view of another shadow)
        # (keyed by the entry's path: a tuple output may hold tuples)
        self.out_shadow_vars = {
            path: ops.LocalVar(ArrayType(t.dtype, t.ndim, "A"),
                               "out_shadow" + "_".join(map(str, path)))
            for path, t in (leaf_paths(self.out_type) if isinstance(self.out_type, TupleType)
                            else ()) if _is_float_array(t)}
        self.return_var, self.returns = ops.LocalVar(int64, "return_taken"), []
        self._shadow_arguments()
        for block in order:
            self._forward_block(block)
        self._fill_forward_phis()
        self._save_counters_on_entry()
        self._hand_over()
        for block in order:
            self._reverse_block(block)
        self._finish()
        self._initialise_locals()
        # stand-ins and constants rules did not read; adjoints stored and read back at once
        return remove_dead_code(forward_locals(self.b.function))

    def _initialise_locals(self) -> None:
        """Zero every adjoint local at the top of the function, before anything reads it."""
        self.b.position_at_end(self.setup)
        for var in self.adjoints.values():
            self.b.store(var, self.b.const(0.0, var.type))
        for kept in self.kept.values():
            if kept.how is How.COUNTER:  # read before the first entry into a nested loop
                self.b.store(kept.where, self.b.const(0, kept.where.type))
        self.b.jump(self.blocks[self.fn.entry])

    def unsupported(self, op: Optional[Op], construct: str, hint: str) -> UnsupportedError:
        loc = op.loc if op is not None else self.fn.loc
        source = linecache.getline(loc.filename, loc.line) if loc.line else ""
        return UnsupportedError(construct, function=self.fn.name, argtypes=self.fn.argtypes,
                                loc=loc, hint=hint, source_line=source)


def _is_tuple_output(t) -> bool:
    """A tuple (or namedtuple) output of floats and float arrays, and of ints, bools and
    strings (an iteration count beside a loss), one at least differentiable, at any depth of
    nesting: its cotangent is a tuple of the same structure (the other entries unused)."""
    if not isinstance(t, TupleType):
        return False
    leaves = leaf_types(t)
    return any(_is_float(e) or _is_float_array(e) for e in leaves) and all(
        _is_float(e) or _is_float_array(e) or isinstance(e, (IntType, BoolType))
        or _float_free(e) for e in leaves)


def _float_free(t) -> bool:
    """A value that holds no float (a string, a field of an instance returned beside its
    floats: api_instance_outputs.py): its cotangent is unused, as an int's."""
    return isinstance(t, OpaqueType) and not hides_derivatives(t) and not is_differentiable(t)


def output_type(out):
    """The type of the output a reverse rule returns: arrays as C-contiguous copies taken at
    the return (the pullback then undoes writes), a tuple output as a plain tuple of those."""
    if _is_float_array(out) or is_record_array(out):
        return ArrayType(out.dtype, out.ndim, "C", False)
    if isinstance(out, TupleType):
        return TupleType(tuple(output_type(e) for e in out.elements))
    return out


def _refuse_reverse_over_reverse(self, op: Op) -> None:
    raise self.unsupported(op, "reverse mode over a derived reverse rule (reverse over reverse: "
                           "a gradient of a function that calls moonlite.grad, vjp, ...)",
                           "differentiate the gradient in forward mode instead: moonlite.jvp "
                           "of it, moonlite.hvp, moonlite.hessian")


# One handler per op class in each half of the pass, with no default: an op class without an
# entry is an error here (tests/ad/test_handlers.py walks every op class), never a silent pass.
_LOCALS_AND_TAPES = (ops.LoadLocal, ops.StoreLocal, ops.TapeNew, ops.TapePush, ops.TapePop,
                     ops.TapePeek)


_CONTROL = (ops.Phi, ops.Jump, ops.Branch, ops.Raise)  # handled by the block driver


FORWARD_HANDLERS = {
    **{cls: _refuse_reverse_over_reverse for cls in _LOCALS_AND_TAPES},
    **{cls: _ReversePass.fw_default for cls in (
        ops.Constant, ops.GlobalRef, ops.Undef, ops.Cast, ops.Select, ops.MethodCall,
        ops.GetAttr, ops.GetItem, ops.TupleGetItem, ops.BuildSlice, ops.Jump, ops.Branch,
        ops.Raise, *ops.BINARY_OPS, *ops.UNARY_OPS)},
    ops.SetItem: _ReversePass.fw_setitem,
    ops.InplaceBinary: _ReversePass.fw_inplace,
    ops.Return: _ReversePass.fw_return,
    ops.Call: _ReversePass.fw_call,
    ops.BuildTuple: _ReversePass.fw_build_tuple,
}


REVERSE_HANDLERS = {
    **{cls: _refuse_reverse_over_reverse for cls in _LOCALS_AND_TAPES},
    **{cls: _ReversePass.rv_elementwise for cls in (ops.Cast, ops.Select, *ops.BINARY_OPS,
                                                    *ops.UNARY_OPS)},
    ops.Return: _ReversePass.rv_return,
    ops.Constant: _ReversePass.rv_nothing,
    ops.GlobalRef: _ReversePass.rv_nothing,
    ops.Undef: _ReversePass.rv_nothing,
    ops.GetAttr: _ReversePass.rv_getattr,
    ops.BuildSlice: _ReversePass.rv_nothing,
    ops.BuildTuple: _ReversePass.rv_build_tuple,
    ops.TupleGetItem: _ReversePass.rv_tuple_getitem,
    ops.GetItem: _ReversePass.rv_getitem,
    ops.SetItem: _ReversePass.rv_setitem,
    ops.InplaceBinary: _ReversePass.rv_inplace,
    ops.Call: _ReversePass.rv_call,
    ops.MethodCall: _ReversePass.rv_method,
    ops.MatMul: _ReversePass.rv_primitive,
}

# the mixins dispatch through these (they cannot import this module: it imports them)
_ReversePass.FORWARD_HANDLERS = FORWARD_HANDLERS
_ReversePass.REVERSE_HANDLERS = REVERSE_HANDLERS
_ReversePass.CONTROL_OPS = _CONTROL
