"""Broadcasting over axes of length 1 in reverse mode: the adjoint of the stretched operand is
summed along those axes (known only at run time). Before, `shadow += adjoint` with mismatched
shapes read past the adjoint's end (numba does not check): silently wrong gradients."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ad.reverse.helpers import SUM_TO_SHAPE, same_size_or_raise
from moonlite.rules.registry import lookup_field
from moonlite.testing import check_hvp, check_jvp, check_rule


@numba.njit
def product_sine(a, b):
    return np.sum(np.sin(a * b))


@numba.njit
def in_a_loop(a, b):
    s = 0.0
    for k in range(3):
        t = a * (k + 1.0)  # a temporary of a's shape, stretched again below
        s += np.sum(np.sin(t * b))
    return s


@numba.njit
def in_place_broadcast(a, b):
    c = b * 1.0
    c += a  # a stretched into c's shape, in place
    return np.sum(c * c)


_SHAPES = [((1, 3), (4, 3)), ((4, 1), (4, 3)), ((1, 1), (2, 3)), ((1,), (5,)),
           ((2, 1, 3), (2, 4, 3)), ((1, 4, 1), (3, 4, 2))]


@pytest.mark.parametrize("shape_a,shape_b", _SHAPES, ids=[f"{a}x{b}" for a, b in _SHAPES])
def test_operand_stretched_along_axes_of_length_1(shape_a, shape_b):
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.2, 1.0, shape_a), rng.uniform(0.2, 1.0, shape_b)
    check_rule(product_sine, a, b)
    check_rule(product_sine, b, a)


def test_in_a_loop_and_second_order():
    rng = np.random.default_rng(1)
    check_rule(in_a_loop, rng.uniform(0.2, 1.0, (1, 3)), rng.uniform(0.2, 1.0, (4, 3)),
               second_order=True)


def test_in_place_update_with_a_stretched_operand():
    rng = np.random.default_rng(2)
    check_rule(in_place_broadcast, rng.uniform(0.2, 1.0, (1, 3)), rng.uniform(0.2, 1.0, (4, 3)))


# The helpers summing an adjoint over stretched axes have registered forward rules (Hessians
# would otherwise derive and compile one per process): checked against finite differences
# here, where g is stretched and summed (like has axes of length 1) and where it passes as is.
_HELPER_SHAPES = [((5,), (1,)), ((5,), (5,)), ((4, 3), (1, 3)), ((4, 3), (4, 1)),
                  ((4, 3), (4, 3)), ((3, 4, 2), (1, 4, 1)), ((2, 4, 3), (2, 1, 3))]


@pytest.mark.parametrize("shape_g,shape_like", _HELPER_SHAPES,
                         ids=[f"{g}to{like}" for g, like in _HELPER_SHAPES])
def test_forward_rule_of_the_summing_helper(shape_g, shape_like):
    helper = SUM_TO_SHAPE[len(shape_g)]
    assert lookup_field(helper, "jvp") is not None
    rng = np.random.default_rng(3)
    g, like = rng.uniform(-1.0, 1.0, shape_g), rng.uniform(-1.0, 1.0, shape_like)
    check_jvp(helper, g, like)  # like's tangent is ignored: it gives only a shape


def test_forward_rule_of_the_more_than_3d_helper():
    rng = np.random.default_rng(4)
    g = rng.uniform(-1.0, 1.0, (2, 2, 2, 2))
    check_jvp(same_size_or_raise, g, g.copy())


@pytest.mark.parametrize("shape_like", [(1, 3), (4, 3)])
def test_a_kernel_calling_the_helper_in_every_mode(shape_like):
    # forward mode uses the registered rule; reverse mode inlines the helper like any callee
    helper = SUM_TO_SHAPE[2]

    @numba.njit
    def calls_helper(g, like):
        return np.sum(np.sin(helper(g * g, like)))

    rng = np.random.default_rng(6)
    check_rule(calls_helper, rng.uniform(0.2, 1.0, (4, 3)), rng.uniform(0.2, 1.0, shape_like),
               second_order=True)


_SECOND_ORDER_SHAPES = [((1,), (5,)), ((4, 1), (4, 3)), ((1, 4, 1), (3, 4, 2))]


@pytest.mark.parametrize("shape_a,shape_b", _SECOND_ORDER_SHAPES,
                         ids=[f"{a}x{b}" for a, b in _SECOND_ORDER_SHAPES])
def test_second_order_through_every_summing_helper(shape_a, shape_b):
    rng = np.random.default_rng(5)
    check_hvp(product_sine, rng.uniform(0.2, 1.0, shape_a), rng.uniform(0.2, 1.0, shape_b))


@numba.njit
def _add_longer(x, w):
    a = x.copy()
    a += w  # numba runs it on w's first entries; NumPy refuses it
    return np.sum(a * a)


def test_an_in_place_update_by_a_longer_array_names_the_shapes_not_a_bug():
    """The message said only "a bug: please report it" (a helper's hunt)."""
    with pytest.raises(ValueError, match="shapes do not broadcast"):
        moonlite.grad(_add_longer, argnums=1)(np.zeros(3), np.arange(1.0, 5.0))
