"""Debug mode: more checking, at the cost of compile and run time.

Switch it on with `moonlite.set_debug(True)`, the context manager `moonlite.debug_mode()`, or the
environment variable `MOONLITE_DEBUG=1` (read at import). In debug mode:

- the IR verifier runs after every pass (capture, inlining, the forward and reverse transforms,
  the vjp cut), and a failure names the pass and prints the IR around the offending instruction;
- forward mode checks, at run time, that the tangent a rule returns (a built-in rule, a user's
  JVP, the derived rule of a called njit function) has its primal's shape; a mismatch raises
  `ValueError` with the source line and the IR around the call, before any wrong number spreads.
  (Tangents from users' JVP rules are checked in every mode, and reverse mode always checks the
  shapes of the adjoints it adds into arrays.)
- the primal output of a user's rule (`out` of a custom JVP or of the forward half of a custom
  VJP) is compared, at run time, with what the function itself returns (its shape and its
  values, to 1e-8 relative): a rule computing something else raises `ValueError`.

Derived rules are cached per mode: switching clears the cache, so every rule is rebuilt with (or
without) the checks. (The driver, which holds that cache, sits above this module: it registers
its `clear_cache` with `on_mode_change`.)
"""

from __future__ import annotations

import contextlib
import linecache
import os

import numpy as np

from . import _numba as nb
from .errors import VerificationError
from .ir import verify
from .timing import phase
from .ir.printer import Namer, format_op
from .ir.types import ArrayType, FloatType, none

_enabled = os.environ.get("MOONLITE_DEBUG", "").strip() not in ("", "0")
_checkers: dict = {}
_on_mode_change: list = []  # callbacks: the driver's clear_cache


def on_mode_change(callback) -> None:
    """Call `callback()` whenever debug mode is switched on or off."""
    _on_mode_change.append(callback)


def set_debug(on: bool = True) -> None:
    global _enabled
    if bool(on) != _enabled:
        _enabled = bool(on)
        for callback in _on_mode_change:
            callback()


def debug_enabled() -> bool:
    return _enabled


@contextlib.contextmanager
def debug_mode(on: bool = True):
    before = _enabled
    set_debug(on)
    try:
        yield
    finally:
        set_debug(before)


def verified(fn, after: str):
    """Run the verifier on `fn` (the result of the pass `after`): always where driver.py asks
    for it, and in debug mode after every pass; a failure says which pass broke the IR."""
    try:
        with phase("verify"):
            return verify(fn)
    except VerificationError as exc:
        raise VerificationError(f"the IR is invalid after {after}:\n{exc}") from None


def verified_in_debug(fn, after: str):
    return verified(fn, after) if _enabled else fn


def emit_shape_check(b, primal, tangent, op, what: str, always: bool = False) -> None:
    """In debug mode (or `always`), emit a run-time check that the array `tangent` has
    `primal`'s shape."""
    if not (_enabled or always) or not isinstance(getattr(tangent, "type", None), ArrayType) \
            or not isinstance(primal.type, ArrayType):
        return
    b.call(_checker(_message(op, what)), [primal, tangent], type=none)


def ir_around(op, radius: int = 3) -> str:
    """The ops of `op`'s block within `radius` of it, `op` marked, as the printer shows them."""
    block = op.block
    if block is None:
        return format_op(op)
    names = Namer(block.function)
    k = block.ops.index(op)
    lines = []
    for i in range(max(0, k - radius), min(len(block.ops), k + radius + 1)):
        mark = "-> " if i == k else "   "
        lines.append(format_op(block.ops[i], names, indent=mark))
    return "\n".join(lines)


def _message(op, what: str) -> str:
    source = linecache.getline(op.loc.filename, op.loc.line).strip() if op.loc.line else ""
    fn = op.block.function.name if op.block is not None else "?"
    return (f"moonlite: {what} has a shape different from its primal's\n"
            f"  in function {fn}, at {op.loc.filename}:{op.loc.line}\n"
            + (f"  > {source}\n" if source else "")
            + f"  IR around it:\n{ir_around(op)}")


def _checker(message: str):
    checker = _checkers.get(message)
    if checker is None:
        def check(primal, tangent):
            if primal.shape != tangent.shape:
                raise ValueError(message)
            return None
        checker = _checkers[message] = nb.njit(check)
    return checker


def emit_output_check(b, function, args, got, op, rule_name: str) -> None:
    """In debug mode, emit a run-time comparison of `got` (a custom rule's primal output) with
    `function(*args)`."""
    if not _enabled or not isinstance(got.type, (ArrayType, FloatType)):
        return
    expected = b.call(function, list(args), type=got.type)
    where = _message(op, "").split("\n", 1)[1]
    message = (f"moonlite: the custom rule of {rule_name} computes an output different from "
               f"what {rule_name} returns (shape or values)\n{where}")
    b.call(_output_checker(message), [expected, got], type=none)


def _output_checker(message: str):
    key = ("output", message)
    checker = _checkers.get(key)
    if checker is None:
        def check(expected, got):
            a, e = np.asarray(got), np.asarray(expected)
            if a.shape != e.shape or not np.allclose(a, e, 1e-8, 1e-300, True):
                raise ValueError(message)
            return None
        checker = _checkers[key] = nb.njit(check)
    return checker
