"""The importer's normalisations: what numba-specific IR becomes in moonlite IR."""

import math

import numpy as np
import pytest
from numba import njit

import moonlite
from moonlite.testing import check_rule
from moonlite.ir import natural_loops, ops
from moonlite.ir.types import ArrayType, float64, int64


def op_kinds(fn):
    return [type(op) for op in fn.ops()]


@njit
def range_loop(x, n):
    s = 0.0
    for i in range(1, n, 2):
        s += x * i
    return s


def test_range_loop_becomes_a_counted_loop_with_an_index_phi():
    fn = moonlite.verify(moonlite.capture(range_loop, 1.5, 7))
    (loop,) = natural_loops(fn)
    header_phis = loop.header.phis
    assert {p.result.type for p in header_phis} == {float64, int64}
    index = next(p for p in header_phis if p.result.type == int64)
    assert {ops.constant_value(v) for v in index.incoming_values} >= {1}
    # the exit test compares the index against the stop argument; the step is an add of 2
    text = str(fn)
    assert "lt %i, %n" in text and "add %i" in text
    assert not any("iter" in k.__name__.lower() for k in op_kinds(fn))


@njit
def negative_step(a):
    s = 0.0
    for i in range(len(a) - 1, -1, -2):
        s += a[i]
    return s


def test_negative_step_tests_with_greater_than():
    fn = moonlite.verify(moonlite.capture(negative_step, np.arange(5.0)))
    assert "gt %i" in str(fn)


@njit
def runtime_step(a, step):
    s = 0.0
    for i in range(0, len(a), step):
        s += a[i]
    return s


def test_runtime_step_selects_the_test_and_checks_for_zero():
    fn = moonlite.verify(moonlite.capture(runtime_step, np.arange(6.0), 2))
    assert ops.Select in op_kinds(fn)
    assert any(isinstance(op, ops.Call) and op.callee.__name__ == "_check_range_step_py"
               or getattr(getattr(op, "callee", None), "py_func", None) is not None
               for op in fn.ops())
    compiled = moonlite.lower(fn)
    assert compiled(np.arange(6.0), 2) == runtime_step(np.arange(6.0), 2)
    assert compiled(np.arange(6.0), -1) == runtime_step(np.arange(6.0), -1)


@njit
def array_loop(a):
    s = 0.0
    for v in a:
        s += v
    return s


def test_array_iteration_reads_elements_inside_the_body():
    fn = moonlite.verify(moonlite.capture(array_loop, np.arange(4.0)))
    (loop,) = natural_loops(fn)
    getitems = [op for op in fn.ops() if isinstance(op, ops.GetItem)]
    assert len(getitems) == 1
    # never in the header, where the index may equal len(a)
    assert getitems[0].block is not loop.header and getitems[0].block in loop.body


@njit
def branchy(x):
    if x > 0:
        y = x
    else:
        y = -x
    return y


def test_bool_predicates_vanish_and_phis_join_branches():
    fn = moonlite.verify(moonlite.capture(branchy, 2.0))
    assert not any(isinstance(op, ops.Call) and op.callee is bool for op in fn.ops())
    branch = next(op for op in fn.ops() if isinstance(op, ops.Branch))
    assert isinstance(branch.cond.op, ops.Gt)
    assert sum(isinstance(op, ops.Phi) for op in fn.ops()) == 1


@njit
def int_times_float(n, x):
    return math.exp(n * x)


def test_implicit_conversions_become_explicit_casts():
    fn = moonlite.verify(moonlite.capture(int_times_float, 3, 0.5))
    mul = next(op for op in fn.ops() if isinstance(op, ops.Mul))
    assert isinstance(mul.lhs.op, ops.Cast) and mul.lhs.type == float64
    assert mul.result.type == float64


@njit
def returns_int_as_float(flag):
    if flag:
        return 1
    return 2.5


def test_return_cast_to_the_declared_type():
    fn = moonlite.verify(moonlite.capture(returns_int_as_float, True))
    assert fn.return_type == float64
    assert all(op.value.type == float64 for op in fn.ops() if isinstance(op, ops.Return))


@njit
def unpack(t):
    a, b = t
    return a * b + t[0]


def test_tuple_unpacking_reads_the_tuple():
    fn = moonlite.verify(moonlite.capture(unpack, (2.0, 3.0)))
    reads = [op for op in fn.ops() if isinstance(op, ops.TupleGetItem)]
    assert sorted(op.index for op in reads) == [0, 0, 1]


@njit
def with_default(x, scale=2.0):
    return x * scale


def test_omitted_arguments_become_constants():
    fn = moonlite.verify(moonlite.capture(with_default, 1.5))
    assert [a.name for a in fn.args] == ["x"]
    assert any(ops.constant_value(op.result) == 2.0 for op in fn.ops()
               if isinstance(op, ops.Constant))
    assert moonlite.lower(fn)(1.5) == 3.0


@njit
def helper(x):
    return x * x


@njit
def calls_helper(x):
    return helper(x) + helper(x + 1.0)


def test_njit_calls_are_kept_as_calls_and_capturable():
    fn = moonlite.verify(moonlite.capture(calls_helper, 1.0))
    callees = [op.callee for op in fn.ops() if isinstance(op, ops.Call)]
    assert callees == [helper, helper]
    inner = moonlite.verify(moonlite.capture(helper, 1.0))
    assert inner.return_type == float64


@njit
def uses_methods_and_attributes(a):
    return a.sum() + a.shape[0] + a.T[0]


def test_methods_and_attributes():
    fn = moonlite.verify(moonlite.capture(uses_methods_and_attributes, np.ones(3)))
    kinds = op_kinds(fn)
    assert ops.MethodCall in kinds and ops.GetAttr in kinds
    method = next(op for op in fn.ops() if isinstance(op, ops.MethodCall))
    assert method.method == "sum" and isinstance(method.receiver.type, ArrayType)


@njit
def raises(n):
    if n < 0:
        raise ValueError("n must be non-negative")
    return n


def test_raise_becomes_a_raise_terminator():
    fn = moonlite.verify(moonlite.capture(raises, 1))
    (raised,) = [op for op in fn.ops() if isinstance(op, ops.Raise)]
    assert raised.exc_class is ValueError
    assert [ops.constant_value(a) for a in raised.args] == ["n must be non-negative"]


def test_assert_becomes_a_raise_of_assertion_error():
    # pytest rewrites `assert` in test modules, so the kernel lives in the corpus
    from tests.corpus.kernels import assert_positive
    fn = moonlite.verify(moonlite.capture(assert_positive, 1.0, 2.0))
    assert [op.exc_class for op in fn.ops() if isinstance(op, ops.Raise)] == [AssertionError]


def test_captured_ir_of_a_moonlite_callable_is_its_kept_ir():
    fn = moonlite.capture(helper, 1.0)
    compiled = moonlite.lower(fn)
    assert moonlite.capture(compiled, 2.0) is fn


# --- found refused with internal names by an adversarial hunt -------------------------------

@njit
def indexed_with_an_ellipsis(b):
    c = b.copy()
    c[..., 0] = c[..., 1] * c[..., 2]  # `...` spelled out as the full slices it stands for
    d = c[1, ...]
    return np.sum(c ** 2) + np.sum(d) + c[..., -1][0]


@njit
def walked_row_by_row(a):
    s = 0.0
    for row in a:  # the inner loop walks the outer loop's element
        for v in row:
            s += v * v * v
    return s


@njit
def flat_read_while_written(a):
    b = a.copy()
    s = 0.0
    for v in b.flat:  # .flat reads live: np.ravel of a C array is a view of it
        b[0, 0] = v * 0.5
        s += v
    return s + b[0, 0]


@pytest.mark.parametrize("kernel", [indexed_with_an_ellipsis, walked_row_by_row,
                                    flat_read_while_written], ids=lambda k: k.__name__)
def test_ellipses_nested_rows_and_live_flat_reads_in_every_mode(kernel):
    check_rule(kernel, np.array([[0.3, -0.5, 0.8], [1.1, 0.4, -0.2]]), second_order=True)
