"""The rules of `rules/jitclasses.py` that derived code calls: `any_layout` (an array retyped
"A", a view) in every mode against finite differences, and what it is for: a C array read back
out of a field declared `float64[:]`, put in a tuple after a field write."""

import numba
import numpy as np
from numba.experimental import jitclass

from moonlite.ir.traits import Trait
from moonlite.rules import lookup_jvp
from moonlite.rules.jitclasses import any_layout
from moonlite.rules.registry import lookup_field
from moonlite.testing import check_rule


@numba.njit
def _through_any_layout(x, s):
    y = any_layout(x * s)
    y[0] += s  # a view: the write reaches the array it views
    return np.sum(y ** 2) + np.sum(any_layout(x[::2]))


def test_any_layout_in_every_mode():
    assert numba.typeof(any_layout(np.ones(3))).layout == "C"  # (boxed again: numpy's flags)
    assert lookup_jvp(any_layout) is not None
    assert lookup_field(any_layout, "traits") & Trait.AXES_VIEW
    check_rule(_through_any_layout, np.array([0.3, -0.4, 0.8]), 1.3, second_order=True)


@jitclass([("x", numba.float64[:]), ("scale", numba.float64), ("calls", numba.int64)])
class Scaled:
    def __init__(self, x, scale):
        self.x = x
        self.scale = scale
        self.calls = 0


@numba.njit
def _fields_in_a_tuple_after_a_write(x, s):
    box = Scaled(x * s, s)
    box.calls = box.calls + 1  # a field written: the fields become locals (instance_fields)
    return box.x, box.scale * box.calls  # a C array where numba typed the read "A"


def test_a_c_array_field_in_a_tuple_after_a_field_write():
    """A VerificationError ("tuple type does not match its items") before any_layout."""
    check_rule(_fields_in_a_tuple_after_a_write, np.array([0.3, -0.4]), 1.3)
