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

import itertools

from .. import _numba as nb

llvm_ir = nb.llvm_ir

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


# --- tapes that keep their memory between calls -----------------------------------------------
#
# A tape of several MB freed at the end of every call came back from the kernel on the next
# one: glibc serves large blocks from fresh mappings and trims the heap when they are freed, so
# each call page-faulted through its tapes again (RK4 at 1e4 steps: 4,700 faults a call, the
# gradient twice as slow per step as at 1e3 steps). A tape of numbers made once per call
# (`tape.new` outside loops) therefore takes its list from a slot of its own, a global of the
# compiled module, and puts it back before the function returns: the next call finds the memory
# allocated and touched. The slot is exchanged atomically, so two threads in the same rule never
# share a list (the second allocates its own; the list displaced when both put theirs back is
# freed). A list over `REUSE_LIMIT` bytes is freed as before.

REUSE_LIMIT = 256 << 20
SLOTS = itertools.count()  # one slot per `tape.new` lowered, in this process


def _slot(builder, slot_id: int):
    module = builder.module
    name = f"moonlite.tape_slot.{slot_id}"
    try:
        return module.get_global(name)
    except KeyError:
        slot = llvm_ir.GlobalVariable(module, _cgutils.voidptr_t, name)
        slot.linkage = "internal"
        slot.initializer = llvm_ir.Constant(_cgutils.voidptr_t, None)
        return slot


def _list_of(context, builder, list_type, meminfo):
    inst = _ListInstance(context, builder, list_type, None)
    inst._list.meminfo = builder.bitcast(meminfo, inst._list.meminfo.type)
    inst._list.parent = context.get_constant_null(nb.types.pyobject)
    return inst


@nb.intrinsic(prefer_literal=True)
def tape_new_reused(typingctx, element_type, slot):
    """`tape_new`, taking the list left in slot `slot` (an int literal) by an earlier call."""
    if not isinstance(slot, nb.types.IntegerLiteral):
        return None
    list_type = nb.types.List(element_type.instance_type, reflected=False)

    def codegen(context, builder, sig, args):
        null = llvm_ir.Constant(_cgutils.voidptr_t, None)
        cached = builder.atomic_rmw("xchg", _slot(builder, slot.literal_value), null, "acquire")
        out = _cgutils.alloca_once(builder, context.get_value_type(list_type))
        zero = context.get_constant(nb.types.intp, 0)
        with builder.if_else(_cgutils.is_null(builder, cached)) as (fresh, reused):
            with fresh:
                inst = _ListInstance.allocate(context, builder, list_type, zero)
                inst.size = zero
                builder.store(inst.value, out)
            with reused:
                inst = _list_of(context, builder, list_type, cached)
                inst.size = zero  # numbers only: nothing to release
                builder.store(inst.value, out)
        return builder.load(out)  # a new reference: the slot's, moved to the caller

    return list_type(element_type, slot), codegen


@nb.intrinsic(prefer_literal=True)
def tape_release(typingctx, tape, slot):
    """Put `tape` (made by `tape_new_reused` with the same slot) back in its slot, for the next
    call; the caller's own reference is released as usual when its variable dies."""
    if not isinstance(tape, nb.types.List) or not isinstance(slot, nb.types.IntegerLiteral):
        return None

    def codegen(context, builder, sig, args):
        inst = _ListInstance(context, builder, tape, args[0])
        allocated = inst._payload.allocated
        small = builder.icmp_signed("<=", allocated,
                                    allocated.type(REUSE_LIMIT // max(inst._itemsize, 1)))
        with builder.if_then(small, likely=True):
            context.nrt.incref(builder, tape, args[0])  # the slot's reference
            mine = builder.bitcast(inst.meminfo, _cgutils.voidptr_t)
            old = builder.atomic_rmw("xchg", _slot(builder, slot.literal_value), mine,
                                     "acq_rel")
            with builder.if_then(_cgutils.is_not_null(builder, old), likely=False):
                context.nrt.decref(builder, tape, _list_of(context, builder, tape, old).value)
        return context.get_dummy_value()

    return nb.types.none(tape, slot), codegen
