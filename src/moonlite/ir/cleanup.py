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
    ZeroDivisionError in the primal) whose results nothing else needs: marked from the ops
    that must stay, so phis that only feed each other (a loop carrying a value nothing reads
    after the loop) go too."""
    def removable(op) -> bool:
        return bool(op.traits() & Trait.PURE) and op.result is not None

    defined_by = {op.result: op for op in fn.ops() if op.result is not None}
    live, work = set(), [op for op in fn.ops() if not removable(op)]
    while work:
        for v in work.pop().operands:
            if v not in live:
                live.add(v)
                if v in defined_by:
                    work.append(defined_by[v])
    for block in fn.blocks:
        block.ops = [op for op in block.ops if not removable(op) or op.result in live]
    return fn
