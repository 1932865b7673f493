"""Forward mode: a line-by-line rewrite of moonlite IR into Dual IR (Mooncake's forwards mode).

`forward_transform(fn, width, active)` builds a new function

    fn_fwd(*primals, *tangents_0, ..., *tangents_{width-1}) -> (out, dout_0, ..., dout_{width-1})

where each `tangents_j` holds one tangent per active argument: by default every differentiable
argument (float scalars, float arrays, tuples holding them; ints and bools get none), or the
argument indices in `active`. Inactive arguments have zero tangents (a real zero array only if
the function may write into the argument: `ir/readonly.py`). `width > 1` is batched mode: `width`
tangent directions travel through one evaluation of the primal.

Invariants of the rewrite:
- blocks map one-to-one and control flow is unchanged; branches test the primal;
- every differentiable value gets one tangent per direction, defined right after the primal, so
  it dominates everything the primal dominates; constants get `ZERO`, ints and bools nothing;
- array tangents are real arrays updated in place alongside their primals: a write `a[i] = v`
  is mirrored by `da[i] = dv`, a view `a[1:]` has the view `da[1:]` as tangent, and an array
  passed to a call carries its tangent array with it, so mutation needs no special bookkeeping;
- a primitive op is differentiated by its rule in `moonlite.rules.registry`; a call of an njit
  function by the derived forward rule of that function (built recursively, cached per
  signature); a call of a moonlite-compiled function from the IR it keeps;
- the input function is never modified.

One handler per op class (`_HANDLERS`); a construct with no handler or rule raises
`UnsupportedError` naming it, the function, its argument types and the source line.
"""

from __future__ import annotations

import linecache
from typing import Optional

import numpy as np

from .. import _numba as nb
from ..debug import debug_enabled, emit_output_check, emit_shape_check
from ..errors import UnsupportedError
from ..ir import Builder, ops, reverse_post_order
from ..ir.clone import clone_op
from ..ir.core import Function, Op, Value
from ..ir.traits import Trait
from ..ir.types import ArrayType, FloatType, TupleType, is_float_record, none
from ..rules import RuleNotApplicable, lookup_jvp
from ..rules.scalar import checked_division_jvp, is_checked_division
from ..rules.custom import call_jvp, lookup_custom
from ..rules.jitclasses import any_layout
from ..rules.numpy_shapes import as_c_layout
from .activity import varied_values
from .context import NO_CALLEES, PassContext
from .dual_alloc import emit_stacked, stackable
from .opinfo import (describe as _describe, keyword_values as _keyword_values,
                     positional as _positional, primitive as _primitive)
from ..ir.readonly import never_written
from .refusals import arrays_held_by_opaque_values, refusal
from .tangents import (ZERO, broadcast_to_result, coerce_tangent, in_dtype_of,
                       is_differentiable, materialize, mentions_complex, tangent_type)


def forward_transform(fn: Function, width: int = 1, active=None,
                      context: PassContext = NO_CALLEES) -> Function:
    """The forward-mode function of `fn` for `width` tangent directions, with tangent arguments
    for the argument indices in `active` (default: every differentiable argument); `fn` is left
    untouched. A call of an njit function calls the callee's forward rule, which `context`
    provides (`moonlite.driver.PASS_CONTEXT` derives it)."""
    if width < 1:
        raise ValueError("width must be at least 1")
    widened: set = set()
    while True:  # (a few rounds at most: each widens a local for good)
        forward = _ForwardPass(fn, width, active, context, frozenset(widened))
        result = forward.run()
        if not forward.to_widen:
            return result
        widened |= forward.to_widen


def differentiable_args(fn: Function, active=None) -> list:
    return [a for i, a in enumerate(fn.args)
            if is_differentiable(a.type) and (active is None or i in active)]


class _ForwardPass:
    def __init__(self, fn: Function, width: int, active=None,
                 context: PassContext = NO_CALLEES, widened: frozenset = frozenset()):
        self.fn = fn
        self.context = context
        self.width = width
        self.active = active
        self.values: dict = {}    # value of fn -> value of the new function
        self.tangents: dict = {}  # value of fn -> list (one per direction) of Value or ZERO
        self.blocks: dict = {}
        self.phis: list = []      # (old phi, new phi, tangent phis)
        self.tangent_locals: dict = {}  # (local of fn, direction) -> its tangent's local
        # locals and phis of fn whose array tangents come in more than one layout: typed "A"
        # (`tangent_local`, `on_phi`); `to_widen` collects those this run found, for the next
        self.widened, self.to_widen = widened, set()
        self.constant_phis = _unvaried_float_phis(fn, active)
        self.b = self._new_function()

    # --- driver --------------------------------------------------------------------------------

    def _new_function(self) -> Builder:
        fn, width = self.fn, self.width
        active = differentiable_args(fn, self.active)
        names = [a.name for a in fn.args]
        for j in range(width):
            suffix = "" if width == 1 else f"_{j}"
            names += [f"d{a.name}{suffix}" for a in active]
        types = [a.type for a in fn.args] + [tangent_type(a.type) for a in active] * width
        out = tangent_type(fn.return_type) or none
        b = Builder.new_function(f"{fn.name}_fwd", types, _unique(names),
                                 TupleType((fn.return_type,) + (out,) * width), loc=fn.loc,
                                 boundscheck=fn.boundscheck)
        new_args = b.function.args
        for old, new in zip(fn.args, new_args):
            self.values[old] = new
        tangent_args = iter(new_args[len(fn.args):])
        per_direction = [[next(tangent_args) for _ in active] for _ in range(width)]
        for i, old in enumerate(active):
            self.tangents[old] = [per_direction[j][i] for j in range(width)]
        return b

    def run(self) -> Function:
        order = reverse_post_order(self.fn)  # unreachable blocks are dropped
        for block in order:
            self.blocks[block] = self.b.new_block(block.hint)
        self.b.position_at_end(self.blocks[self.fn.entry])
        self._zero_inactive_arguments()
        hidden_arrays = arrays_held_by_opaque_values(self.fn)
        for block in order:
            self.b.position_at_end(self.blocks[block])
            for op in block.ops:
                self.b.loc = op.loc
                self._refuse_complex(op)
                why = refusal(op, self.carries_derivative, hidden_arrays, self._may_write)
                if why is not None:
                    raise self.unsupported(op, *why)
                _HANDLERS[type(op)](self, op)  # every op class has one (tests/ad/test_handlers)
        self._fill_phis()
        return self.b.function

    def _zero_inactive_arguments(self) -> None:
        for arg in self.fn.args:
            if arg in self.tangents or not is_differentiable(arg.type):
                continue
            if never_written(self.fn, arg):
                self.set_tangents(arg, [ZERO] * self.width)
            else:
                self.set_tangents(arg, [materialize(self.b, self.values[arg], ZERO)
                                        for _ in range(self.width)])

    def _refuse_complex(self, op: Op) -> None:
        values = list(op.operands) + ([op.result] if op.result is not None else [])
        if any(mentions_complex(v.type) for v in values):
            raise self.unsupported(op, "differentiating complex numbers",
                                   "split the computation into real and imaginary parts")

    # --- tangents ------------------------------------------------------------------------------

    def tangent(self, old: Value, j: int):
        """Direction j's tangent of `old`: a Value, ZERO, or None (no tangent for its type)."""
        ts = self.tangents.get(old)
        return None if ts is None else ts[j]

    def carries_derivative(self, old: Value) -> bool:
        """True if some direction's tangent of `old` may be nonzero."""
        return any(self.tangent(old, j) not in (None, ZERO) for j in range(self.width))

    def rule_tangent(self, old: Value, j: int) -> Optional[Value]:
        """What rules see: a Value, or None for zero and for no tangent."""
        t = self.tangent(old, j)
        return None if t is ZERO else t

    def real_tangent(self, old: Value, j: int) -> Value:
        """A real tangent value (zeros materialised at the insertion point)."""
        return materialize(self.b, self.values[old], self.tangent(old, j))

    def set_tangents(self, old: Value, tangents: list) -> None:
        self.tangents[old] = tangents

    def fresh_or_zero(self, old: Value) -> list:
        """Zero tangents for a value whose inputs carry none: ZERO, except for writable arrays,
        which get a real zero array (a later write may land in it)."""
        t = old.type
        if isinstance(t, ArrayType) and not t.readonly:
            new = self.values[old]
            return [materialize(self.b, new, ZERO) for _ in range(self.width)]
        return [ZERO] * self.width

    # --- copying primal ops --------------------------------------------------------------------

    def clone(self, op: Op) -> Op:
        """Emit a copy of `op` reading the new function's values and blocks."""
        return self.b.emit(clone_op(op, self.values, self.blocks))

    # --- handlers ------------------------------------------------------------------------------

    def on_constant(self, op: ops.Constant) -> None:
        self.clone(op)
        if is_differentiable(op.result.type):
            self.set_tangents(op.result, [ZERO] * self.width)

    def on_undef(self, op: ops.Undef) -> None:
        self.clone(op)
        ttype = tangent_type(op.result.type)
        if ttype is not None:
            self.set_tangents(op.result, [self.b.undef(ttype) for _ in range(self.width)])

    def on_global(self, op: ops.GlobalRef) -> None:
        """A value numba froze at compile time (`settings.TABLE`, a module's array, read only):
        a constant, as a global array named in the kernel is (capture checks that it has not
        changed since: capture/frozen_globals.py). Anything else differentiable is refused."""
        if is_differentiable(op.result.type) and not _frozen_constant(op.result.type):
            raise self.unsupported(op, "a differentiable global value", "pass it as an argument")
        self.clone(op)
        if is_differentiable(op.result.type):  # (a real zero array if numba typed it writable)
            self.set_tangents(op.result, self.fresh_or_zero(op.result))

    def on_copy(self, op: Op) -> None:
        """Control flow and raising: copied as they are (branches test the primal)."""
        self.clone(op)

    def on_primitive(self, op: Op) -> None:
        # A user's JVP rule wins, then a registered rule; an njit callee without one gets a
        # derived rule.
        custom = lookup_custom(op.callee) if isinstance(op, ops.Call) else None
        if custom is not None and custom.jvp is not None and self._carries_tangent(op):
            return self.on_custom_jvp(op, custom)
        if isinstance(op, ops.Call) and nb.is_njit_dispatcher(op.callee) \
                and lookup_jvp(op.callee) is None:
            return self.on_njit_call(op)
        if stackable(op):
            return self.on_stackable_allocation(op)
        # a method writing into its receiver (a.fill(v), a.sort()) needs a rule doing the same
        # to the tangent, never the "result carries no tangent" shortcut
        mutates = isinstance(op, ops.MethodCall) and bool(op.traits() & Trait.WRITES)
        # so does a call returning nothing that has a rule (reverse mode's field updates)
        mutates = mutates or (op.result is not None and op.result.type == none
                              and lookup_jvp(_primitive(op)) is not None)
        new = self.clone(op)
        result = op.result
        if not mutates and (result is None or not is_differentiable(result.type)):
            return
        tangents = [self._rule_inputs(op, j) for j in range(self.width)]
        if all(all(t is None for t in ts) for ts in tangents):
            if result is not None and is_differentiable(result.type):
                self.set_tangents(result, self.fresh_or_zero(result))
            return
        rule = checked_division_jvp if is_checked_division(op) else self._rule(op)
        out = [self._not_an_input(op, self._apply(rule, op, new, ts), ts) for ts in tangents]
        if result is not None and is_differentiable(result.type):
            clone = getattr(new, "result", None)
            self.set_tangents(result, [
                self._broadcast(op, ts, self._as_result_tangent(result, t, clone), clone)
                for t, ts in zip(out, tangents)])
            self._debug_check(op, f"the tangent {_describe(op)} returned")

    def on_stackable_allocation(self, op: ops.Call) -> None:
        """A fresh array and its zero tangents as rows of one block (`dual_alloc.py`)."""
        primal, tangents = emit_stacked(self.b, op, self.values[op.positional[0]], self.width)
        self.values[op.result] = primal
        self.set_tangents(op.result, tangents)

    def _debug_check(self, op: Op, what: str, always: bool = False) -> None:
        """Debug mode: check at run time that each direction's tangent of an array result has
        the result's shape (a wrong rule is caught where it is used)."""
        if (debug_enabled() or always) and isinstance(op.result.type, ArrayType):
            for j in range(self.width):
                t = self.tangent(op.result, j)
                if t is not None and t is not ZERO:
                    emit_shape_check(self.b, self.values[op.result], t, op, what, always)

    def _carries_tangent(self, op: Op) -> bool:
        return any(self.tangent(v, j) not in (None, ZERO) for v in _positional(op)
                   for j in range(self.width))

    def on_custom_jvp(self, op: ops.Call, custom) -> None:
        """`custom.jvp((primals...), (tangents...)) -> (out, dout)`, once per direction; the
        primal result is the first call's `out`."""
        if op.kwnames:
            raise self.unsupported(op, f"a keyword-argument call of {_describe(op)}, which has a "
                                   "custom rule", "pass the arguments by position")
        args = op.positional
        primals = [self.values[a] for a in args]
        douts = []
        for j in range(self.width):
            tangents = [self.real_tangent(a, j) if self.tangent(a, j) is not None
                        else self.b.const(None, none) for a in args]
            try:
                pair = call_jvp(self.b, custom, primals, tangents)
            except RuleNotApplicable as exc:
                raise self.unsupported(op, f"differentiating {_describe(op)}: {exc}",
                                       "fix the custom JVP rule") from None
            if j == 0:
                self.values[op.result] = self._checked_jvp_output(op, custom, pair)
            douts.append(self.b.tuple_getitem(pair, 1))
        result = op.result
        if is_differentiable(result.type):
            self.set_tangents(result, [self._checked_jvp_tangent(op, custom, d) for d in douts])
            # a user's rule is checked in every mode: a tangent of shape (1,) would broadcast
            self._debug_check(op, f"the tangent the JVP rule of {custom.name} returned",
                              always=True)

    def _checked_jvp_output(self, op: ops.Call, custom, pair: Value) -> Value:
        out = self.b.tuple_getitem(pair, 0)
        if out.type != op.result.type:
            if isinstance(out.type, FloatType) and isinstance(op.result.type, FloatType):
                return self.b.cast(out, op.result.type)
            raise self.unsupported(op, f"the JVP rule of {custom.name}: its output has type "
                                   f"{out.type}, the function's has {op.result.type}",
                                   "return (out, dout) with out computed as the function does")
        emit_output_check(self.b, op.callee, [self.values[a] for a in op.positional], out, op,
                          custom.name)
        return out

    def _checked_jvp_tangent(self, op: ops.Call, custom, dout: Value) -> Value:
        want = tangent_type(op.result.type)
        coerced = coerce_tangent(self.b, want, dout)
        if coerced is None:
            raise self.unsupported(op, f"the JVP rule of {custom.name}: its tangent has type "
                                   f"{dout.type}, a tangent of the output needs {want}",
                                   "return a tangent shaped like the output")
        return coerced

    def _rule_inputs(self, op: Op, j: int) -> tuple:
        return tuple(self.rule_tangent(v, j) for v in _positional(op))

    def _rule(self, op: Op):
        rule = lookup_jvp(_primitive(op))
        if rule is None and _is_moonlites_own(_primitive(op)):
            # (moonlite's helpers inside derived code: third derivatives, forward mode over a
            # Hessian or over forward mode over a gradient)
            raise self.unsupported(op, f"differentiating {_describe(op)}, a helper of "
                                   "moonlite's derived code: derivatives of third order",
                                   "derivatives of order three and more are not supported: "
                                   "take Hessians (moonlite.hessian, moonlite.hvp) of the "
                                   "kernel itself, or finite differences of a Hessian")
        if rule is None:
            raise self.unsupported(op, f"differentiating {_describe(op)}: no forward rule is "
                                   "registered", "write a custom rule (moonlite.custom_jvp), "
                                   "or mark the function non-differentiable "
                                   "(moonlite.nondifferentiable)")
        return rule

    def _apply(self, rule, op: Op, new: Op, tangents: tuple):
        if all(t is None for t in tangents):
            return None
        keywords = {k: v for k, v in zip(getattr(new, "kwnames", ()), _keyword_values(new))}
        self.b.known_calls = _reusable_result(new)
        try:
            tangent = rule(self.b, _positional(new), tangents, keywords)
        except RuleNotApplicable as exc:
            raise self.unsupported(op, f"differentiating {_describe(op)}: {exc}",
                                   "write a custom rule for this signature "
                                   "(moonlite.rules.defrule)") from None
        finally:
            self.b.known_calls = {}
        if tangent is not None and tangent is getattr(new, "result", None):
            tangent = self.b.call(np.copy, [tangent])  # never the primal array itself
        return tangent

    def _not_an_input(self, op: Op, tangent, inputs: list):
        """The tangent a rule gave, copied when it is an operand's tangent array itself and
        the op's result is a new array, not a view (`+y`): an in-place update of the result
        would otherwise write into the operand's tangent (`r = +y; y[0] = v` changed r's)."""
        if tangent is None or not isinstance(tangent.type, ArrayType) \
                or not any(tangent is t for t in inputs) or op.traits() & Trait.VIEW:
            return tangent
        return self.b.method_call("copy", tangent, [])

    def _as_result_tangent(self, result: Value, tangent, new_result: Optional[Value]):
        if tangent is None:
            return self.fresh_or_zero(result)[0]
        if isinstance(result.type, FloatType):
            if isinstance(tangent.type, ArrayType):  # numba makes 0-d array + 1.0 a number
                tangent = self.b.getitem(tangent, self.b.build_tuple([]))
            return self.b.cast(tangent, result.type)
        return in_dtype_of(self.b, tangent, new_result)  # (new_result: the clone's)

    def _broadcast(self, op: Op, inputs: tuple, tangent, new_result: Optional[Value]):
        """An elementwise op's tangent from only some operands' tangents, broadcast to the
        result's shape (`tangents.broadcast_to_result`). When the operands without a tangent
        are numbers (`2.0 * x`), the others' shapes make the result's and the rule's tangent
        has it already."""
        if tangent is None or new_result is None or not isinstance(new_result.type, ArrayType) \
                or not op.traits() & Trait.ELEMENTWISE:
            return tangent
        if all(t is not None or v.type.is_scalar for v, t in zip(_positional(op), inputs)):
            return tangent
        return broadcast_to_result(self.b, tangent, new_result)

    def _may_write(self, op, position: int) -> bool:
        """Whether a call may write into its operand `position`: for an njit callee forward
        mode keeps as a call, what its IR says (a field of a jitclass passed to a helper that
        only reads it is fine); otherwise yes."""
        if not (isinstance(op, ops.Call) and nb.is_njit_dispatcher(op.callee)
                and lookup_custom(op.callee) is None and not op.kwnames):
            return True
        callee = self.context.callee_ir(op.callee, tuple(a.type.to_numba() for a in op.positional))
        return not never_written(callee, callee.args[position])

    def on_njit_call(self, op: ops.Call) -> None:
        args = op.positional
        if op.kwnames:
            raise self.unsupported(op, f"a keyword-argument call of {_describe(op)}",
                                   "pass the arguments by position")
        # Arguments whose tangents are all ZERO (read-only arrays, constants) are inactive in the
        # callee's rule: nothing is allocated for them.
        active = [i for i, a in enumerate(args) if is_differentiable(a.type) and
                  any(self.tangent(a, j) is not ZERO for j in range(self.width))]
        if not active:
            new = self.clone(op)
            if is_differentiable(op.result.type):
                self.set_tangents(op.result, self.fresh_or_zero(op.result))
            return new
        rule = self.context.forward_rule(op.callee, tuple(a.type.to_numba() for a in args),
                                         self.width, frozenset(active))
        call_args = [self.values[a] for a in args]
        for j in range(self.width):
            call_args += [self._in_primal_layout(args[i], self.real_tangent(args[i], j))
                          for i in active]
        res = self.b.call(rule, call_args, type=rule.ir.return_type, hint=None)
        out = self.b.tuple_getitem(res, 0)
        self.values[op.result] = out
        if is_differentiable(op.result.type):
            self.set_tangents(op.result, [self.b.tuple_getitem(res, 1 + j)
                                          for j in range(self.width)])
            self._debug_check(op, f"the tangent the derived rule of {_describe(op)} returned")

    def _in_primal_layout(self, primal: Value, tangent: Value) -> Value:
        """The tangent of a C array typed C for a derived rule, which takes it typed as the
        primal (a tangent tape's tangents are typed of any layout: `on_tape_new`)."""
        t = primal.type
        if isinstance(t, ArrayType) and t.layout == "C":
            return as_c_layout(self.b, tangent)
        return tangent

    def on_getattr(self, op: ops.GetAttr) -> None:
        """A field of a record: the same field of its tangent record."""
        if not is_float_record(op.value.type):
            return self.on_primitive(op)
        self.clone(op)
        if not is_differentiable(op.result.type):
            return
        out = []
        for j in range(self.width):
            t = self.tangent(op.value, j)
            out.append(ZERO if t in (None, ZERO) else self.b.getattr(t, op.name, op.result.type))
        self.set_tangents(op.result, out)

    def on_getitem(self, op: ops.GetItem) -> None:
        self.clone(op)
        if not is_differentiable(op.result.type):
            return
        index = self.values[op.index]
        out = []
        for j in range(self.width):
            t = self.tangent(op.value, j)
            if t is None:  # indexing a value with no tangent gives one with no derivative
                out.append(self.fresh_or_zero(op.result)[0])
            else:
                out.append(t if t is ZERO else self.b.getitem(t, index))
        self.set_tangents(op.result, out)

    def on_setitem(self, op: ops.SetItem) -> None:
        self.clone(op)
        target_type = op.target.type
        if not is_differentiable(target_type):
            return
        index = self.values[op.index]
        for j in range(self.width):
            dtarget = self.tangent(op.target, j)
            dvalue = self.rule_tangent(op.value, j)
            if dvalue is None:
                dvalue = self.b.const(0.0, target_type.dtype)
            self.b.setitem(dtarget, index, dvalue)

    def on_inplace(self, op: ops.InplaceBinary) -> None:
        # The tangent update reads the target's value before the primal update overwrites it.
        kind = op.binop
        if kind not in _INPLACE_TANGENT:
            if is_differentiable(op.target.type):
                raise self.unsupported(op, f"the in-place operator {kind.SYMBOL}= on arrays in "
                                       "forward mode", f"write it as a = a {kind.SYMBOL} b")
        elif is_differentiable(op.target.type):
            target, value = self.values[op.target], self.values[op.value]
            for j in range(self.width):
                _INPLACE_TANGENT[kind](self.b, target, value, self.tangent(op.target, j),
                                       self.rule_tangent(op.value, j))
        self.clone(op)
        if is_differentiable(op.result.type):
            self.set_tangents(op.result, list(self.tangents[op.target]))

    def on_phi(self, op: ops.Phi) -> None:
        block = self.blocks[op.block]
        new = self.b.phi(op.result.type, block, hint=op.result.hint)
        new.loc = op.loc
        self.values[op.result] = new.result
        tangent_phis = []
        ttype = tangent_type(op.result.type)
        if op.result in self.widened:
            ttype = _any_layout(ttype)
        if op.result in self.constant_phis:  # depends on no input with a tangent
            self.set_tangents(op.result, [ZERO] * self.width)
        elif ttype is not None:
            for _ in range(self.width):
                phi = self.b.phi(ttype, block, hint=_tangent_hint(op.result))
                phi.loc = op.loc
                tangent_phis.append(phi)
            self.set_tangents(op.result, [p.result for p in tangent_phis])
        self.phis.append((op, new, tangent_phis))

    def _fill_phis(self) -> None:
        for old, new, tangent_phis in self.phis:
            for block, value in old.incoming:
                if block not in self.blocks:
                    continue  # an unreachable predecessor
                pred = self.blocks[block]
                new.add_incoming(pred, self.values[value])
                self.b.position_before_terminator(pred)
                self.b.loc = old.loc
                for j, phi in enumerate(tangent_phis):
                    phi.add_incoming(pred, self._phi_incoming(old, phi, value, j))

    def _phi_incoming(self, old: ops.Phi, phi: ops.Phi, value: Value, j: int) -> Value:
        """The tangent of `value` as the tangent phi of `old` takes it: typed "A" where the
        phi was widened (its incoming tangents differ in layout: inv's tangent in a loop is
        C-ordered where its primal is F), `old` marked for widening where they differ."""
        tangent = self.real_tangent(value, j)
        if _layouts_differ(phi.result.type, tangent.type):
            self.to_widen.add(old.result)
        elif isinstance(tangent.type, ArrayType) and tangent.type != phi.result.type:
            tangent = self.b.call(any_layout, [tangent], type=phi.result.type)
        return tangent

    def on_build_tuple(self, op: ops.BuildTuple) -> None:
        self.clone(op)
        if not is_differentiable(op.result.type):
            return
        out = []
        for j in range(self.width):
            items = [self.real_tangent(v, j) if is_differentiable(v.type)
                     else self.b.const(None, none) for v in op.items]
            out.append(self.b.build_tuple(items))
        self.set_tangents(op.result, out)

    def on_tuple_getitem(self, op: ops.TupleGetItem) -> None:
        self.clone(op)
        if not is_differentiable(op.result.type):
            return
        out = []
        for j in range(self.width):
            t = self.tangent(op.tuple, j)
            out.append(ZERO if t is ZERO else self.b.tuple_getitem(t, op.index))
        self.set_tangents(op.result, out)

    def on_return(self, op: ops.Return) -> None:
        value = op.value
        items = [self.values[value]]
        for j in range(self.width):
            items.append(self.real_tangent(value, j) if is_differentiable(value.type)
                         else self.b.const(None, none))
        self.b.ret(self.b.build_tuple(items))

    # --- locals and tapes (forward mode over a derived reverse rule: Hessians) ----------------

    def tangent_local(self, var: ops.LocalVar, j: int) -> ops.LocalVar:
        key = (var, j)
        if key not in self.tangent_locals:
            suffix = "" if self.width == 1 else f"_{j}"
            ttype = tangent_type(var.type)
            if var in self.widened:
                ttype = _any_layout(ttype)
            self.tangent_locals[key] = ops.LocalVar(ttype, f"d{var.name}{suffix}")
        return self.tangent_locals[key]

    def on_store(self, op: ops.StoreLocal) -> None:
        self.clone(op)
        if is_differentiable(op.var.type):
            for j in range(self.width):
                local, tangent = self.tangent_local(op.var, j), self.real_tangent(op.value, j)
                if _layouts_differ(local.type, tangent.type):
                    self.to_widen.add(op.var)
                self.b.store(local, tangent)

    def on_load(self, op: ops.LoadLocal) -> None:
        self.clone(op)
        if is_differentiable(op.var.type):
            self.set_tangents(op.result, [self.b.load(self.tangent_local(op.var, j))
                                          for j in range(self.width)])

    def on_tape_new(self, op: ops.TapeNew) -> None:
        # a tape of differentiable values has one tangent tape per direction, pushed and popped
        # in step with it
        self.clone(op)
        ttype = _any_layout(tangent_type(op.element_type))
        if ttype is not None:
            self.set_tangents(op.result, [self.b.emit(ops.TapeNew(ttype, op.loc)).result
                                          for _ in range(self.width)])

    def on_tape_push(self, op: ops.TapePush) -> None:
        self.clone(op)
        if op.tape in self.tangents:
            for j in range(self.width):
                self.b.tape_push(self.tangent(op.tape, j), self.real_tangent(op.value, j))

    def on_tape_read(self, op: Op) -> None:
        """tape.pop and tape.top: the tangent tapes are read the same way."""
        self.clone(op)
        if op.tape in self.tangents:
            self.set_tangents(op.result, [
                self.b.emit(type(op)(self.tangent(op.tape, j), op.loc)).result
                for j in range(self.width)])

    # --- errors --------------------------------------------------------------------------------

    def unsupported(self, op: Optional[Op], construct: str, hint: str) -> UnsupportedError:
        loc = op.loc if op is not None else self.fn.loc
        source = linecache.getline(loc.filename, loc.line) if loc.line else ""
        return UnsupportedError(construct, function=self.fn.name, argtypes=self.fn.argtypes,
                                loc=loc, hint=hint, source_line=source)


# --- in-place array updates ------------------------------------------------------------------

def _inplace_add(b, target, value, dtarget, dvalue):
    if dvalue is not None:
        b.inplace(ops.Add, dtarget, dvalue)


def _inplace_sub(b, target, value, dtarget, dvalue):
    if dvalue is not None:
        b.inplace(ops.Sub, dtarget, dvalue)


def _inplace_mul(b, target, value, dtarget, dvalue):
    # d(t * v) = dt * v + t * dv, with t the value before the update
    increment = b.mul(target, dvalue) if dvalue is not None else None
    b.inplace(ops.Mul, dtarget, value)
    if increment is not None:
        b.inplace(ops.Add, dtarget, increment)


def _inplace_div(b, target, value, dtarget, dvalue):
    # d(t / v) = (dt - (t / v) * dv) / v
    if dvalue is not None:
        b.inplace(ops.Sub, dtarget, b.mul(b.div(target, value), dvalue))
    b.inplace(ops.TrueDiv, dtarget, value)


_INPLACE_TANGENT = {ops.Add: _inplace_add, ops.Sub: _inplace_sub, ops.Mul: _inplace_mul,
                    ops.TrueDiv: _inplace_div}


# --- helpers ---------------------------------------------------------------------------------


def _any_layout(t):
    """Tangents of views may differ in layout from their primals' (a slice of a C array is C,
    the same slice of its tangent may be A): tapes holding array tangents are "A", and so are
    locals whose stored tangents differ in layout."""
    if isinstance(t, ArrayType):
        return ArrayType(t.dtype, t.ndim, "A", False)
    return t


def _layouts_differ(local_type, stored_type) -> bool:
    """A tangent local's type is its primal's tangent type while every tangent stored in it
    has that layout, as numba types a variable from what is stored in it: typed "A" once
    more than one layout is stored. (Always "A", it was F in numba where its tangents were all
    F, and a product of it moonlite typed C was F: pinv's Hessian-vector product.)"""
    return isinstance(local_type, ArrayType) and isinstance(stored_type, ArrayType) \
        and local_type.layout != "A" and stored_type.layout != local_type.layout


def _tangent_hint(value: Value) -> Optional[str]:
    return f"d{value.hint}" if value.hint else None


def _reusable_result(new: Op) -> dict:
    """The primal call a rule may ask for again (`np.exp(x)` in the rule of `np.exp`): a
    ufunc's result, which the rule reads before anything can write to it. An array ufunc
    computed twice cost logsumexp's HVP two passes over its data."""
    if isinstance(new, ops.Call) and isinstance(new.callee, np.ufunc) and not new.kwnames:
        return {(id(new.callee), tuple(map(id, new.operands))): new.result}
    return {}


def _unvaried_float_phis(fn: Function, active) -> frozenset:
    """Float phis that depend on no argument with a tangent (activity analysis): their tangent
    is a symbolic zero, not a phi of zeros carried around a loop (least squares' `power = 1.0;
    power *= t` carried `dpower = 0.0; dpower *= t` and its products). Only for functions
    without locals or tapes, whose values the analysis cannot follow."""
    if any(isinstance(op, (ops.LoadLocal, ops.TapePop, ops.TapePeek)) for op in fn.ops()):
        return frozenset()
    varied = varied_values(fn, active)
    return frozenset(op.result for op in fn.ops() if isinstance(op, ops.Phi)
                     and isinstance(op.result.type, FloatType) and op.result not in varied)


def _unique(names: list) -> list:
    used, out = set(), []
    for name in names:
        while name in used:
            name += "_"
        used.add(name)
        out.append(name)
    return out


_HANDLERS = {
    ops.Constant: _ForwardPass.on_constant,
    ops.Undef: _ForwardPass.on_undef,
    ops.GlobalRef: _ForwardPass.on_global,
    ops.Cast: _ForwardPass.on_primitive,
    ops.Select: _ForwardPass.on_primitive,
    ops.Call: _ForwardPass.on_primitive,
    ops.MethodCall: _ForwardPass.on_primitive,
    ops.GetAttr: _ForwardPass.on_getattr,
    ops.BuildSlice: _ForwardPass.on_copy,
    ops.GetItem: _ForwardPass.on_getitem,
    ops.SetItem: _ForwardPass.on_setitem,
    ops.InplaceBinary: _ForwardPass.on_inplace,
    ops.Phi: _ForwardPass.on_phi,
    ops.BuildTuple: _ForwardPass.on_build_tuple,
    ops.TupleGetItem: _ForwardPass.on_tuple_getitem,
    ops.Jump: _ForwardPass.on_copy,
    ops.Branch: _ForwardPass.on_copy,
    ops.Raise: _ForwardPass.on_copy,
    ops.Return: _ForwardPass.on_return,
    ops.StoreLocal: _ForwardPass.on_store,
    ops.LoadLocal: _ForwardPass.on_load,
    ops.TapeNew: _ForwardPass.on_tape_new,
    ops.TapePush: _ForwardPass.on_tape_push,
    ops.TapePop: _ForwardPass.on_tape_read,
    ops.TapePeek: _ForwardPass.on_tape_read,
    **{cls: _ForwardPass.on_primitive for cls in ops.BINARY_OPS},
    **{cls: _ForwardPass.on_primitive for cls in ops.UNARY_OPS},
}


def _is_moonlites_own(callee) -> bool:
    module = getattr(getattr(callee, "py_func", callee), "__module__", None) or ""
    return module == "moonlite" or module.startswith("moonlite.")


def _frozen_constant(t) -> bool:
    """Floats, float arrays and tuples of them: what numba freezes of a global."""
    if isinstance(t, TupleType):
        return all(_frozen_constant(e) for e in t.elements)
    return isinstance(t, (FloatType, ArrayType)) or not is_differentiable(t)
