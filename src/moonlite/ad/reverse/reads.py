"""What the pullback reads, and what it can recompute instead of keeping.

Every value the pullback reads costs a tape push and pop per loop iteration (or a local), so the
reverse pass keeps as little as it can:

- `reads(op)`: the operands an op's adjoint actually reads. Primitives with adjoints say it in
  their registration (`rules/registry.py`), the pass's own ops below; an elementwise adjoint
  built from a forward rule is found by a dry run of the rule on placeholder operands (the
  derivative of `a + b` reads neither, that of `a * b` both).
- `rematerializable(value)`: values cheaper to recompute in the pullback than to keep: integer
  arithmetic, casts, shapes, and reads `a[i]` of arrays the function never writes (the pullback
  restores written arrays only as it goes, so reads of those must be kept); scalar float
  arithmetic and `math` functions whose operands are themselves recomputable or kept anyway,
  except `math` functions in loops (kept: cheaper than calling them again).
  Measured on rosenbrock (1e6 entries): a list tape cost ~10 ns per push and pop (before tapes
  went through intrinsics, `lower/tapes.py`: now 1-2 ns), an array tape ~3.5 ns (memory
  traffic), recomputing the loop body's arithmetic ~1.3 ns.
"""

from __future__ import annotations

import functools

from ...ir import Builder, ops
from ...ir.core import Argument, Function, Op, Value
from ...ir.traits import Trait
from ...ir.types import (ArrayType, BoolType, FloatType, IntType, TupleType, is_float_record,
                         is_record)
from ...rules import RuleNotApplicable, lookup_jvp
from ...rules.registry import lookup_field
from ...rules.custom import lookup_custom
from ...rules.records import record_source
from ..opinfo import (is_math_call, keyword_values as _keyword_values,
                     positional as _positional, primitive as _primitive)
from ...ir.readonly import never_written, value_users
from .types import leaf_types, unit_tangent

_CHEAP_INT_OPS = (ops.Add, ops.Sub, ops.Mul, ops.Neg, ops.Lt, ops.Le, ops.Gt, ops.Ge, ops.Eq,
                  ops.Ne, ops.Cast, ops.TupleGetItem, ops.GetAttr, ops.Select, ops.Mod,
                  ops.FloorDiv, ops.BitAnd, ops.BitOr, ops.BitXor, ops.LShift, ops.RShift,
                  ops.Pos, ops.Invert)


_COMPARISONS = (ops.Lt, ops.Le, ops.Gt, ops.Ge, ops.Eq, ops.Ne, ops.BitAnd, ops.BitOr,
                ops.BitXor, ops.Not)


# What the adjoints of the reverse pass's own ops read (primitives say it in their registration).
_STRUCTURAL = {
    ops.GetItem: lambda op: {op.index} if _getitem_adjoint_reads_index(op) else set(),
    ops.SetItem: lambda op: {op.target, op.index},
    ops.InplaceBinary: lambda op: {op.target} | ({op.value} if op.binop in (ops.Mul,
                                                                          ops.TrueDiv) else set()),
    ops.Return: lambda op: set(),
    ops.TupleGetItem: lambda op: set(),
    ops.BuildTuple: lambda op: set(),
}


def _getitem_adjoint_reads_index(op: ops.GetItem) -> bool:
    """`memory.rv_getitem` reads the index for a float entry (`x[i]`, `t[i]` of a tuple) and a
    gather (`x[idx]`); a view (`x[a:b]`, a row) shares the source's shadow, taken in the sweep,
    and its adjoint reads nothing (a list of arrays' entries, views of its buffer, read in a
    loop kept their bounds on tapes the pullback never read). A tuple entry that is a tuple
    holding floats (`a, b = coeffs[i]`) sends their adjoints by the index too."""
    result = op.result.type
    if isinstance(result, FloatType):
        return True
    if isinstance(result, TupleType):
        return any(isinstance(t, FloatType) for t in leaf_types(result))
    return isinstance(result, ArrayType) and not isinstance(op.value.type, TupleType) \
        and any(isinstance(item, ArrayType) for item in (
            op.index.type.elements if isinstance(op.index.type, TupleType) else (op.index.type,)))


def reads(op: Op) -> set:
    """The operands of `op` its adjoint reads (a superset when unsure)."""
    if isinstance(op, ops.GetAttr) and is_float_record(op.value.type):
        source = record_source(op.value)  # the field's adjoint goes to the shadow's entry
        return set() if source is None else {source.index}
    custom = lookup_custom(op.callee) if isinstance(op, ops.Call) else None
    if custom is not None and (custom.nondifferentiable or custom.fwd is not None):
        return set()  # nothing flows back, or the pullback reads the residuals of `fwd` only
    if type(op) in _STRUCTURAL:
        return _STRUCTURAL[type(op)](op)
    registered = lookup_field(_primitive(op), "reads")
    if registered is not None:
        return registered(op)
    return _elementwise_reads(op)


def active_operands(op: Op) -> tuple:
    """Indices of the positional operands whose adjoints the pullback computes: differentiable
    and not constants (a constant's adjoint would be thrown away)."""
    return tuple(k for k, v in enumerate(_positional(op))
                 if _float_or_float_array(v.type) and not isinstance(getattr(v, "op", None),
                                                                     ops.Constant))


def _elementwise_reads(op: Op) -> set:
    operands = _positional(op)
    primitive = _primitive(op)
    types = tuple(v.type for v in operands)
    known = known_results(op)
    try:
        used, used_known = _dry_run(primitive, types, tuple(getattr(op, "kwnames", ())),
                                    tuple(v.type for v in _keyword_values(op)),
                                    active_operands(op),
                                    tuple((*key, v.type) for key, v in known.items()))
    except Exception:  # no rule, or a rule that cannot be dry-run: assume it reads everything
        return set(op.operands)
    return {operands[k] for k in used} | {known[key[:2]] for key in used_known} | \
        set(_keyword_values(op))


def known_results(op: Op) -> dict:
    """`math` calls of `op`'s own operands whose values the primal computes in `op`'s block,
    `op` itself included: {(callee, operand indices): the primal value}. An adjoint asking for
    one (`cos(x)` in that of `s = sin(x)` beside `c = cos(x)`, `exp(x)` in that of `exp(x)`)
    reads the kept value instead of calling the function again in the pullback (the
    kinematic chain's pullback called sin and cos once more a link: a fifth of its time)."""
    if not is_math_call(op) or op.block is None:
        return {}
    index: dict = {}
    for k, v in enumerate(_positional(op)):
        index.setdefault(v, k)
    found: dict = {}
    for other in op.block.ops:
        if is_math_call(other) and isinstance(other.result.type, FloatType) \
                and other.operands and all(v in index for v in other.operands):
            key = (other.callee, tuple(index[v] for v in other.operands))
            found.setdefault(key, other.result)
    return found


def known_calls_for(known: dict, primals: tuple) -> dict:
    """`Builder.known_calls` for a rule given `primals`: the entries of `known_results`
    keyed by the callee and the values the rule would call it with."""
    return {(id(callee), tuple(id(primals[k]) for k in idx)): value
            for (callee, idx), value in known.items()}


@functools.lru_cache(maxsize=None)
def _dry_run(primitive, types: tuple, kwnames: tuple, kwtypes: tuple,
             active: tuple, known: tuple) -> tuple:
    """(indices of the operands, keys of `known` calls) the adjoint of `primitive` reads,
    found by emitting it once."""
    rule = lookup_jvp(primitive)
    if rule is None:
        raise RuleNotApplicable("no rule")
    b = Builder.new_function("dry_run", list(types) + list(kwtypes),
                             [f"a{i}" for i in range(len(types) + len(kwtypes))], types[0])
    b.position_at_end(b.new_block())
    args = b.function.args
    primals, keywords = tuple(args[:len(types)]), dict(zip(kwnames, args[len(types):]))
    stand_ins = {key: b.undef(key[2]) for key in known}  # (callee, indices, type)
    b.known_calls = known_calls_for({key[:2]: v for key, v in stand_ins.items()}, primals)
    for k in active:
        unit = [None] * len(types)
        unit[k] = unit_tangent(b, primals[k])
        rule(b, primals, tuple(unit), keywords)
    used = {v for op in b.function.ops() for v in op.operands}
    return (frozenset(k for k, a in enumerate(primals) if a in used),
            frozenset(key for key, v in stand_ins.items() if v in used))


def rematerializable(fn: Function, value: Value, written_cache: dict,
                     kept_anyway: frozenset = frozenset(), loop_blocks=frozenset()) -> bool:
    """True if the pullback may recompute `value` from values it can read. A scalar float op
    qualifies when each operand is recomputable or in `kept_anyway` (recomputing `a + b` from
    two kept values would keep two values instead of one); a `math` call in a loop does not
    (`loop_blocks`): a tape push and pop cost 1-2 ns, a sin or exp 5-20 ns (RK4 whose stages
    call sin: the pullback recomputed sin and called cos, 40% of the gradient's time)."""
    op = getattr(value, "op", None)
    if op is None:
        return False
    if is_math_call(op) and op.block in loop_blocks:
        return False
    if _scalar_float_op(op):
        key = ("float op", value)  # memoised: shared operands would make this exponential
        if key not in written_cache:
            written_cache[key] = False  # (no cycles through phis, but be safe)
            written_cache[key] = all(isinstance(v, Argument) or v in kept_anyway
                                     or rematerializable(fn, v, written_cache, kept_anyway,
                                                         loop_blocks)
                                     for v in op.operands)
        return written_cache[key]
    if isinstance(op, ops.Constant):
        return True
    if isinstance(op, _CHEAP_INT_OPS) and isinstance(value.type, IntType):
        return True
    if isinstance(op, ops.GetAttr) and op.name in ("shape", "size", "ndim"):
        return True
    if isinstance(op, ops.BuildSlice) or (isinstance(op, ops.BuildTuple) and not any(
            _float_or_float_array(v.type) for v in op.operands)):
        return True  # indices: a[i, j], a[lo:hi]
    if isinstance(op, ops.GetItem) and is_record(value.type):
        return True  # a reference to an entry (no bytes read): recomputed from array and index
    if isinstance(op, ops.GetItem) and not isinstance(value.type, ArrayType):
        root = op.value
        if root not in written_cache:
            written_cache[root] = isinstance(root, Argument) and never_written(fn, root)
        return written_cache[root] or _read_of_restored_array(fn, op, written_cache)
    return False


def _read_of_restored_array(fn: Function, op: Op, cache: dict) -> bool:
    """A read `a[i]` of an array the function writes, recomputable all the same: the pullback
    restores each entry a write overwrote when it reverses the write, so where it reverses the
    users of `a[i]` the array holds what the read saw, provided no write comes between the read
    and its last user. Asked only of arrays that are arguments or fresh allocations, read and
    written entry by entry and nothing else (no views, calls or escapes that could write
    without a restore). The kinematic chain kept every entry its 3x3 products read: 54 tape
    entries a link."""
    users = _users_of(fn, cache)
    if not _written_only_entrywise(op.value, users, cache):
        return False
    derived = _recomputable_from(op, users)
    if derived is None:
        return False
    ops_in_block = op.block.ops
    start = ops_in_block.index(op)
    end = max((ops_in_block.index(user) for user in derived), default=start)
    return not any(between.traits() & Trait.WRITES
                   for between in ops_in_block[start + 1:end + 1])


def _recomputable_from(read: Op, users: dict):
    """The ops the pullback might recompute from `read`'s value: its users, and theirs, through
    scalar arithmetic, comparisons and `math` calls. None if one of them is outside the read's
    block: the pullback would recompute it there, after restoring writes that came between
    (a read before a loop that writes the array, feeding arithmetic used after the loop)."""
    found, work = [], [read.result]
    while work:
        value = work.pop()
        for user, _ in users.get(value, ()):
            if isinstance(user, ops.Phi) or user.result is None or user in found:
                continue  # a phi is kept, never recomputed; so are ops without a result
            if not (_scalar_float_op(user) or isinstance(user, _CHEAP_INT_OPS)):
                continue  # kept, not recomputed: recomputation stops there
            if user.block is not read.block:
                return None
            found.append(user)
            work.append(user.result)
    return found


def _users_of(fn: Function, cache: dict) -> dict:
    users = cache.get(("users",))
    if users is None:
        users = cache[("users",)] = value_users(fn)
    return users


def _written_only_entrywise(array: Value, users: dict, cache: dict) -> bool:
    key = ("entrywise", array)
    if key not in cache:
        cache[key] = _is_argument_or_allocation(array) and all(
            _entry_use(user, position) for user, position in users.get(array, ()))
    return cache[key]


def _is_argument_or_allocation(array: Value) -> bool:
    if isinstance(array, Argument):
        return isinstance(array.type, ArrayType)
    op = getattr(array, "op", None)
    return isinstance(op, (ops.Call, ops.MethodCall)) and bool(op.traits() & Trait.ALLOCATES)


def _entry_use(user: Op, position: int) -> bool:
    """A read of one entry, a write of one scalar entry (restored by the pullback), or a shape."""
    if isinstance(user, ops.GetItem):
        return position == 0 and not isinstance(user.result.type, ArrayType)
    if isinstance(user, ops.SetItem):
        return position == 0 and not isinstance(user.value.type, ArrayType)
    return isinstance(user, ops.GetAttr) and user.name in ("shape", "size", "ndim")


def _scalar_float_op(op: Op) -> bool:
    """Pure ops on scalars with a float result (arithmetic, casts, selects, `math` functions),
    and comparisons of scalars (a branch condition the pullback reads to find its way back)."""
    if op.result is not None and isinstance(op.result.type, BoolType):
        return isinstance(op, _COMPARISONS) and all(
            isinstance(v.type, (FloatType, IntType, BoolType)) for v in op.operands)
    if op.result is None or not isinstance(op.result.type, FloatType):
        return False
    if any(isinstance(v.type, ArrayType) for v in op.operands):
        return False
    if isinstance(op, ops.BinaryOp):
        return not isinstance(op, ops.MatMul)
    if isinstance(op, (ops.UnaryOp, ops.Cast, ops.Select)):
        return True
    return is_math_call(op)


def _float_or_float_array(t) -> bool:
    return isinstance(t, FloatType) or (isinstance(t, ArrayType)
                                         and isinstance(t.dtype, FloatType))



