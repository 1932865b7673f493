"""What reverse mode keeps on tapes, and what it reads again or recomputes instead
(`ad/reverse/reads.py`, `ad/reverse/loops.py`): each case against central differences."""

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ir import ops
from tests.helpers import central_differences
from moonlite.testing import check_rule


def _pushes(f, *args) -> list:
    rule = moonlite.build_rrule(f, *args)
    moonlite.verify(rule.ir)
    return [op for op in rule.ir.ops() if isinstance(op, ops.TapePush)]


def _int_tapes(f, *args) -> int:
    return sum(str(op.value.type).startswith("int") for op in _pushes(f, *args))


def _check_gradient(f, *args, rtol=1e-6):
    np.testing.assert_allclose(moonlite.grad(f)(*args), central_differences(f, args),
                               rtol=rtol, atol=1e-9)


@numba.njit
def chain(theta):
    # a 2x2 rotation product: M = M @ R(theta_k), with the matrices rewritten in place
    M = np.eye(2)
    R = np.zeros((2, 2))
    out = np.empty((2, 2))
    for k in range(theta.shape[0]):
        c, s = math.cos(theta[k]), math.sin(theta[k])
        R[0, 0] = c
        R[0, 1] = -s
        R[1, 0] = s
        R[1, 1] = c
        for i in range(2):
            for j in range(2):
                a = 0.0
                for q in range(2):
                    a += M[i, q] * R[q, j]
                out[i, j] = a
        for i in range(2):
            for j in range(2):
                M[i, j] = out[i, j]
    return M[0, 0] + 2.0 * M[1, 0]


def test_reads_of_arrays_written_entry_by_entry_are_read_again_not_kept():
    theta = np.array([0.3, -0.2, 0.7, 0.1])
    pushes = _pushes(chain, theta)
    # the saves of what the writes overwrite: the 4 writes into R and the write into M (in
    # its loop); not the write into the scratch `out`, which nobody reads back
    # (reverse/scratch.py), not the entries the product reads, nor a counter of the nested
    # range(2) loops. And c and s: each one's adjoint reads the other (d cos(t) = -sin(t)),
    # two pushes instead of calling sin and cos again in the pullback (reads.known_results)
    assert len(pushes) == 4 + 1 + 2
    calls = [op for op in moonlite.build_rrule(chain, theta).ir.ops()
             if getattr(op, "callee", None) in (math.sin, math.cos)]
    assert len(calls) == 2  # the sweep's
    assert _int_tapes(chain, theta) == 0
    _check_gradient(chain, theta)


@numba.njit
def read_then_overwritten(x):
    a = x.copy()
    s = 0.0
    for i in range(a.shape[0]):
        v = a[i]
        a[i] = 3.0 * v       # a write between the read and its last use
        s += v * a[i]        # v must be the value read before the write
    return s


def test_a_read_whose_entry_is_overwritten_before_its_use_is_kept():
    _check_gradient(read_then_overwritten, np.array([0.5, -1.5, 2.0]))


@numba.njit
def triangular(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(i):           # each run ends somewhere else: the counter is pushed
            s += x[i] * math.sin(x[j])
    return s


@numba.njit
def with_break(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            if j > i:
                break                # runs end at the break: the counter is pushed
            s += x[i] * math.sin(x[j])
    return s


@numba.njit
def fixed_runs(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):  # every run ends at n: nothing pushed for the counter
            s += x[i] * math.sin(x[j] * i)
    return s


def test_inner_loop_counters_are_pushed_only_when_runs_end_in_different_places():
    x = np.array([0.4, -0.3, 0.9, 0.2])
    assert _int_tapes(triangular, x) > 0
    assert _int_tapes(with_break, x) > 0
    assert _int_tapes(fixed_runs, x) == 0
    for f in (triangular, with_break, fixed_runs):
        _check_gradient(f, x)


@numba.njit
def clipped(x, lo):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > lo:                # the pullback tests x[i] > lo again: nothing taped
            s += x[i] * x[i]
        else:
            s += lo * x[i]
    return s


@numba.njit
def nested_branches(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            if x[i] > 1.0:
                s += math.log(x[i])
            else:
                s += x[i] * x[i]
        else:
            s -= x[i]
    return s


@numba.njit
def three_ways(x):
    s = 0.0
    for i in range(x.shape[0]):
        r = 1.0 if x[i] > 0.5 else (-1.0 if x[i] < -0.5 else 0.0)   # a merge of three
        s += r * x[i] * x[i]
    return s


@numba.njit
def decided_by_a_write(x):
    s = 0.0
    flag = np.zeros(1)
    for i in range(x.shape[0]):
        flag[0] = x[i]
        if flag[0] > 0.0:            # a read of an array written in the loop decides
            s += x[i] * x[i]
        else:
            s += 3.0 * x[i]
        flag[0] = -flag[0]
    return s


def test_the_way_into_a_merge_is_found_again_from_the_branch_condition():
    x = np.array([0.4, -0.3, 1.9, 0.2, -2.0, 1.2])
    assert _int_tapes(clipped, x, 0.25) == 0
    assert _int_tapes(nested_branches, x) == 0
    assert _int_tapes(three_ways, x) == 0  # three ways in, two branches decide
    for f, args in ((clipped, (x, 0.25)), (nested_branches, (x,)), (three_ways, (x,)),
                    (decided_by_a_write, (x,))):
        _check_gradient(f, *args)


@numba.njit
def read_before_a_writing_loop(a):
    t = a[0] * 2.0 + 1.0         # a[0] read before the loop that overwrites it ...
    for i in range(a.shape[0]):
        a[i] -= math.sin(t)
    return math.tanh(t + 0.5) + a[0] * a[1]   # ... and t used after it


def test_a_read_feeding_arithmetic_used_after_a_writing_loop_is_kept():
    # found by the wide fuzz profile (seed 20036): recomputed where tanh's adjoint needs t,
    # after the pullback had undone only the writes that came after tanh, a[0] was misread
    _check_gradient(read_before_a_writing_loop, np.array([0.3, -0.7, 0.5]))


@numba.njit
def sin_before_cos(x):
    # s comes first: the adjoint of sin reads c, which the block defines after it (the pullback
    # releases c only after the adjoint of sin)
    total = 0.0
    for i in range(x.shape[0]):
        h = 0.5 * x[i]
        s = math.sin(h)
        c = math.cos(h)
        e = math.exp(s * c)
        total += s * s * c + 3.0 * c + e
    return total


def _math_calls(f, *args) -> int:
    return sum(callable(getattr(op, "callee", None)) and
               getattr(op.callee, "__module__", None) == "math"
               for op in moonlite.build_rrule(f, *args).ir.ops())


def test_math_calls_the_primal_made_are_read_back_not_called_again():
    x = np.array([0.3, -1.2, 2.0, 0.7])
    assert _math_calls(sin_before_cos, x) == 3  # the sweep's sin, cos and exp only
    _check_gradient(sin_before_cos, x)
    # forward over reverse differentiates the kept values: against differences of the gradient
    g = moonlite.grad(sin_before_cos)
    H = moonlite.hessian(sin_before_cos)(x)
    h = 1e-5
    for k in range(x.shape[0]):
        e = np.zeros_like(x)
        e[k] = h
        np.testing.assert_allclose(H[:, k], (g(x + e) - g(x - e)) / (2 * h), rtol=1e-6,
                                   atol=1e-8)


@numba.njit
def cos_of_another_value(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += math.sin(x[i]) * math.cos(2.0 * x[i])  # cos of 2x is no derivative of sin x
    return total


def test_a_call_of_another_value_is_not_taken_for_a_derivative():
    x = np.array([0.3, -1.2, 2.0])
    assert _math_calls(cos_of_another_value, x) == 4  # d sin(x) = cos(x), d cos(2x) = sin(2x)
    _check_gradient(cos_of_another_value, x)


@numba.njit
def counts_down(x, n, a):
    """A counter in an int array the kernel writes, tested by the branch that writes it."""
    s = 0.0
    for _ in range(4):
        if n[0] > 0:
            n[0] -= 1
            s += x[0] * a
    return s


RECORD = np.dtype([("x", "f8"), ("n", "i8")])


@numba.njit
def replaced_when_counted(p, a):
    if p[0].n > 2:  # the copy below overwrites the field the branch read
        p[0] = p[1]
    return p[0].x * a


@numba.njit
def record_counter(r, a):
    s = 0.0
    for _ in range(3):
        if r.n > 0:
            r.n -= 1
            s += r.x * a
    return s


def test_a_branch_on_memory_the_branch_writes_is_kept_not_recomputed():
    """The pullback finds its way back through a branch at the reverse of the merge block,
    before it restores what the branch wrote: a condition read from written memory is kept
    (keep._reads_written_memory). Recomputed, it went the other way (adversarial tests)."""
    g = moonlite.grad(counts_down, argnums=(0, 2))(np.array([0.5]), np.array([2]), 0.7)
    np.testing.assert_allclose(g[0], [1.4])
    assert g[1] == pytest.approx(1.0)
    p = np.zeros(2, RECORD)
    p["x"], p["n"] = [0.1, 0.2], [3, 1]
    np.testing.assert_allclose(moonlite.grad(replaced_when_counted)(p, 0.7)["x"], [0.0, 0.7])
    r = np.zeros(1, RECORD)[0]
    r["x"], r["n"] = 0.7, 2
    gr, ga = moonlite.grad(record_counter, argnums=(0, 1))(r, 0.5)
    assert gr[0]["x"] == pytest.approx(1.0) and ga == pytest.approx(1.4)
    check_rule(counts_down, np.array([0.5]), np.array([2]), 0.7)
    check_rule(replaced_when_counted, p, 0.7, second_order=True)
