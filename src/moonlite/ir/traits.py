"""What an op does besides computing its result: the traits every analysis asks of it.

Each op class declares `TRAITS` (after xDSL's traits); `op.traits()` answers for one op. Calls
and method calls answer per callee: the answer comes from the primitive's registration in
`moonlite.rules` (installed with `set_call_traits` when the rules are imported), and without
one they answer `WRITES`, the conservative answer. An op class that declares nothing inherits
`WRITES` from `Op`, so an op added without thought is treated as writing memory, never as
harmless.

- `PURE`: no effect and never raises: removable when its result is unused, shareable by CSE.
  Divisions are not pure (numba raises ZeroDivisionError from the primal's own divisions).
- `WRITES`: may write memory (array entries, locals, tapes) or hand an array to code that may.
- `VIEW`: the (array) result may alias an array operand: a write through it writes the operand.
- `AXES_VIEW`: the result is always a view of the first operand with its axes permuted or
  reversed (`a.T`, `np.transpose`, `np.flip`): the result's adjoint is the same view of the
  operand's.
- `ALLOCATES`: the result is a fresh object: an array whose values depend on no float operand
  (`np.zeros`), a tape. Two of them are never one (common-subexpression elimination).
- `ELEMENTWISE`: entry k of the result depends only on entry k of each operand (after
  broadcasting): the forward rule's tangent of a unit input is the Jacobian's diagonal.
"""

from __future__ import annotations

import enum


class Trait(enum.Flag):
    NONE = 0
    PURE = enum.auto()
    WRITES = enum.auto()
    VIEW = enum.auto()
    AXES_VIEW = enum.auto()
    ALLOCATES = enum.auto()
    ELEMENTWISE = enum.auto()


PURE, WRITES, VIEW = Trait.PURE, Trait.WRITES, Trait.VIEW
AXES_VIEW, ALLOCATES, ELEMENTWISE = Trait.AXES_VIEW, Trait.ALLOCATES, Trait.ELEMENTWISE


def _unknown_call(op) -> Trait:
    return Trait.WRITES


_call_traits = _unknown_call


def set_call_traits(provider) -> None:
    """Install `provider(op) -> Trait` answering for calls and method calls (the rules do)."""
    global _call_traits
    _call_traits = provider


def call_traits(op) -> Trait:
    return _call_traits(op)
