"""The systematic suite, functions of two arguments over broadcasting shapes: the same shape,
a row, a Python float against an array, and (for the first group: compiling 3-d broadcasting
code takes 25-110 s a group) an outer product and a 3-d against a 2-d array (`systematic.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from .systematic import BINARY, check_all_modes, draw, groups, kernel_of

BROADCASTS = {"same": ((3, 4), (3, 4)), "row": ((3, 4), (4,)), "outer": ((3, 1), (1, 4)),
              "scalar": ("float", (3, 4)), "3d": ((2, 3, 1), (3, 4))}


# an outer product and 3-d broadcasting for the first group only (CI time); every group gets the
# same shape, a row (with second order) and a Python float against an array
CASES = [(group, broadcast) for k, group in enumerate(groups(BINARY, 5))
         for broadcast in BROADCASTS if broadcast not in ("3d", "outer") or k == 0]


@pytest.mark.parametrize("group, broadcast", CASES,
                         ids=[f"{g[0].name}..{g[-1].name}-{b}" for g, b in CASES])
def test_binary_numpy_functions_broadcasting(group, broadcast):
    rng = np.random.default_rng(3)
    kernel = kernel_of(f"binary_{group[0].name}_{broadcast}", group, arity=2)
    first, second = BROADCASTS[broadcast]
    args = [v for p in group for v in (draw(rng, p, first, np.float64),
                                       draw(rng, p, second, np.float64))]
    args = [_away_from_ties(a, b, k) for k, (a, b) in enumerate(zip(args[::2], args[1::2]))]
    check_all_modes(kernel, group, [v for pair in args for v in pair], 2,
                    second_order=broadcast == "row")


def _away_from_ties(a, b, k):
    """max/min/where/fmax/... have kinks at a == b: move b to at least 0.1 away."""
    gap = np.asarray(a) - np.asarray(b)
    nudge = np.where(np.abs(gap) < 0.1, 0.25, 0.0)
    b = np.asarray(b) - nudge * np.sign(gap + 1e-12)
    return a, (float(b) if b.ndim == 0 else b)


