"""Broadcasting over axes of length 1 in reverse mode: the adjoint of the stretched operand is
summed along those axes (known only at run time). Before, `shadow += adjoint` with mismatched
shapes read past the adjoint's end (numba does not check): silently wrong gradients."""

import numba
import numpy as np
import pytest

from moonlite.testing import check_rule


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
