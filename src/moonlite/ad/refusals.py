"""What no AD mode differentiates, decided once for every mode (fail closed).

A pass that cannot follow a derivative through an op must refuse it, never give it a zero: that is
how a wrong gradient is born. The cases here do not depend on the mode, so forward mode, reverse
mode and forward over reverse ask the same question and refuse alike:

- an op that returns nothing and is not a known pure statement may write into its arguments
  (`np.fill_diagonal(a, v)`, `a.sort()`, a jitclass method setting a field): no tangent or
  adjoint would follow the write;
- a call with `out=`, or a ufunc given an output array (`np.sin(x, y)`), writes its result into
  an array it is given;
- an op that puts a value being differentiated into a namedtuple, record, jitclass instance or
  container (`tangents.hides_derivatives`): the derivative would be lost there;
- a tuple of more than `MAX_TUPLE_ENTRIES` differentiable entries: derived code grows with it
  until compiling takes minutes; an array is the right container.

`carries_derivative(value)` is the pass's own notion of "being differentiated": a tangent that
is not the symbolic zero in forward mode, membership in the varied set in reverse mode
(`activity.py`). Ops whose values carry none are never refused here (a namedtuple of
constants, `np.random.seed(0)`).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .. import _numba as nb
from ..ir import ops
from ..ir.core import Argument, Op
from ..ir.types import (ArrayType, NoneType, OpaqueType, TupleType, is_float_record,
                        is_record_array, is_record_like)
from ..rules.catalogue import EFFECT_FREE
from ..rules.custom import lookup_custom
from ..ir.traits import Trait
from ..rules.registry import is_float_array
from ..rules.jitclasses import class_name, is_numba_instance_type, maker
from ..rules.records import record_holder, zero_record_like
from .opinfo import describe, hashable
from ..ir.readonly import value_users, views_of
from .tangents import hides_derivatives, is_differentiable


_KEEP_FLOATS_APART = ("keep the values being differentiated in local variables, tuples or arrays: "
                      "moonlite does not follow derivatives through namedtuples, records, "
                      "jitclass or structref instances, or lists")

_READ_BUILT_INSTANCES = ("read its fields and call its methods in the function that builds "
                         "it or in njit functions it is passed to; give a function with a rule "
                         "the fields, not the instance")


# Derived code handles every entry of a tuple separately (a tangent, an adjoint and a shadow per
# entry), so its size grows with the tuple's: a tuple of 200 floats took 16 s to differentiate
# twice (hvp) and one of 1,000 did not finish in 5 minutes. An array does the same job.
MAX_TUPLE_ENTRIES = 64


def refusal(op: Op, carries_derivative: Callable, hidden_arrays=frozenset(),
            may_write: Callable = lambda op, position: True) -> Optional[tuple]:
    """`(construct, hint)` if no mode can differentiate `op` correctly, else None.
    `hidden_arrays`: `arrays_held_by_opaque_values` of the function; `may_write(call, k)`:
    whether a call may write into its operand k (a pass that keeps njit calls knows better than
    the call's traits: the callee's IR)."""
    why = _record_refusal(op, carries_derivative)
    if why is not None:
        return why
    if hidden_arrays and _writes_a_derivative_into(op, hidden_arrays, carries_derivative,
                                                   may_write):
        return (f"{describe(op)}, which writes a value being differentiated into an array held "
                f"by a jitclass or structref instance or a record (a field)", _KEEP_FLOATS_APART)
    for v in (*op.operands, *([op.result] if op.result is not None else [])):
        if isinstance(v.type, TupleType) and _differentiable_entries(v.type) > MAX_TUPLE_ENTRIES:
            return (f"a tuple of {_differentiable_entries(v.type)} differentiable entries (more "
                    f"than {MAX_TUPLE_ENTRIES})", "pass the values as an array")
    if isinstance(op, (ops.Call, ops.MethodCall)):
        if "out" in op.kwnames or _ufunc_output_argument(op):
            return (f"{describe(op)} with an output argument (numpy writing into an array it "
                    "is given)", "assign the result instead: y = f(x)")
        if isinstance(op.result.type, NoneType) and not _effect_free(op):
            return (f"{describe(op)}, which returns nothing and may write into its arguments or "
                    "keep them", "write the update with indexing and assignment, or give the "
                    "function a custom rule (moonlite.custom_vjp and moonlite.custom_jvp)")
    result = op.result
    if isinstance(op, ops.Call) and maker(op.callee) is not None \
            and carries_derivative(op.operands[0]):
        return (f"a {class_name(result.type.numba_type)} instance built from values being "
                "differentiated and used other than by reading its fields (returned in a tuple, "
                "passed to a function with a rule, or chosen by a branch or a loop between it "
                "and an instance not built here whose class's fields the function writes)",
                _READ_BUILT_INSTANCES)
    if result is not None and hides_derivatives(result.type) and not caller_entry(op) \
            and any(carries_derivative(v) for v in op.operands):
        return (f"{describe(op)}, which puts a value being differentiated into a "
                f"{_kind_of(result.type)}", _KEEP_FLOATS_APART)
    return None


def caller_instance(op: Op) -> bool:
    """`t[k]` taking a jitclass or structref instance out of a tuple the function is given
    (`f((model, w), x)`, also nested): the caller's object, held fixed in every mode (its
    tangent and gradient are None, as for a number the caller passes), never a value being
    differentiated, whatever the tuple's float entries carry."""
    return isinstance(op, ops.TupleGetItem) and isinstance(op.result.type, OpaqueType) \
        and is_numba_instance_type(op.result.type.numba_type) and _entry_of_argument(op.tuple)


def caller_entry(op: Op) -> bool:
    """`caller_instance`, or a tuple taken out of a tuple argument whose only values without
    a tangent are such instances (`(model, scale), w = config`): its other entries carry
    their derivatives as a tuple's do."""
    return isinstance(op, ops.TupleGetItem) and _entry_of_argument(op.tuple) \
        and _hides_only_instances(op.result.type)


def _hides_only_instances(t) -> bool:
    if isinstance(t, OpaqueType):
        return is_numba_instance_type(t.numba_type)
    if isinstance(t, TupleType):
        return all(_hides_only_instances(e) or not hides_derivatives(e) for e in t.elements)
    return not hides_derivatives(t)


def _entry_of_argument(value) -> bool:
    if isinstance(value, Argument):
        return True
    op = getattr(value, "op", None)
    return isinstance(op, ops.TupleGetItem) and _entry_of_argument(op.tuple)


# What derived code does with a structured array or record being differentiated: read entries
# and views of it (`p[i]`, `p[1:]`, `p.T`), its shape, and float fields of its entries; pass it
# to njit functions (differentiated with the caller). Capture turns copies, writes, fancy
# indexing and the numpy functions that move entries into those (`capture/record_fields.py`);
# anything left has no rule: its tangent or shadow would be lost.
_RECORD_ATTRIBUTES = ("shape", "size", "ndim", "T", "dtype")


def _record_refusal(op: Op, carries_derivative: Callable) -> Optional[tuple]:
    held = [v for v in op.operands if is_record_like(v.type) and carries_derivative(v)]
    if not held or _record_op_follows_derivatives(op):
        return None
    return (f"{describe(op)} given a structured array or record being differentiated",
            "read float fields of its entries (p[i]['a'], p[i].a) and compute with those; "
            "copies, field writes, fancy indexing, np.roll, np.take, np.repeat, np.append, "
            "np.delete, joins and stacks of structured arrays are differentiated")


def _record_op_follows_derivatives(op: Op) -> bool:
    if isinstance(op, (ops.Phi, ops.Return, ops.BuildTuple, ops.TupleGetItem)):
        return True  # tuples: forward mode follows them; reverse mode refuses them itself
    if isinstance(op, (ops.StoreLocal, ops.LoadLocal, ops.TapeNew, ops.TapePush, ops.TapePeek,
                       ops.TapePop)):
        # a local or tape of a pullback (forward over reverse; a view of a nested record's
        # field kept for the pullback): its tangent is a local or tape too
        return True
    if isinstance(op, ops.GetItem):
        items = op.index.type.elements if isinstance(op.index.type, TupleType) \
            else (op.index.type,)
        return is_record_array(op.value.type) and not any(isinstance(t, ArrayType)
                                                          for t in items)
    if isinstance(op, ops.GetAttr):
        return is_float_record(op.value.type) or op.name in _RECORD_ATTRIBUTES
    if isinstance(op, (ops.Call, ops.MethodCall)) and op.traits() & Trait.AXES_VIEW:
        # a view of it with its axes moved (np.reshape, np.expand_dims, np.transpose): the
        # same view of its tangent, of its shadow (the rule's own checks refuse the others)
        return True
    if isinstance(op, ops.Call):
        # a new array shaped like it (a shadow or a zero tangent) carries no derivative
        return nb.is_njit_dispatcher(op.callee) or op.callee is len \
            or bool(op.traits() & Trait.ALLOCATES) or op.callee in (zero_record_like, record_holder)
    return False


def arrays_held_by_opaque_values(fn) -> frozenset:
    """Float arrays read out of a value that hides derivatives (`m.buf` of a jitclass instance,
    an array field of a record, what a call given such a value returns: it may be a field),
    and their views. Each read of a field gets a fresh zero tangent or shadow, so a derivative
    written into one would be lost by the next read: such writes are refused."""
    fields = [op.result for op in fn.ops()
              if isinstance(op, (ops.GetAttr, ops.Call, ops.MethodCall)) and op.result is not None
              and is_float_array(op.result.type)
              and any(hides_derivatives(v.type) for v in op.operands)]
    return frozenset(views_of(value_users(fn), fields))


def _writes_a_derivative_into(op: Op, arrays: frozenset, carries_derivative: Callable,
                              may_write: Callable) -> bool:
    if isinstance(op, (ops.SetItem, ops.InplaceBinary)):
        return op.operands[0] in arrays and carries_derivative(op.operands[-1])
    if isinstance(op, (ops.Call, ops.MethodCall)) and op.traits() & Trait.WRITES:
        return any(v in arrays and may_write(op, k) for k, v in enumerate(op.operands)) and any(
            carries_derivative(v) for v in op.operands if v not in arrays)
    return False


def _differentiable_entries(t) -> int:
    if isinstance(t, TupleType):
        return sum(_differentiable_entries(e) for e in t.elements)
    return 1 if is_differentiable(t) else 0


def _ufunc_output_argument(op: Op) -> bool:
    """`np.sin(x, y)`: a ufunc given more arguments than it has inputs writes into the rest."""
    return isinstance(op, ops.Call) and isinstance(op.callee, np.ufunc) \
        and len(op.positional) > op.callee.nin


def _effect_free(op: Op) -> bool:
    """Known to write nothing moonlite does not see: numpy's seeding, and calls of njit
    functions and of functions with a user's rule (their bodies or rules are differentiated,
    writes included)."""
    if not isinstance(op, ops.Call):
        return False
    if nb.is_njit_dispatcher(op.callee) or lookup_custom(op.callee) is not None:
        return True
    return hashable(op.callee) and op.callee in EFFECT_FREE


def _kind_of(t) -> str:
    numba_type = t.numba_type if isinstance(t, OpaqueType) else t
    name = type(numba_type).__name__
    kinds = {"NamedTuple": "namedtuple", "NamedUniTuple": "namedtuple", "Record": "record",
             "ClassInstanceType": "jitclass instance", "List": "list", "ListType": "typed list",
             "DictType": "typed dict", "Set": "set"}
    return f"{kinds.get(name, 'value moonlite gives no tangent')} ({numba_type})"
