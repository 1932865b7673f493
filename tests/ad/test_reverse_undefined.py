"""Arrays assigned on some paths only and read where they were assigned (a loop's last value
read after the loop): numba's phi has an undefined input, and its shadow must be undefined on
that path too (ad/reverse/sweep.py: `fw_default`). Reverse mode made it `zeros_like` of the
undefined array, which the lowering refused (found by an adversarial hunt); forward mode
worked."""

import numba
import numpy as np
import pytest

from moonlite.testing import check_rule


@numba.njit
def last_step_read_after_the_loop(x, lr):
    """Gradient descent on a quadratic, returning the loss and the last step's size."""
    s = 0.0
    for _ in range(4):
        g = 2.0 * x * (1.0 + x * x)
        x = x - lr * g
        s += np.sum(g * g)
    return np.sum(x ** 2) + s + np.sqrt(np.sum(g * g))


@numba.njit
def assigned_in_a_branch(x, c):
    """An array assigned under a condition and read under the same condition."""
    if c > 0.0:
        w = np.sin(x) * c
    total = np.sum(x ** 2)
    if c > 0.0:
        total += np.sum(w * x)
    return total


@pytest.mark.parametrize("kernel, args", [
    (last_step_read_after_the_loop, (np.array([0.3, -0.4, 1.2]), 0.05)),
    (assigned_in_a_branch, (np.array([0.3, -0.4, 1.2]), 0.7)),
    (assigned_in_a_branch, (np.array([0.3, -0.4, 1.2]), -0.7)),
], ids=["loop", "branch_taken", "branch_not_taken"])
def test_an_array_undefined_on_a_path_in_every_mode(kernel, args):
    check_rule(kernel, *args, second_order=True)
