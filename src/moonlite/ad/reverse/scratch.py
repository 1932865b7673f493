"""Writes the pullback need not undo: entry writes into scratch arrays nobody reads back.

The forward sweep saves what each write overwrites and the pullback writes it back, so that
every read the pullback makes of an array (a read recomputed from the restored array, an
adjoint rule reading an array operand) sees the contents the primal saw, and so that argument
arrays end as they began. A temporary the kernel allocates and only writes and reads entry by
entry (`tmp[i, j] = a` in a matrix product, then `T[i, j] = tmp[i, j]`) needs neither when no
read of it is recomputed by the pullback: what it held matters to nobody after the call, and
its reads are either kept or not needed. Such writes skip the save and the restore (the
kinematic chain's `tmp`: 9 of its 25 saves a link).

The shadow of the array is kept as before: adjoints still flow through its entries.
"""

from __future__ import annotations

from ...ir import ops
from ...ir.core import Function
from ...ir.traits import ALLOCATES
from ...ir.types import ArrayType
from ...ir.readonly import value_users
from .sweep import _advanced_index


def unrestored_writes(fn: Function, remat: set) -> frozenset:
    """The SetItem ops of `fn` whose overwritten entries the pullback need not save or restore:
    writes of scalars into an array `fn` allocates, used only by scalar writes and scalar reads,
    none of whose reads the pullback recomputes (`remat`: values it recomputes)."""
    users = value_users(fn)
    skipped = []
    for op in fn.ops():
        result = op.result
        if result is None or not isinstance(result.type, ArrayType) \
                or not op.traits() & ALLOCATES:
            continue
        writes = _scalar_entry_writes(result, users.get(result, []), remat)
        if writes is not None:
            skipped.extend(writes)
    return frozenset(skipped)


def _scalar_entry_writes(array, uses: list, remat: set):
    """The writes into `array` if every use is a scalar write into it or a scalar read of it
    that the pullback does not recompute; else None."""
    writes = []
    for user, position in uses:
        if isinstance(user, ops.SetItem) and position == 0 and user.target is array \
                and not isinstance(user.value.type, ArrayType) \
                and not _advanced_index(user):
            writes.append(user)
        elif isinstance(user, ops.GetItem) and position == 0 and user.value is array \
                and not isinstance(user.result.type, ArrayType) and user.result not in remat:
            continue
        else:
            return None  # a view, a call, a return, a phi: contents may be read back
    return writes

