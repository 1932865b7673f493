"""Adjoint accumulation in the pullback: a zero adjoint is set, not added to (no `0.0 + c`)."""

import numba
import numpy as np

from moonlite.driver import derived_reverse_rule
from moonlite.ir import ops
from moonlite.testing import check_vjp


@numba.njit
def chained_squares(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] * x[i]) ** 2 + (1.0 - x[i]) ** 2
    return s


@numba.njit
def used_here_and_after_the_loop(x):
    # t is used in its own block and after the loop, u only in its own block: t's adjoint may
    # hold a contribution from after the loop when the loop body's pullback starts
    t = 0.0
    acc = 0.0
    for i in range(x.shape[0]):
        t = np.sin(x[i])
        u = t * x[i]
        acc += u * u + t
    return acc + 3.0 * t


def _adjoint_additions(fn) -> int:
    """Additions reading an adjoint variable, in the pullback's IR."""
    count = 0
    for block in fn.blocks:
        for op in block.ops:
            if isinstance(op, ops.Add) and any(
                    isinstance(getattr(v, "op", None), ops.LoadLocal)
                    and v.op.var.name.startswith("adj") for v in op.operands):
                count += 1
    return count


def test_block_local_adjoints_are_set_not_added_to():
    x = np.ones(5)
    rule = derived_reverse_rule(chained_squares, (numba.typeof(x),))
    # 17 when every contribution was added to its adjoint; the 8 left combine two real
    # contributions (x[i] is read four times; s's adjoint flows along the loop's edges)
    assert _adjoint_additions(rule.ir) <= 8


def test_adjoints_of_values_used_in_other_blocks_still_accumulate():
    x = np.random.default_rng(0).uniform(-1.0, 1.0, 6)
    check_vjp(chained_squares, x)
    check_vjp(used_here_and_after_the_loop, x)


@numba.njit
def euler_on_a_copy(state0, k, steps):
    state = state0.copy()
    n = state.shape[0]
    for _ in range(steps):
        for i in range(n):
            state[i] += 0.01 * (-k * state[i] + np.sin(state[(i + 1) % n]))
    return np.sum(state * state)


def test_arrays_kept_in_locals_are_loaded_once_by_the_pullback():
    # loaded in every iteration of the pullback's loops, each load cost an incref and a decref
    # (3x the HVP's time)
    args = (np.linspace(-1.0, 1.0, 6), 0.3, 4)
    rule = derived_reverse_rule(euler_on_a_copy, tuple(numba.typeof(a) for a in args))
    loads = [op.var for block in rule.ir.blocks for op in block.ops
             if isinstance(op, ops.LoadLocal) and op.var.type.__class__.__name__ == "ArrayType"]
    assert loads and len(loads) == len(set(loads))
    check_vjp(euler_on_a_copy, *args)  # its pullback state "state0" repeats an argument name
