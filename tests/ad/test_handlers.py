"""Fail closed: every op class has a handler in every mode, and no handler table has a default.

An op class the forward pass, either half of the reverse pass or the emitter does not list is a
KeyError at derivation time, never a silent pass; this test makes a missing entry a test failure
the day the op class is added.
"""

from __future__ import annotations

import inspect

from moonlite.ad import forward, reverse
from moonlite.ir import ops
from moonlite.ir.core import Op, Terminator
from moonlite.lower import emit

_ABSTRACT = {ops.BinaryOp, ops.UnaryOp, ops.Compare, Terminator}


def _concrete_op_classes() -> set:
    found, work = set(), [Op]
    while work:
        cls = work.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("moonlite.ir"):
                work.append(sub)
                if sub not in _ABSTRACT:
                    found.add(sub)
    return found


def test_every_op_class_is_found():
    classes = _concrete_op_classes()
    assert {ops.Add, ops.Call, ops.Phi, ops.Return, ops.TapePush} <= classes
    module_classes = {c for _, c in inspect.getmembers(ops, inspect.isclass)
                      if issubclass(c, Op) and c not in _ABSTRACT and c is not Op}
    assert module_classes <= classes


def test_forward_mode_handles_every_op_class():
    missing = _concrete_op_classes() - set(forward._HANDLERS)
    assert not missing, f"forward mode has no handler for {sorted(c.__name__ for c in missing)}"


def test_reverse_mode_handles_every_op_class_in_both_halves():
    classes = _concrete_op_classes()
    sweep = classes - set(reverse.FORWARD_HANDLERS) - {ops.Phi}  # phis: _forward_phi
    assert not sweep, f"the forward sweep has no handler for {sorted(c.__name__ for c in sweep)}"
    pullback = classes - set(reverse.REVERSE_HANDLERS) - set(reverse._CONTROL)
    assert not pullback, f"the pullback has no handler for {sorted(c.__name__ for c in pullback)}"


def test_lowering_handles_every_op_class():
    missing = _concrete_op_classes() - set(emit._HANDLERS) - {ops.Phi}  # phis: edge copies
    assert not missing, f"lowering has no handler for {sorted(c.__name__ for c in missing)}"


def test_no_pass_dispatches_through_a_default():
    # `.get(type(op), default)` is how an op class without a handler used to pass silently
    for module in (forward, reverse):
        source = inspect.getsource(module)
        assert "HANDLERS.get(" not in source, f"{module.__name__} has a default handler"


def test_every_op_class_declares_its_traits():
    # an op class inheriting `Op.TRAITS` (WRITES, the conservative default) by accident would
    # only cost speed; declaring it makes the choice visible (ir/traits.py)
    undeclared = [cls.__name__ for cls in _concrete_op_classes()
                  if not any("TRAITS" in vars(base) for base in cls.__mro__
                             if base is not Op and issubclass(base, Op))]
    assert not undeclared, f"op classes without TRAITS: {sorted(undeclared)}"


def test_the_traits_of_ops_answer_the_analyses():
    from moonlite.ir import Builder
    from moonlite.ir.traits import Trait
    from moonlite.ir.types import ArrayType, float64
    import numpy as np
    vec = ArrayType(float64, 1, "C")
    b = Builder.new_function("f", [vec, float64], ["x", "s"], float64)
    b.position_at_end(b.new_block())
    x, s = b.function.args
    assert b.add(s, s).op.traits() & Trait.PURE
    assert not b.div(s, s).op.traits() & Trait.PURE  # raises ZeroDivisionError in the primal
    assert b.call(np.sin, [x]).op.traits() & Trait.ELEMENTWISE
    assert not b.call(np.sin, [x]).op.traits() & Trait.WRITES
    assert b.call(np.transpose, [x]).op.traits() & Trait.AXES_VIEW
    assert b.call(np.zeros_like, [x]).op.traits() & Trait.ALLOCATES
    assert b.getattr(x, "T").op.traits() & Trait.AXES_VIEW
    assert b.method_call("fill", x, [s]).op.traits() & Trait.WRITES
