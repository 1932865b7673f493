"""`c_layout` (rules/numpy_shapes.py): a tangent typed of any layout retyped C for the derived
rules and reshapes that take it typed as its C primal, in every mode against finite
differences, and the run-time check that keeps it a view."""

import numba
import numpy as np
import pytest

from moonlite.ir.traits import Trait
from moonlite.rules import lookup_jvp
from moonlite.rules.jitclasses import any_layout
from moonlite.rules.numpy_shapes import c_layout
from moonlite.rules.registry import lookup_field
from moonlite.testing import check_rule


@numba.njit
def _through_c_layout(x, s):
    y = c_layout(any_layout(x * s))
    y[0] += s  # a view: the write reaches the array it views
    return np.sum(y.reshape((2, 2)) ** 2) * s


@numba.njit
def _growth_of_columns(m, w):
    """Growth factors per column (1.0 + m[:, j], a C array from a strided view): the adjoint of
    np.cumprod, a compiled rule, is differentiated again for the Hessian, taking the column's
    tangent off a tangent tape typed of any layout."""
    total = 0.0
    for j in range(m.shape[1]):
        total += w[j] * np.sum(np.cumprod(1.0 + m[:, j]) ** 2)
    return total


def test_c_layout_in_every_mode():
    assert lookup_jvp(c_layout) is not None
    assert lookup_field(c_layout, "traits") & Trait.VIEW
    check_rule(_through_c_layout, np.array([0.3, -0.4, 0.8, 1.1]), 1.3, second_order=True)


def test_tangents_from_a_tape_reach_a_rule_typed_c():
    m = np.array([[0.2, -0.5, 0.1], [0.7, 0.3, -0.2], [0.4, 0.9, 0.6]])
    check_rule(_growth_of_columns, m, np.array([0.5, -0.3, 0.8]), second_order=True)


def test_a_strided_array_is_refused_at_run_time():
    with pytest.raises(ValueError, match="not contiguous"):
        c_layout(any_layout(np.arange(6.0)[::2]))
