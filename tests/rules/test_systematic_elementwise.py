"""The systematic suite, elementwise functions: numpy's on a Python float, a 0-d array and a
2-d array (second order on the 2-d one), float32, and `math`'s (`systematic.py`). Groups are
small: compiling a derived rule grows faster than its kernel (LLVM: 25 s for a kernel of ten
functions of 3-d arrays, 230 s for twenty)."""

from __future__ import annotations

import numpy as np
import pytest

from .systematic import MATH, UNARY, check_all_modes, draw, groups, kernel_of

SHAPES = {"scalar": "float", "0d": (), "2d": (3, 4)}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("group", groups(UNARY, 5), ids=lambda g: f"{g[0].name}..{g[-1].name}")
def test_unary_numpy_functions(group, shape):
    rng = np.random.default_rng(1)
    kernel = kernel_of(f"unary_{group[0].name}_{shape}", group)
    args = [draw(rng, p, SHAPES[shape], np.float64) for p in group]
    check_all_modes(kernel, group, args, 1, second_order=shape == "2d")


UNARY32 = [p for p in UNARY if p.name != "spacing"]  # 1e12 * spacing: float32 differences lose it


@pytest.mark.parametrize("group", groups(UNARY32, 20), ids=lambda g: f"{g[0].name}..{g[-1].name}")
def test_unary_numpy_functions_float32(group):
    rng = np.random.default_rng(2)
    kernel = kernel_of(f"unary32_{group[0].name}", group)
    args = [draw(rng, p, (5,), np.float32) for p in group]
    check_all_modes(kernel, group, args, 1, np.float32)


@pytest.mark.parametrize("group", groups(MATH, 12), ids=lambda g: f"{g[0].name}..{g[-1].name}")
def test_math_functions(group):
    rng = np.random.default_rng(4)
    kernel = kernel_of(f"math_{group[0].name}", group)
    check_all_modes(kernel, group, [draw(rng, p, "float", np.float64) for p in group], 1)
