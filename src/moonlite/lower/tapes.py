"""Tapes as numba lists, pushed, read and popped without reference-counting the list.

A tape is numba's list (`TapeType.to_numba()`). Lowered as `tape.append(v)` and `tape.pop()`,
every push and pop built a bound method, which increfs and decrefs the list: two atomic
read-modify-writes an operation, across blocks, where numba's refcount pruning cannot pair
them. On polynomial least squares they were 57% of the gradient's time (perf: the `lock incq` /
`lock decq` of `NRT_incref`/`NRT_decref`). These intrinsics work on the list's payload directly:
the caller's reference to the tape is borrowed for the operation, as for any call argument.

A pop never shrinks the payload (numba's `list.pop` reallocates when the list falls below a
quarter of its allocation): a tape filled and drained once per outer iteration keeps its
memory, and the whole list is freed when the rule returns.
"""

from __future__ import annotations

from llvmlite import ir as llvm_ir

from .. import _numba as nb

_cgutils = nb.cgutils
_ListInstance = nb.listobj.ListInstance


@nb.intrinsic
def tape_new(typingctx, element_type):
    """An empty list of `element_type` (a numba type, passed as a global: numba types it as
    a type reference)."""
    list_type = nb.types.List(element_type.instance_type, reflected=False)

    def codegen(context, builder, sig, args):
        zero = context.get_constant(nb.types.intp, 0)
        inst = _ListInstance.allocate(context, builder, list_type, zero)
        inst.size = zero
        return inst.value  # a new reference

    return list_type(element_type), codegen


@nb.intrinsic
def tape_push(typingctx, tape, value):
    """Append `value` (cast to the element type) to `tape`."""
    if not isinstance(tape, nb.types.List):
        return None

    def codegen(context, builder, sig, args):
        inst = _ListInstance(context, builder, sig.args[0], args[0])
        item = context.cast(builder, args[1], sig.args[1], tape.dtype)
        n = inst.size
        _reserve(context, builder, inst, n)
        inst.size = builder.add(n, llvm_ir.Constant(n.type, 1))
        inst.setitem(n, item, incref=True, decref_old_value=False)
        return context.get_dummy_value()

    return nb.types.none(tape, value), codegen


def _reserve(context, builder, inst, n) -> None:
    """Room for item `n`: when full, the allocation doubles (numba's `append` grows by a quarter,
    so a long tape was copied about four times over by realloc). New slots are not zeroed: the
    list's destructor releases only the first `size` items."""
    payload = inst._payload
    allocated = payload.allocated
    intp_t = allocated.type
    with builder.if_then(builder.icmp_signed(">=", n, allocated), likely=False):
        doubled = builder.shl(allocated, intp_t(1))
        new_allocated = builder.select(builder.icmp_signed("<", doubled, intp_t(16)),
                                       intp_t(16), doubled)
        header = context.get_abi_sizeof(
            context.get_data_type(nb.types.ListPayload(inst._ty))) - inst._itemsize
        size, overflow = _cgutils.muladd_with_overflow(builder, new_allocated,
                                                       intp_t(inst._itemsize), intp_t(header))
        with builder.if_then(overflow, likely=False):
            context.call_conv.return_user_exc(builder, MemoryError, ("cannot grow a tape",))
        ptr = context.nrt.meminfo_varsize_realloc_unchecked(builder, inst.meminfo, size=size)
        _cgutils.guard_memory_error(context, builder, ptr, "cannot grow a tape")
        inst._payload.allocated = new_allocated


def _last_index(context, builder, inst, what: str):
    """size - 1, raising IndexError on an empty tape (an AD bug, never a user's: but an error,
    never a read before the buffer)."""
    n = inst.size
    _cgutils.guard_zero(context, builder, n, (IndexError, f"moonlite: {what} an empty tape"))
    return builder.sub(n, llvm_ir.Constant(n.type, 1))


@nb.intrinsic
def tape_pop(typingctx, tape):
    """Remove and return the last value of `tape` (its reference moves to the caller)."""
    if not isinstance(tape, nb.types.List):
        return None

    def codegen(context, builder, sig, args):
        inst = _ListInstance(context, builder, sig.args[0], args[0])
        last = _last_index(context, builder, inst, "pop from")
        value = inst.getitem(last)
        inst.size = last  # the slot's reference moves to the caller: the destructor releases
        return value      # only the first `size` items

    return tape.dtype(tape), codegen


@nb.intrinsic
def tape_top(typingctx, tape):
    """The last value of `tape`, left there."""
    if not isinstance(tape, nb.types.List):
        return None

    def codegen(context, builder, sig, args):
        inst = _ListInstance(context, builder, sig.args[0], args[0])
        value = inst.getitem(_last_index(context, builder, inst, "read the top of"))
        return nb.impl_ret_borrowed(context, builder, tape.dtype, value)

    return tape.dtype(tape), codegen
