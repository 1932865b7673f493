"""A variable holding arrays of different layouts on different paths (capture/importer.py:
`_cast_at_end`): numba types it "A", and capture retypes each incoming array with
`any_layout` (the array itself), which every mode follows as a view. Before, such a variable was
refused ("a variable that is array(..., F) on one path and array(..., A) on another")."""

import numba
import numpy as np
import pytest

from moonlite.testing import check_rule


@numba.njit
def transposed_by_a_branch(a, flip):
    """A matrix or its transpose, chosen by a flag, then read entry by entry."""
    b = a if flip > 0 else a.T
    return np.sum(np.sin(b) * np.arange(b.size).reshape(b.shape))


@numba.njit
def resolvent_iteration(a):
    """A fixed-point iteration from the identity (C-ordered) through inv (F-ordered)."""
    m = np.eye(a.shape[0])
    for _ in range(3):
        m = np.linalg.inv(m + a @ a.T + 3.0 * np.eye(a.shape[0]))
    return np.sum(m * a)


@numba.njit
def kalman_covariance(p0, q, steps):
    """A covariance propagated and inverted in turns: the variable holds the C-ordered start,
    products, and inv's F-ordered results."""
    p = p0 * 1.0
    for k in range(steps):
        if k % 2 == 0:
            p = p + q
        else:
            p = np.linalg.inv(np.linalg.inv(p) + np.eye(p.shape[0]))
    return np.log(np.linalg.det(p))


A = np.array([[0.4, -0.2, 0.1], [0.3, 0.5, -0.6], [-0.1, 0.2, 0.3]])


@pytest.mark.parametrize("kernel, args", [
    (transposed_by_a_branch, (A, 1.0)),
    (transposed_by_a_branch, (A, -1.0)),
    (resolvent_iteration, (A,)),
    (kalman_covariance, (A @ A.T + np.eye(3), 0.1 * np.eye(3) + 0.05, 4)),
], ids=["branch_kept", "branch_transposed", "resolvent", "kalman"])
def test_a_variable_of_several_layouts_in_every_mode(kernel, args):
    check_rule(kernel, *args, second_order=True)
