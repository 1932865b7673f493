"""moonlite types <-> numba types, and the builder's result-type inference through numba."""

import collections
import math
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from numba import types as nbt

from moonlite.errors import MoonliteError
from moonlite.ir import Builder, ops
from moonlite.ir import types as T
from moonlite.ir.parser import parse_type
from moonlite.ir.typing import TypingFailure

F64, F32, I64, I32, BOOL = T.float64, T.float32, T.int64, T.int32, T.boolean
U8 = T.IntType(8, signed=False)


def arr(dtype, ndim, layout="C", readonly=False):
    return T.ArrayType(dtype, ndim, layout, readonly)


# --- from_numba / to_numba ---------------------------------------------------------------------

ROUND_TRIPS = [
    (nbt.float64, F64),
    (nbt.float32, F32),
    (nbt.int64, I64),
    (nbt.int32, I32),
    (nbt.uint8, U8),
    (nbt.boolean, BOOL),
    (nbt.none, T.none),
    (nbt.complex128, T.ComplexType(128)),
    (nbt.slice3_type, T.SliceType(3)),
    (nbt.Array(nbt.float64, 1, "C"), arr(F64, 1)),
    (nbt.Array(nbt.float32, 2, "F"), arr(F32, 2, "F")),
    (nbt.Array(nbt.int64, 3, "A"), arr(I64, 3, "A")),
    (nbt.Array(nbt.boolean, 1, "C"), arr(BOOL, 1)),
    (nbt.Array(nbt.uint8, 2, "C", readonly=True), arr(U8, 2, "C", readonly=True)),
    (nbt.Array(nbt.float64, 1, "A", readonly=True), arr(F64, 1, "A", readonly=True)),
    (nbt.UniTuple(nbt.float64, 2), T.TupleType((F64, F64))),
    (nbt.UniTuple(nbt.int64, 1), T.TupleType((I64,))),
    (nbt.Tuple((nbt.float64, nbt.int64, nbt.boolean)), T.TupleType((F64, I64, BOOL))),
    (nbt.Tuple((nbt.UniTuple(nbt.int64, 2), nbt.Array(nbt.float64, 1, "C"))),
     T.TupleType((T.TupleType((I64, I64)), arr(F64, 1)))),
    (nbt.Tuple(()), T.TupleType(())),
]


@pytest.mark.parametrize("numba_type, moonlite_type", ROUND_TRIPS, ids=str)
def test_from_numba_and_back(numba_type, moonlite_type):
    assert T.from_numba(numba_type) == moonlite_type
    assert moonlite_type.to_numba() == numba_type


@pytest.mark.parametrize("value, expected", [
    (1.5, F64),
    (np.float32(1.5), F32),
    (3, I64),
    (np.int32(3), I32),
    (np.uint8(3), U8),
    (True, BOOL),
    (None, T.none),
    (np.zeros(3), arr(F64, 1)),
    (np.zeros((2, 3), np.float32).T, arr(F32, 2, "F")),
    (np.zeros((4, 4))[:, ::2], arr(F64, 2, "A")),
    ((1.0, 2), T.TupleType((F64, I64))),
    ((1.0, (2, 3)), T.TupleType((F64, T.TupleType((I64, I64))))),
], ids=repr)
def test_from_numba_of_typeof_values(value, expected):
    assert T.from_numba(numba.typeof(value)) == expected


def test_readonly_arrays_stay_readonly():
    a = np.zeros(3)
    a.flags.writeable = False
    t = T.from_numba(numba.typeof(a))
    assert t == arr(F64, 1, readonly=True)
    assert str(t) == "array(float64, 1d, C, readonly)"
    assert not t.to_numba().mutable


@pytest.mark.parametrize("literal, base", [(nbt.literal(3), I64), (nbt.literal(True), BOOL),
                                           (nbt.literal("s"), T.OpaqueType(nbt.unicode_type))],
                         ids=str)
def test_literals_become_their_base_type(literal, base):
    assert T.from_numba(literal) == base
    assert T.from_numba(literal).to_numba() == nbt.unliteral(literal)


def test_literal_int_is_int64():
    assert T.from_numba(nbt.IntegerLiteral(7)) == T.int64


def test_unmodelled_types_are_kept_as_opaque():
    for numba_type in (nbt.unicode_type, nbt.DType(nbt.float64)):
        t = T.from_numba(numba_type)
        assert t == T.OpaqueType(numba_type)
        assert t.to_numba() is numba_type
    assert str(T.from_numba(nbt.unicode_type)) == "opaque<unicode_type>"


def test_namedtuples_are_tuples_that_keep_their_class():
    point = collections.namedtuple("Point", "x y")
    numba_type = nbt.NamedUniTuple(nbt.float64, 2, point)
    t = T.from_numba(numba_type)
    assert isinstance(t, T.TupleType) and t.elements == (T.float64, T.float64)
    assert t != T.TupleType((T.float64, T.float64))  # a plain tuple is another type
    assert t.fields == ("x", "y") and t.to_numba() is numba_type
    assert parse_type(str(t)) == t


def test_record_arrays_keep_an_opaque_dtype():
    record = nbt.Record.make_c_struct([("a", nbt.float64)])
    t = T.from_numba(nbt.Array(record, 1, "C"))
    assert t == arr(T.OpaqueType(record), 1)
    assert t.to_numba() == nbt.Array(record, 1, "C")


def test_type_strings():
    assert [str(t) for t in (F64, F32, I64, U8, BOOL, T.none, T.ComplexType(64))] == \
        ["float64", "float32", "int64", "uint8", "bool", "none", "complex64"]
    assert str(arr(F32, 3, "F", readonly=True)) == "array(float32, 3d, F, readonly)"
    assert str(T.TupleType((I64,))) == "tuple(int64,)"
    nested = T.TupleType((F64, T.TupleType((I64, I64))))
    assert str(nested) == "tuple(float64, tuple(int64, int64))"


def test_type_predicates():
    assert F32.is_float and F32.is_scalar and not F32.is_integer
    assert I32.is_integer and I32.is_scalar and not I32.is_float
    assert BOOL.is_scalar and not BOOL.is_integer and not BOOL.is_float
    assert not arr(F64, 1).is_scalar and not arr(F64, 1).is_float
    assert [T.is_differentiable(t) for t in (F64, I64, arr(F32, 2), arr(I64, 1),
                                             T.TupleType((I64, F64)), T.TupleType((I64,)))] == \
        [True, False, True, False, True, False]


# --- builder type inference ------------------------------------------------------------------

@pytest.fixture(scope="module")
def numba_compiled_once():
    """numba registers its numpy typings (np.sum, ...) when its CPU target first compiles; make
    sure that has happened whatever tests ran before (see the fresh-process test below)."""
    numba.njit(lambda a: np.sum(a))(np.zeros(1))


@pytest.fixture
def b():
    """A builder positioned in the entry block of f(x, i, j, a, A, t, s)."""
    argtypes = [F64, I64, I32, arr(F64, 1), arr(F64, 2), T.TupleType((F64, F64)), F32]
    builder = Builder.new_function("f", argtypes, ["x", "i", "j", "a", "A", "t", "s"], F64)
    builder.position_at_end(builder.new_block())
    return builder


def args(b):
    return dict(zip("x i j a A t s".split(), b.function.args))


def test_arithmetic_follows_numba_promotion(b):
    v = args(b)
    assert b.add(v["x"], v["i"]).type == F64
    assert b.mul(v["i"], v["i"]).type == I64
    assert b.add(v["j"], v["j"]).type == I64     # numba widens int32 arithmetic
    assert b.add(v["s"], v["s"]).type == F32
    assert b.add(v["s"], v["x"]).type == F64
    assert b.div(v["i"], v["i"]).type == F64     # true division of integers
    assert b.binary(ops.FloorDiv, v["i"], v["i"]).type == I64
    assert b.neg(v["i"]).type == I64


def test_array_arithmetic_broadcasts(b):
    v = args(b)
    assert b.add(v["a"], v["x"]).type == arr(F64, 1)
    assert b.mul(v["i"], v["A"]).type == arr(F64, 2)
    assert b.add(v["A"], v["a"]).type == arr(F64, 2)


def test_comparisons_are_bool(b):
    v = args(b)
    assert b.binary(ops.Lt, v["x"], v["i"]).type == BOOL
    assert b.binary(ops.Eq, v["i"], v["j"]).type == BOOL
    assert b.binary(ops.Gt, v["a"], v["x"]).type == arr(BOOL, 1)


def test_calls_of_math_functions(b):
    v = args(b)
    sin = b.call(math.sin, [v["x"]])
    assert sin.type == F64
    assert isinstance(sin.op, ops.Call) and sin.op.callee is math.sin
    assert b.call(math.sin, [v["s"]]).type == F32
    assert b.call(math.sqrt, [v["i"]]).type == F64


def test_calls_of_numpy_functions(b, numba_compiled_once):
    v = args(b)
    assert b.call(np.sum, [v["a"]]).type == F64
    assert b.call(np.sum, [v["A"]]).type == F64
    assert b.call(np.sqrt, [v["a"]]).type == arr(F64, 1)
    by_column = b.call(np.sum, [v["A"]], {"axis": b.const(0)})
    assert by_column.type == arr(F64, 1)
    assert by_column.op.kwnames == ("axis",)


def test_calls_of_njit_functions(b):
    @numba.njit
    def twice(y):
        return 2 * y

    assert b.call(twice, [args(b)["x"]]).type == F64
    assert b.call(twice, [args(b)["i"]]).type == I64


def test_getitem_on_arrays(b):
    v = args(b)
    i, a, A = v["i"], v["a"], v["A"]
    assert b.getitem(a, i).type == F64
    assert b.getitem(A, i).type == arr(F64, 1)              # a row
    assert b.getitem(A, b.build_tuple([i, i])).type == F64
    none = b.const(None)
    everything = b.build_slice(none, none, none)
    # no step: numba's slice2, whose whole-array view of a C array stays C
    assert b.getitem(a, everything).type == arr(F64, 1, "C")
    assert b.getitem(A, b.build_tuple([everything, i])).type == arr(F64, 1, "A")  # a column
    stepped = b.build_slice(none, none, b.const(2))
    assert b.getitem(a, stepped).type == arr(F64, 1, "A")


def test_getitem_on_a_homogeneous_tuple(b):
    v = args(b)
    assert b.getitem(v["t"], v["i"]).type == F64


def test_method_calls(b):
    v = args(b)
    total = b.method_call("sum", v["a"])
    assert total.type == F64
    assert isinstance(total.op, ops.MethodCall) and total.op.method == "sum"
    assert b.method_call("copy", v["A"]).type == arr(F64, 2)


def test_attributes(b):
    v = args(b)
    assert b.getattr(v["a"], "shape").type == T.TupleType((I64,))
    assert b.getattr(v["A"], "shape").type == T.TupleType((I64, I64))
    assert b.getattr(v["A"], "T").type == arr(F64, 2, "F")
    assert b.getattr(v["A"], "size").type == I64


def test_constants_are_typed_with_numba(b):
    assert [b.const(c).type for c in (1.5, 3, True, None)] == [F64, I64, BOOL, T.none]
    assert b.const(7, I32).type == I32


def test_cast_to_the_same_type_is_no_op(b):
    v = args(b)
    assert b.cast(v["x"], F64) is v["x"]
    converted = b.cast(v["i"], F64)
    assert converted.type == F64 and isinstance(converted.op, ops.Cast)


def test_phis_go_after_existing_phis_at_the_block_start(b):
    v = args(b)
    body = b.new_block("body")
    b.position_at_end(body)
    b.add(v["x"], v["x"])
    first = b.phi(F64)
    second = b.phi(I64)
    assert body.ops[:2] == [first, second]


def test_builder_refuses_to_emit_after_a_terminator(b):
    v = args(b)
    b.ret(v["x"])
    with pytest.raises(RuntimeError, match="already terminated"):
        b.add(v["x"], v["x"])


def test_builder_needs_an_insertion_block():
    b = Builder.new_function("f", [F64], ["x"], F64)
    with pytest.raises(RuntimeError, match="no insertion block"):
        b.ret(b.function.args[0])


# --- typing failures -------------------------------------------------------------------------

def test_adding_an_array_and_a_tuple_is_a_typing_failure(b):
    v = args(b)
    with pytest.raises(TypingFailure) as info:
        b.add(v["a"], v["t"])
    assert isinstance(info.value, MoonliteError)
    assert str(info.value).startswith(
        "numba cannot type add on ['array(float64, 1d, C)', 'tuple(float64, float64)']")
    assert b.block.ops == []  # nothing was emitted


def test_unknown_methods_and_attributes_are_typing_failures(b):
    v = args(b)
    with pytest.raises(TypingFailure, match="no method 'frobnicate'"):
        b.method_call("frobnicate", v["a"])
    with pytest.raises(TypingFailure, match="no attribute 'frobnicate'"):
        b.getattr(v["a"], "frobnicate")


def test_calling_something_numba_cannot_type_is_a_typing_failure(b):
    def plain_python(y):
        return y

    with pytest.raises(TypingFailure):
        b.call(plain_python, [args(b)["x"]])


def test_numpy_calls_type_in_a_fresh_process():
    script = textwrap.dedent("""
        import numpy as np
        from moonlite.ir import Builder, types as T
        b = Builder.new_function("f", [T.ArrayType(T.float64, 1)], ["a"], T.float64)
        b.position_at_end(b.new_block())
        print(b.call(np.sum, b.function.args).type)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "float64"
