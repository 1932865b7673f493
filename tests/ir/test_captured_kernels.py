"""IR captured from real @numba.njit kernels verifies, and its loops are where the source
has them."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ir import natural_loops, ops, reverse_post_order, verify
from moonlite.ir import types as T


@numba.njit
def abs_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s += x[i]
        else:
            s -= x[i]
    return s


@numba.njit
def rows_until_negative(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] < 0:
                break
            s += a[i, j]
    return s


@numba.njit
def square_plus_one(v):
    return v * v + 1.0


@numba.njit
def sum_of_helper(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += square_plus_one(x[i])
    return s


KERNELS = {
    "abs_sum": (abs_sum, (np.array([1.0, -2.0, 3.0]),), 1),
    "rows_until_negative": (rows_until_negative, (np.ones((2, 3)),), 2),
    "sum_of_helper": (sum_of_helper, (np.arange(3.0),), 1),
}


@pytest.fixture(scope="module")
def captured():
    return {name: moonlite.capture(kernel, *example) for name, (kernel, example, _) in
            KERNELS.items()}


@pytest.mark.parametrize("name", KERNELS)
def test_captured_ir_verifies(captured, name):
    fn = captured[name]
    assert verify(fn) is fn
    assert fn.name == name
    assert fn.return_type == T.float64
    kernel, example, _ = KERNELS[name]
    assert fn.argtypes == tuple(T.from_numba(numba.typeof(a)) for a in example)
    assert str(fn).startswith(f"func {name}(%{fn.args[0].name}: {fn.args[0].type}) -> float64 {{")
    assert set(reverse_post_order(fn)) == set(fn.blocks)  # capture leaves no dead blocks


@pytest.mark.parametrize("name", KERNELS)
def test_captured_loops_are_found(captured, name):
    fn = captured[name]
    loops = natural_loops(fn)
    assert len(loops) == KERNELS[name][2]
    for loop in loops:
        # each `for i in range(...)` header carries phis for the induction variable and `s`
        assert {phi.result.type for phi in loop.header.phis} >= {T.int64, T.float64}
        assert all(isinstance(latch.terminator, ops.Jump) for latch in loop.latches)


def test_the_branch_is_inside_the_loop(captured):
    fn = captured["abs_sum"]
    [loop] = natural_loops(fn)
    branches = [b for b in fn.blocks if isinstance(b.terminator, ops.Branch)]
    assert len(branches) == 2                       # the loop test and the `if`
    assert all(b in loop.body for b in branches)
    # the two arms of the `if` both subtract/add into s and merge before the latch
    mnemonics = [op.mnemonic() for b in loop.body for op in b.ops]
    assert mnemonics.count("add") >= 1 and mnemonics.count("sub") == 1


def test_nested_loops_with_break(captured):
    fn = captured["rows_until_negative"]
    outer, inner = natural_loops(fn)
    assert inner.body < outer.body
    assert inner.header in outer.body and outer.header not in inner.body
    # the inner loop is left two ways: its range ends, or `break`
    assert len(set(inner.exits())) == 2
    assert len(set(outer.exits())) == 1             # only the return block
    [ret_block] = set(outer.exits())
    assert isinstance(ret_block.terminator, ops.Return)


def test_call_of_another_njit_function(captured):
    fn = captured["sum_of_helper"]
    calls = [op for op in fn.ops() if isinstance(op, ops.Call)]
    assert len(calls) == 1
    [call] = calls
    assert call.callee is square_plus_one
    assert [v.type for v in call.operands] == [T.float64]
    assert call.result.type == T.float64
    [loop] = natural_loops(fn)
    assert call.block in loop.body
