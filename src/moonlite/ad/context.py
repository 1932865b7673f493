"""What the AD passes need from the layers above them, handed in by the driver.

A pass that meets a call of an njit function needs the callee's IR (to inline it, or to see
which arrays it writes) or the callee's compiled forward rule. Capturing and compiling live
above the passes (`capture/`, `lower/`, `driver.py`), and the driver itself calls the passes, so
the driver gives each pass a `PassContext` holding those functions: the passes never import the
layers that provide them (imports run one way; `tests/test_imports.py` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import MoonliteError


@dataclass(frozen=True)
class PassContext:
    # callee_ir(f, numba argtypes) -> Function: the IR of the njit function f
    callee_ir: Callable
    # forward_rule(f, numba argtypes, width, active) -> compiled forward rule of f (with `.ir`)
    forward_rule: Callable


def _no_provider(what: str) -> Callable:
    def refuse(f, *args, **kwargs):
        name = getattr(getattr(f, "py_func", f), "__qualname__", repr(f))
        raise MoonliteError(
            f"this pass met a call of the njit function {name} and needs {what}, but it was "
            "given no PassContext: pass context=moonlite.driver.PASS_CONTEXT (what moonlite's "
            "API uses)")
    return refuse


# The default of every pass: enough for functions that call no njit function (most unit tests).
NO_CALLEES = PassContext(callee_ir=_no_provider("its IR"),
                         forward_rule=_no_provider("its derived forward rule"))
