"""Dead-code removal for freshly built IR.

The importer leaves behind values numba needed but moonlite does not (index constants of static
getitems, exception arguments built twice). Removing them keeps printed IR readable and gives AD
passes less to transform. It edits the function in place, so it is meant for IR under
construction, before anyone else holds it.
"""

from __future__ import annotations

from .core import Function
from .traits import Trait


def remove_dead_code(fn: Function) -> Function:
    """Drop pure ops (`Trait.PURE`: no effect, never raising, so not divisions, which raise
    ZeroDivisionError in the primal) whose results are unused, repeatedly (a dead op may feed
    another)."""
    while True:
        used = {v for op in fn.ops() for v in op.operands}
        dead = [op for op in fn.ops()
                if op.traits() & Trait.PURE and op.result is not None and op.result not in used]
        if not dead:
            return fn
        dead_ids = set(map(id, dead))
        for block in fn.blocks:
            block.ops = [op for op in block.ops if id(op) not in dead_ids]
