"""`list_entry(flat, start, shape)`: an entry of a list of arrays (`capture/array_lists.py`), the
C-contiguous array of `shape` whose numbers start at `flat[start]`, a view of `flat`.

numba's `flat[start:stop].reshape(shape)` gives the same view, but its slice normalises the
bounds (negative ones, clamping) with branches, and the branches kept numba's reference-count
pruning from pairing the view's incref with its decref: a gradient reading entries in a hot loop
paid an atomic incref and decref per read (1.6x the time of reading rows of a 2-D array). This
view is built without branches. Linear and a view (`AXES_VIEW`): its tangent is the same entry
of the tangent buffer, its shadow the same entry of the shadow buffer. The caller (capture)
guarantees `0 <= start` and `start + prod(shape) <= len(flat)`.
"""

from __future__ import annotations

from .. import _numba as nb
from ..ir.traits import AXES_VIEW, VIEW
from .define import linear_call, njit_from_source, no_adjoint
from .operands import reads_nothing
from .registry import register

nbt = nb.types


@nb.intrinsic
def _entry_of(typingctx, flat, start, shape):
    if not (isinstance(flat, nbt.Array) and flat.ndim == 1 and flat.layout == "C"
            and isinstance(start, nbt.Integer) and isinstance(shape, nbt.UniTuple)
            and isinstance(shape.dtype, nbt.Integer)):
        return None
    ndim = shape.count
    result = nbt.Array(flat.dtype, ndim, "C", readonly=not flat.mutable)

    def codegen(context, builder, signature, args):
        source = context.make_array(flat)(context, builder, args[0])
        intp = context.get_value_type(nbt.intp)
        dims = [context.cast(builder, d, shape.dtype, nbt.intp)
                for d in nb.cgutils.unpack_tuple(builder, args[2], ndim)]
        itemsize = intp(context.get_abi_sizeof(context.get_data_type(flat.dtype)))
        strides = [itemsize]
        for d in reversed(dims[1:]):
            strides.insert(0, builder.mul(strides[0], d))
        offset = context.cast(builder, args[1], start, nbt.intp)
        view = context.make_array(result)(context, builder)
        nb.populate_array(view, data=builder.gep(source.data, [offset]),
                          shape=nb.cgutils.pack_array(builder, dims),
                          strides=nb.cgutils.pack_array(builder, strides),
                          itemsize=itemsize, meminfo=source.meminfo, parent=source.parent)
        return nb.impl_ret_borrowed(context, builder, result, view._getvalue())

    return result(flat, start, shape), codegen


list_entry = njit_from_source("def list_entry(flat, start, shape):\n"
                              "    return entry_of(flat, start, shape)\n",
                              "list_entry", "list entry", entry_of=_entry_of)
register(list_entry, jvp=linear_call(list_entry), adjoint=no_adjoint, reads=reads_nothing,
         keywords=(), traits=AXES_VIEW | VIEW)
