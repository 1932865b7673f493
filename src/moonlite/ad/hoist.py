"""Loop-invariant code motion on the primal, before reverse mode.

Why: in

    for i in range(pts.shape[0]):
        theta = math.sqrt(cam[0] * cam[0] + cam[1] * cam[1] + cam[2] * cam[2])
        ct, st = math.cos(theta), math.sin(theta)
        ...

LLVM hoists `cam[k]`, `theta`, `cos`, `sin` out of the primal's loop, but not out of the
pullback's: there the adjoint writes `cam_bar[k] += ...` in every iteration, LLVM cannot prove
that the shadow array does not alias `cam`, and so each iteration re-read `cam`, recomputed
`sincos` (a fifth of the gradient's time on the reprojection benchmark) and read-modified-wrote
nine elements of `cam_bar`. Hoisted before AD, the invariant values are defined outside the loop:
the pullback reads them once, their adjoints accumulate in registers across the iterations, and
`cam_bar[k]` is updated once, after the pullback's loop.

The transformation, for a loop whose header has one predecessor outside the loop, ending in a
jump, and ends in a conditional branch out of the loop:

    pre:  ...; entered = <the header's condition on the values it has on entry>
          br entered, hoisted, join
    hoisted: <the invariant ops>; jump join
    join: v = phi [hoisted: v'], [pre: 0]   (for each hoisted value)
          jump header

so nothing is evaluated unless the loop runs at least once (a read `a[k]` is never made where
the primal would not make it). Ops hoisted: scalar arithmetic, casts, selects (pure, anywhere in
the loop); `math` calls and reads of an array argument the function never writes (only from
blocks every iteration runs before it can leave the loop, so they run in the first iteration of
the primal too). A checked division of floats (the primal's own `/`, which raises for a zero
divisor) is hoisted unchecked, and the checked op stays where it was, its result unused: it
still raises where the primal raised, and LLVM reduces it to the test of the divisor. The
hoisted division may then divide by zero in a run that never reaches the original (the loop's
branch to it never taken): its result is never read there, and its pullback, an unchecked
division's, zero-guards its products (a zero adjoint times 1/0 stays 0). Reprojection residual,
`wx = cam[0] / theta` under a loop-invariant `if theta2 > 1e-12:` : three divisions and their
pullbacks leave the loop.

A loop inside another loop gets no guard: only ops that can neither fault nor raise (arithmetic,
`math` calls) move, to the end of its preheader. Guarded, the join's phis would sit in the
enclosing loop, where reverse mode keeps them, and which edge reached the join, on a tape at
every iteration of the enclosing loop (RK4 with `p[k]` read in seven inner loops: gradient 4.7x
-> 7.8x the primal).
"""

from __future__ import annotations

from ..ir import ops
from ..ir.cfg import Dominators, loop_test, natural_loops, predecessors, reverse_post_order
from ..ir.clone import clone_op
from ..ir.core import Argument, Block, Function, Op, Value
from ..ir.types import BoolType, FloatType, IntType
from .opinfo import is_math_call
from ..ir.readonly import never_written

_SCALARS = (FloatType, IntType, BoolType)


def hoist_loop_invariants(fn: Function) -> Function:
    """Hoist in place, innermost loop first (what leaves an inner loop may then leave the
    enclosing one); returns `fn`."""
    done: set = set()
    readonly: dict = {}
    while True:
        loops = [lp for lp in natural_loops(fn) if lp.header not in done]
        if not loops:
            return fn
        loop = min(loops, key=lambda lp: len(lp.body))
        done.add(loop.header)
        _hoist_from(fn, loop, loops, readonly)


def _hoist_from(fn: Function, loop, loops: list, readonly: dict) -> None:
    preds = predecessors(fn)
    header = loop.header
    outside = [p for p in preds[header] if p not in loop.body]
    if len(outside) != 1 or not isinstance(outside[0].terminator, ops.Jump):
        return
    pre = outside[0]
    test = loop_test(header, preds)
    if test is None:
        return
    chain, branch = test
    if (branch.if_true in loop.body) == (branch.if_false in loop.body):
        return
    guard = _entry_condition(chain, pre, branch.cond)
    if guard is None:
        return
    nested = any(header in other.body for other in loops if other is not loop)
    invariant = _invariant_ops(fn, loop, _run_before_leaving(fn, loop, chain), readonly,
                               reads=not nested)
    if nested:
        if any(isinstance(op.result.type, FloatType) for op in invariant):
            _move_unguarded(fn, loop, pre, invariant)
    elif any(isinstance(op, ops.GetItem) or is_math_call(op) for op in invariant):
        # only for reads and math calls: the join's phis and came-from cost more than
        # recomputing arithmetic (least squares, whose `float(n - 1)` moved: 4.1x -> 4.5x)
        _move(fn, loop, pre, header, guard, invariant)


def _entry_condition(chain: list, pre: Block, cond: Value):
    """The ops of `chain` (the header and the blocks up to the loop's test) computing `cond`, if
    all are pure scalar ops of the header's phis and of values from outside the chain:
    (ops in order, phi -> its value from `pre`, cond); else None."""
    header = chain[0]
    phis = {phi.result: phi.value_from(pre) for phi in header.phis}
    blocks = set(chain)
    needed, work = set(), [cond]
    while work:
        v = work.pop()
        if v in phis or v in needed or _defined_outside(v, blocks):
            continue
        op = v.op
        if not _pure_scalar(op):
            return None
        needed.add(v)
        work.extend(op.operands)
    return [op for b in chain for op in b.ops if op.result in needed], phis, cond


def _run_before_leaving(fn: Function, loop, test_chain: list) -> set:
    """Blocks of the loop that every iteration runs before it can leave the loop (other than
    by the loop's test): they dominate every latch and every other exiting block."""
    dom = Dominators(fn)
    exiting = [b for b in loop.body if b not in test_chain
               and any(s not in loop.body for s in b.successors())]
    return {b for b in loop.body
            if all(dom.dominates(b, x) for x in list(loop.latches) + exiting)}


def _invariant_ops(fn: Function, loop, every_iteration: set, readonly: dict,
                   reads: bool) -> list:
    order = [b for b in reverse_post_order(fn) if b in loop.body]
    made_anyway = {_read_key(op) for b in order if b in every_iteration for op in b.ops
                   if isinstance(op, ops.GetItem)} - {None}
    found: dict = {}
    for block in order:
        for op in block.ops:
            if op.result is None or isinstance(op, (ops.Phi, ops.Constant)):
                continue
            if not isinstance(op.result.type, _SCALARS):
                continue
            operands_ok = all(v in found or _constant(v) or _defined_outside(v, loop.body)
                              for v in op.operands)
            if operands_ok and _may_hoist(fn, op, block in every_iteration, made_anyway,
                                          readonly, reads):
                found[op.result] = op
    return list(found.values())


def _may_hoist(fn: Function, op: Op, every_iteration: bool, made_anyway: set,
               readonly: dict, reads: bool) -> bool:
    if _pure_scalar(op):
        return True
    if _checked_float_division(op):
        return reads  # guarded moves only: the unguarded one is for ops that need no check
    if is_math_call(op):  # numba's math functions return nan or inf, they never raise
        return isinstance(op.result.type, FloatType) and \
            all(isinstance(v.type, (FloatType, IntType)) for v in op.operands)
    if reads and isinstance(op, ops.GetItem) and isinstance(op.value, Argument):
        if not (every_iteration or _read_key(op) in made_anyway):
            return False  # a read the primal may never make (an index out of bounds)
        if op.value not in readonly:
            readonly[op.value] = never_written(fn, op.value)
        return readonly[op.value]
    return False


def _checked_float_division(op: Op) -> bool:
    return isinstance(op, ops.TrueDiv) and op.checked and isinstance(op.result.type, FloatType) \
        and all(isinstance(v.type, (FloatType, IntType)) for v in op.operands)


def _read_key(op: Op):
    """(array, constant index) of a read `a[k]`, for reads made in every iteration: the same
    element read in a branch is then safe to read before the loop too."""
    if isinstance(op, ops.GetItem) and _constant(op.index):
        return (op.value, ops.constant_value(op.index))
    return None


def _pure_scalar(op: Op) -> bool:
    """Arithmetic, comparisons, casts and selects of scalars that cannot raise."""
    if op.result is None or not isinstance(op.result.type, _SCALARS):
        return False
    if not all(isinstance(v.type, _SCALARS) for v in op.operands):
        return False
    if isinstance(op, ops.BinaryOp):
        return not op.checked and not isinstance(op, ops.MatMul)
    return isinstance(op, (ops.UnaryOp, ops.Cast, ops.Select))


def _constant(v: Value) -> bool:
    return isinstance(getattr(v, "op", None), ops.Constant)


def _defined_outside(v: Value, blocks) -> bool:
    op = getattr(v, "op", None)
    return not isinstance(op, Op) or op.block not in blocks


def _move(fn: Function, loop, pre: Block, header: Block, guard, invariant: list) -> None:
    guard_ops, phi_entry, cond = guard
    hoisted, join = Block("hoisted"), Block("join")
    fn.add_block(hoisted)
    fn.add_block(join)
    pre.ops.pop()  # its jump to the header
    values = dict(phi_entry)
    for op in guard_ops:
        _emit_clone(pre, op, values)
    zero = {}
    for op in invariant:
        if op.result.type not in zero:
            zero[op.result.type] = _emit(pre, ops.Constant(_zero_of(op.result.type),
                                                           op.result.type, op.loc))
    loc = header.ops[-1].loc
    pre.append(ops.Branch(values[cond], hoisted, join, loc))
    moved = _clone_into(hoisted, invariant, loop)
    hoisted.append(ops.Jump(join, loc))
    replacement = {}
    for op in invariant:
        phi = ops.Phi(op.result.type, [(hoisted, moved[op.result]), (pre, zero[op.result.type])],
                      op.loc, op.result.hint)
        join.append(phi)
        replacement[op.result] = phi.result
    join.append(ops.Jump(header, loc))
    for phi in header.phis:
        phi.incoming_blocks = tuple(join if b is pre else b for b in phi.incoming_blocks)
    _replace(fn, loop, invariant, replacement, keep=hoisted)


def _move_unguarded(fn: Function, loop, pre: Block, invariant: list) -> None:
    """Pure ops (they cannot fault or raise) go to the end of `pre` as they are."""
    jump = pre.ops.pop()
    moved = _clone_into(pre, invariant, loop)
    pre.append(jump)
    _replace(fn, loop, invariant, {op.result: moved[op.result] for op in invariant}, keep=pre)


def _clone_into(block: Block, invariant: list, loop) -> dict:
    """Copies of the invariant ops (and of the loop's constants they read) at the end of
    `block`: old value -> copy."""
    moved: dict = {}
    for op in invariant:
        for v in op.operands:
            if _constant(v) and v.op.block in loop.body and v not in moved:
                moved[v] = _emit_clone(block, v.op, moved)
        _emit_clone(block, op, moved)
        if _checked_float_division(op):
            block.ops[-1].checked = False
    return moved


def _replace(fn: Function, loop, invariant: list, replacement: dict, keep: Block) -> None:
    """Drop the invariant ops from the loop; every other op reads their replacements (the ops
    of `keep`, which hold the copies, already do)."""
    gone = {op for op in invariant if not _checked_float_division(op)}  # these keep their test
    for block in loop.body:
        block.ops = [op for op in block.ops if op not in gone]
    for op in fn.ops():
        if op.block is not keep:
            op.operands = tuple(replacement.get(v, v) for v in op.operands)


def _emit(block: Block, op: Op) -> Value:
    block.append(op)
    return op.result


def _emit_clone(block: Block, op: Op, values: dict) -> Value:
    mapping = _Through(values)
    new = clone_op(op, mapping, {})
    block.append(new)
    return new.result


class _Through(dict):
    """Operand mapping for clone_op: mapped values replaced, the others kept."""

    def __init__(self, values: dict):
        super().__init__()
        self.values = values

    def __getitem__(self, v):
        return self.values.get(v, v)

    def __setitem__(self, old, new):
        self.values[old] = new


def _zero_of(t):
    if isinstance(t, FloatType):
        return 0.0
    if isinstance(t, BoolType):
        return False
    return 0
