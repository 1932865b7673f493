"""Records with float fields (entries of structured arrays): a zero tangent record, and the
helpers reverse mode sends a field's adjoint back with.

A record's tangent is a record of the same type; a structured array's is a structured array of
the same dtype (`np.zeros_like`). numba passes a record around as a pointer to its bytes, which
another value (an array, or a NumPy scalar) owns, so derived code never makes one that outlives
its owner: a zero record lives in the frame of the function that needs it (`zero_record_like`),
and reverse mode adds a field's adjoint into the shadow array's entry (`field_adder`). The
shadow of a record argument is a structured array of one entry (`record_holder`): it is also
the gradient reverse mode returns for it.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _numba as nb
from ..ir.types import ArrayType, none
from .define import RuleNotApplicable, defrule, positional_only


@nb.intrinsic
def zero_record_like(typingctx, record):
    """A record of `record`'s type with every field zero, held in the calling function's
    frame (one slot per call site, zeroed at each call: tangent records are only read)."""
    if not isinstance(record, nb.types.Record):
        return None

    def codegen(context, builder, signature, args):
        data_type = context.get_data_type(record)
        slot = nb.cgutils.alloca_once(builder, data_type)
        builder.store(nb.cgutils.get_null_value(data_type), slot)
        return slot

    return record(record), codegen


def _zero_record_jvp(b, primals, tangents, kwargs):
    return None  # a constant: its tangent is zero


defrule(zero_record_like, _zero_record_jvp)


def record_holder(record):
    """A zero structured array of one entry of `record`'s dtype (njit code only)."""
    raise NotImplementedError("record_holder is called from njit code only")


@nb.overload(record_holder)
def _record_holder_impl(record):
    if not isinstance(record, nb.types.Record):
        return None
    dtype = nb.as_dtype(record)

    def impl(record):
        return np.zeros(1, dtype)

    return impl


def holder_type(record_type) -> ArrayType:
    """The type of `record_holder(r)` for a record of moonlite type `record_type`."""
    return ArrayType(record_type, 1, "C")


defrule(record_holder, _zero_record_jvp)  # a fresh zero array (the forward pass makes its own)


@functools.lru_cache(maxsize=None)
def field_adder(name: str):
    """The njit function `add(record, value)` doing `record[name] += value` (in place: the
    record is an entry of a shadow array). Its forward rule does the same to the tangents, so
    forward mode over a gradient (Hessians) differentiates the pullback's field updates."""
    source = f"def add_to_field(record, value):\n    record[{name!r}] += value\n    return None\n"
    scope: dict = {}
    exec(compile(source, f"<moonlite field adder {name!r}>", "exec"), scope)
    adder = nb.njit(cache=False)(scope["add_to_field"])
    defrule(adder, _adder_jvp(adder))
    return adder


def _adder_jvp(adder):
    def rule(b, primals, tangents, kwargs):
        positional_only(kwargs, primals, 2)
        drecord, dvalue = tangents
        if dvalue is None:
            return None
        if drecord is None:
            raise RuleNotApplicable("a field update of a record that carries no tangent")
        b.call(adder, [drecord, dvalue], type=none)
        return None

    return rule
