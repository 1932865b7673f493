"""Vector helpers real kernels call on values being differentiated: np.cross (torques, rigid
bodies), np.vdot, np.linspace (grids whose ends are parameters) and np.asarray of an array (the
array itself). Each is registered once with its forward rule, its adjoint and what the adjoint
reads (`registry.py`); their test cases are at the bottom (`CASES`).
"""

from __future__ import annotations

import numpy as np

from ..ir.traits import AXES_VIEW, VIEW
from ..ir.types import ArrayType, IntType, float64
from .define import RuleNotApplicable, defjvp, positional_only
from .operands import checked_positional, positional, reads_first_two, reads_nothing
from .registry import has_adjoint, is_float_array, register
from .cases import NumpyRuleCase, array_case as _E, uniform as _uniform
from .numpy_products import bilinear_term


# --- np.cross(a, b): bilinear; c . g = a . (b x g) = b . (g x a) ----------------------------------

def _vectors3(a, c) -> None:
    if not all(is_float_array(x.type) and x.type.ndim >= 1 for x in (a, c)):
        raise RuleNotApplicable("np.cross is differentiated for float arrays of 3-vectors")


def _cross_adjoint(rv, op) -> None:
    a, c = checked_positional(rv, op, 2, _vectors3, "call np.cross(a, b) with no keywords",
                              "pass float arrays of 3-vectors")
    g = rv.shadow(op.result)
    if g is None:
        return
    if has_adjoint(a.type):
        rv.send(a, rv.b.call(np.cross, [rv.recall(c), g]))
    if has_adjoint(c.type):
        rv.send(c, rv.b.call(np.cross, [g, rv.recall(a)]))


defjvp(np.cross, bilinear_term(np.cross, 0, _vectors3),
       bilinear_term(np.cross, 1, _vectors3))
register(np.cross, adjoint=_cross_adjoint, reads=reads_first_two, keywords=())


# --- np.vdot(a, b) of real vectors (numba's): the sum of their products -------------------------

def _same_shape(a, c) -> None:
    if not all(is_float_array(x.type) for x in (a, c)) or a.type.ndim != c.type.ndim:
        raise RuleNotApplicable("np.vdot is differentiated for float vectors")


def _vdot_adjoint(rv, op) -> None:
    a, c = checked_positional(rv, op, 2, _same_shape, "call np.vdot(a, b) with no keywords",
                              "pass float vectors")
    g = rv.result_adjoint(op.result)  # (a number: its adjoint, not a shadow)
    if g is None:
        return
    if has_adjoint(a.type):
        rv.send(a, rv.b.mul(rv.recall(c), g))
    if has_adjoint(c.type):
        rv.send(c, rv.b.mul(rv.recall(a), g))


defjvp(np.vdot, bilinear_term(np.vdot, 0, _same_shape),
       bilinear_term(np.vdot, 1, _same_shape))
register(np.vdot, adjoint=_vdot_adjoint, reads=reads_first_two, keywords=())


# --- np.linspace(start, stop, num): start + (stop - start) * t, t = np.linspace(0, 1, num) ------

_GRID = ArrayType(float64, 1, "C")


def _fractions(b, num):
    """np.linspace(0.0, 1.0, num): where each point sits between the ends."""
    return b.call(np.linspace, [b.const(0.0), b.const(1.0), num], None, _GRID)


def _linspace_tangent(b, primals, tangents, kwargs):
    positional_only(kwargs, primals, 3)
    _linspace_check(*primals)
    t = _fractions(b, primals[2])
    terms = []
    if tangents[0] is not None:
        terms.append(b.mul(b.sub(b.const(1.0), t), tangents[0]))
    if tangents[1] is not None:
        terms.append(b.mul(t, tangents[1]))
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else b.add(terms[0], terms[1])


def _linspace_check(start, stop, num) -> None:
    """Ends of any number type (int ends carry no derivative), an int count."""
    if not isinstance(num.type, IntType) \
            or not all(p.type.is_float or p.type.is_integer for p in (start, stop)):
        raise RuleNotApplicable("np.linspace is differentiated for number ends and an int "
                                "count")


def _linspace_adjoint(rv, op) -> None:
    start, stop, num = checked_positional(rv, op, 3, _linspace_check,
                                          "call np.linspace(start, stop, num) without keywords",
                                          "pass number ends and an int count")
    g = rv.shadow(op.result)
    if g is None:
        return
    b = rv.b
    t = _fractions(b, rv.recall(num))
    for end, weight in ((start, b.sub(b.const(1.0), t)), (stop, t)):
        if has_adjoint(end.type):
            rv.send(end, b.call(np.sum, [b.mul(weight, g)], None, float64))


def _reads_count(op) -> set:
    return {positional(op)[2]}


register(np.linspace, jvp=_linspace_tangent, adjoint=_linspace_adjoint, reads=_reads_count,
         keywords=())


# --- np.asarray of an array: the array itself (a view whose shadow is the operand's) -----------

def _asarray_tangent(b, primals, tangents, kwargs):
    positional_only(kwargs, primals, 1)
    if not isinstance(primals[0].type, ArrayType):
        raise RuleNotApplicable("np.asarray is differentiated for arrays (tuples and lists "
                                "of numbers are read at capture)")
    return None if tangents[0] is None else b.call(np.asarray, [tangents[0]])


def _asarray_adjoint(rv, op) -> None:
    """Nothing to send back for an array: the result is the operand, and its shadow the
    operand's. A number's 0-d array is no view of anything (capture makes it np.full):
    refused rather than left with a zero adjoint."""
    if not isinstance(op.operands[0].type, ArrayType):
        raise RuleNotApplicable("np.asarray is differentiated for arrays (tuples and lists "
                                "of numbers are read at capture)")


register(np.asarray, jvp=_asarray_tangent, adjoint=_asarray_adjoint, reads=reads_nothing,
         keywords=(), traits=AXES_VIEW | VIEW)


# --- test cases (checked in every mode against finite differences) ---------------------------

def _linspace_case(start, stop):
    return np.sum(np.sin(np.linspace(start, stop, 7)))


CASES = [
    _E("cross", lambda a, c: np.cross(a, c) * a, _uniform(-2.0, 2.0, 3), _uniform(-2.0, 2.0, 3)),
    _E("cross_rows", lambda a, c: np.cross(a, c) ** 2, _uniform(-2.0, 2.0, 4, 3),
       _uniform(-2.0, 2.0, 4, 3)),
    _E("cross_broadcast", lambda a, c: np.cross(a, c), _uniform(-2.0, 2.0, 4, 3),
       _uniform(-2.0, 2.0, 3)),
    _E("vdot", lambda a, c: np.vdot(a, c) * np.vdot(a, a), _uniform(-2.0, 2.0, 5),
       _uniform(-2.0, 2.0, 5)),
    _E("linspace", _linspace_case, lambda rng: float(rng.uniform(-1.0, 0.0)),
       lambda rng: float(rng.uniform(1.0, 2.0))),
    NumpyRuleCase("linspace_from_an_int", lambda stop: np.sum(np.linspace(0, stop, 5) ** 2),
                  lambda rng: (float(rng.uniform(1.0, 2.0)),), (0,)),
    _E("asarray_of_an_array", lambda a: np.asarray(a) * a, _uniform(-2.0, 2.0, 3, 4)),
    # a number's 0-d array (capture: np.full((), c)); reverse mode gave it a zero adjoint
    NumpyRuleCase("asarray_of_a_number", lambda c: np.sum(np.asarray(c) * 3.0) * c,
                  lambda rng: (float(rng.uniform(0.5, 2.0)),), (0,)),
    NumpyRuleCase("array_of_a_number", lambda c, x: np.sum(np.array(c) + np.sin(x * c)),
                  lambda rng: (float(rng.uniform(0.5, 2.0)), rng.uniform(-1.0, 1.0, 3)),
                  (0, 1)),
]
