"""The primitive registry: one registration per primitive, duplicates refused, and every
primitive with a reverse adjoint complete in every mode (rules/registry.py)."""

from __future__ import annotations

import numpy as np
import pytest

import moonlite
from moonlite import rules
from moonlite.rules.registry import ANY_KEYWORD, PRIMITIVES, DuplicateRule, register


def _a_primitive(x):
    return x


def test_a_second_forward_rule_raises_naming_both_places():
    rules.defrule(_a_primitive, lambda b, primals, tangents, kwargs: tangents[0])
    try:
        with pytest.raises(DuplicateRule, match=r"jvp of _a_primitive .* at test_registry.py:\d+ "
                                                r"and at test_registry.py:\d+"):
            rules.defpartials(_a_primitive, lambda b, x: None)
    finally:
        rules.unregister(_a_primitive, "jvp")


def test_an_adjoint_may_join_a_forward_rule_registered_elsewhere_but_not_twice():
    rules.defrule(_a_primitive, lambda b, primals, tangents, kwargs: tangents[0])
    try:
        register(_a_primitive, adjoint=rules.no_adjoint, keywords=())
        with pytest.raises(DuplicateRule, match="adjoint of _a_primitive"):
            register(_a_primitive, adjoint=rules.no_adjoint)
    finally:
        PRIMITIVES.pop(_a_primitive)


def test_no_numpy_function_was_registered_twice_at_import():
    # the import itself would have raised; this checks a numpy key kept its numpy rule (the
    # math rules once overwrote np.sin and 22 others silently, in either order)
    origin = PRIMITIVES[np.sin].origins["jvp"]
    assert origin.startswith("numpy_rules.py:")


def test_every_adjoint_comes_with_a_forward_rule_and_its_keywords():
    for key, primitive in PRIMITIVES.items():
        if primitive.adjoint is None or primitive.adjoint is rules.no_adjoint:
            continue
        assert primitive.jvp is not None, f"{key}: an adjoint without a forward rule"
        assert primitive.keywords is not None, f"{key}: the keywords its adjoint reads"
        assert primitive.reads is not None, f"{key}: what its adjoint reads"


def test_zero_derivative_adjoints_ignore_every_keyword():
    assert PRIMITIVES[np.round].keywords == ANY_KEYWORD
    assert PRIMITIVES[np.sum].keywords == ("axis",)


def test_the_worked_example_of_docs_rules_md_np_diff_in_every_mode():
    # np.diff is registered in one place (rules/numpy_shapes.py): forward rule, adjoint, reads
    import numba
    from moonlite.errors import UnsupportedError
    from moonlite.testing import check_rule

    @numba.njit
    def total_variation(x):
        return np.sum(np.sqrt(np.diff(x) ** 2 + 0.01))

    x = np.array([0.3, 1.1, 0.7, -0.4, 2.0])
    check_rule(total_variation, x, second_order=True)

    @numba.njit
    def second_differences(x):
        return np.sum(np.diff(x, 2) ** 2)

    with pytest.raises(UnsupportedError, match=r"np.diff.* n > 1"):
        moonlite.grad(second_differences)(x)
