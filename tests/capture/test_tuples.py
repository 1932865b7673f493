"""Tuples sliced by constants (`t[1:]`, `t[:2]`, `t[::-1]`), captured as the tuple of the
entries picked (`importer._getitem`). Reverse mode gave them a zero adjoint before (grad of
`h[0] * h[1]` with `h = head(t)` was 2.0 where 5.0 is right), forward mode crashed with an
internal TypingFailure."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ir import ops
from moonlite.ir.types import TupleType
from moonlite.testing import check_rule


@numba.njit
def head(t):
    return t[:2]


@numba.njit
def sliced_tuples(x, y, z):
    t = (x, y * 2.0, z)
    h = head(t)
    rest = t[1:]
    back = t[::-1]
    return h[0] * h[1] + rest[1] * x + back[0] * back[2] * y


@numba.njit
def sliced_argument(params, x):
    """Coefficients passed as a tuple, the first read apart from the rest."""
    c0 = params[0]
    total = c0
    for c in params[1:]:
        total = total * x + c
    return total


@numba.njit
def zeros_like_options(options):
    return (0.0, 0.0)[:len(options)]


@numba.njit
def sliced_by_a_length(x, y):
    t = (x, y)
    z = zeros_like_options(t)
    return z[0] + x * y + t[::-1][0] * 3.0


@pytest.mark.parametrize("kernel, args", [
    (sliced_tuples, (0.5, 1.5, 2.0)),
    (sliced_argument, ((0.5, -1.2, 0.3, 2.0), 0.7)),
    (sliced_by_a_length, (0.5, 1.5)),
], ids=["built", "argument", "by_a_length"])
def test_sliced_tuples_in_every_mode(kernel, args):
    check_rule(kernel, *args, second_order=True)


def test_the_gradient_that_was_wrong():
    # f = x * 2y + z * x + z * x * y
    g = moonlite.grad(sliced_tuples, argnums=(0, 1, 2))(0.5, 1.5, 2.0)
    np.testing.assert_allclose(g, (2 * 1.5 + 2.0 + 2.0 * 1.5, 2 * 0.5 + 2.0 * 0.5,
                                   0.5 + 0.5 * 1.5))


def test_no_tuple_is_indexed_by_a_slice_in_the_ir():
    for kernel, args in ((head, ((0.5, 1.5, 2.0),)), (sliced_tuples, (0.5, 1.5, 2.0))):
        ir = moonlite.capture(kernel, *args)
        assert not [op for op in ir.ops() if isinstance(op, ops.GetItem)
                    and isinstance(op.value.type, TupleType)]
