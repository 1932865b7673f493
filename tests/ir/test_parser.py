"""The IR parser: printed IR reads back to a function that prints the same text and verifies,
names it cannot read are errors that point at the line and column, and parsed IR lowers and
runs like IR built any other way."""

import math

import numba
import numpy as np
import pytest

import moonlite
from moonlite.ad.forward import forward_transform
from moonlite.ad.reverse import reverse_transform
from moonlite.errors import MoonliteError, SourceLoc
from moonlite.ir import Builder, natural_loops, ops, verify
from moonlite.ir import types as T
from moonlite.ir.parser import (ParseError, namespace_of, parse_function, parse_functions,
                                parse_type)
from tests.ir.irtext import SUM_OF_SQUARES
from tests.corpus.kernels import CASES

CASES_BY_NAME = {c.name: c for c in CASES}


@pytest.fixture(scope="module")
def captured():
    cache = {}

    def get(name):
        if name not in cache:
            case = CASES_BY_NAME[name]
            cache[name] = moonlite.capture(case.kernel, *case.make_args())
        return cache[name]
    return get


def _referenced_objects(fn) -> list:
    return [getattr(op, attr) for op in fn.ops() for attr in ("callee", "obj", "exc_class")
            if hasattr(op, attr)]


def assert_round_trips(fn, namespace=None):
    text = str(fn)
    parsed = parse_function(text, namespace)
    assert str(parsed) == text
    assert verify(parsed) is parsed
    # callees are the very objects the original calls, not look-alikes
    for ours, theirs in zip(_referenced_objects(parsed), _referenced_objects(fn)):
        assert ours is theirs
    return parsed


# --- round trips ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", CASES_BY_NAME)
def test_captured_corpus_kernel_round_trips(captured, name):
    assert_round_trips(captured(name))


# derived IR with tapes (push, pop, top), locals, in-place ops, method calls, slices, raises,
# a dtype global, float32, tuples carried around loops, and calls of derived helpers
# (reverse_transform itself differentiates no call of an njit helper: the API inlines those)
DERIVED = [pytest.param(name, transform, id=f"{name}-{transform.__name__}")
           for name in ["leaky_relu_sum", "tuple_state_loop", "newton_sqrt", "stencil_loop_2d",
                        "slice_views_2d", "float32_alloc", "raise_in_loop", "alloc_variants"]
           for transform in (forward_transform, reverse_transform)]


def forward_with_helper_rules(fn):
    """Forward mode of a function that calls an njit helper: calls the helper's forward rule,
    which the driver's context derives."""
    from moonlite.driver import PASS_CONTEXT
    return forward_transform(fn, context=PASS_CONTEXT)


DERIVED.append(pytest.param("helper_with_arrays", forward_with_helper_rules,
                            id="helper_with_arrays"))


@pytest.mark.parametrize("name, transform", DERIVED)
def test_derived_ir_round_trips(captured, name, transform):
    derived = transform(captured(name))
    # a derived helper's callee (`moonlite._dot_loop_fwd`) is named after no module attribute
    assert_round_trips(derived, namespace_of(derived))


@pytest.mark.parametrize("name", ["leaky_relu_sum", "tuple_state_loop", "stencil_loop_2d",
                                  "slice_views_2d"])
def test_transforms_of_parsed_ir_print_like_those_of_the_original(captured, name):
    fn = captured(name)
    parsed = parse_function(str(fn))
    for transform in (forward_transform, reverse_transform):
        assert str(transform(parsed)) == str(transform(fn))


def test_helper_dispatcher_is_found_under_its_python_functions_name(captured):
    fn = captured("range_runtime_step")   # calls moonlite.capture.iterators.check_range_step
    [check] = [op for op in assert_round_trips(fn).ops()
               if isinstance(op, ops.Call) and "check_range_step" in ops.short_name(op.callee)]
    assert check.callee.py_func.__name__ == "_check_range_step_py"  # the njit dispatcher


# --- types ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "float64", "float32", "int64", "int32", "uint8", "bool", "none", "complex128", "complex64",
    "slice", "array(float64, 1d, C)", "array(float32, 3d, A, readonly)",
    "array(int64, 2d, F)", "array(bool, 1d, C)", "tuple()", "tuple(int64,)",
    "tuple(float64, tuple(array(float64, 1d, C), none))", "tape<float64>",
    "tape<array(float64, 2d, A)>", "opaque<unicode_type>", "opaque<class(float32)>",
    "opaque<ListType[float64]>", "tape<tuple(int64, int64)>",
])
def test_types_print_as_they_parse(text):
    assert str(parse_type(text)) == text


def test_type_values():
    assert parse_type("array(float32, 2d, F, readonly)") == T.ArrayType(T.float32, 2, "F", True)
    assert parse_type("uint16") == T.IntType(16, False)
    assert parse_type("opaque<class(int64)>") == T.from_numba(numba.typeof(np.int64))
    assert parse_type("tuple(slice, int64)").elements[0] == T.SliceType(3)


def test_slice_kind_follows_the_step_and_reaches_phis():
    text = """func f(%a: array(float64, 1d, C), %c: bool, %k: int64) -> float64 {
    bb0:
      %none = const None : none
      %s2 = slice %none, %k, %none : slice
      %s3 = slice %none, %k, %k : slice
      br %c, bb1, bb2
    bb1:
      jump bb2
    bb2:
      %s = phi [bb0: %s2], [bb1: %s2] : slice
      %v = getitem %a, %s : array(float64, 1d, C)
      %r = call np.sum(%v) : float64
      ret %r
    }"""
    fn = verify(parse_function(text))
    values = {op.result.hint: op.result for op in fn.ops() if op.result is not None}
    assert values["s2"].type == T.SliceType(2) and values["s3"].type == T.SliceType(3)
    assert values["s"].type == T.SliceType(2)


# --- constants, names, locations ---------------------------------------------------------------

CONSTANTS = [0.0, -0.0, 1e-12, -2.5e300, math.inf, -math.inf, 7, -3, True, False, None,
             "it's # not a comment", 'say "hi"\n', np.float32(0.5), np.int64(4), np.True_,
             1 + 2j, -1j, complex(math.nan, math.inf), (1, 2.5), (3,), ((0.5, "a"), -4)]


def test_constants_read_back_with_their_python_types():
    b = Builder.new_function("consts", [], [], T.float64)
    b.position_at_end(b.new_block())
    for value in CONSTANTS:
        b.const(value)
    b.const(math.nan)
    b.ret(b.const(1.0))
    parsed = assert_round_trips(b.function)
    values = [op.value for op in parsed.ops() if isinstance(op, ops.Constant)]
    for ours, expected in zip(values, CONSTANTS):
        assert type(ours) is type(expected)
        assert repr(ours) == repr(expected)
    assert math.isnan(values[len(CONSTANTS)])


def test_array_constants_are_refused():
    b = Builder.new_function("f", [], [], T.float64)
    b.position_at_end(b.new_block())
    b.const(np.arange(3.0))
    b.ret(b.const(1.0))
    with pytest.raises(ParseError, match="line 3, column .*array constant"):
        parse_function(str(b.function))


HAND_WRITTEN = """\
# blocks come in any order, values are used before the line that defines them
func kernel(%x: array(float64, 1d, C), %n: int64) -> float64 {  # /src/k.py:1
entry:
  %0 = const 0 : int64                          # k.py:3
  %one = const 1 : int64
  %s = const 0.0 : float64                      # k.py:2
  jump loop
exit:
  ret %s.2
body:                                           # a comment that is no location
  %4 = getitem %x, %i : float64                 # k.py:4
  %s.5 = add %s.2, %4 : float64                 # k.py:4
  %i.6 = add %i, %one : int64
  jump loop
loop:
  %i = phi [entry: %0], [body: %i.6] : int64
  %s.2 = phi [entry: %s], [body: %s.5] : float64
  %3 = lt %i, %n : bool
  br %3, body, exit
}
"""


def test_hand_written_text_with_forward_references_and_any_labels():
    fn = verify(parse_function(HAND_WRITTEN))
    assert [len(b.ops) for b in fn.blocks] == [4, 1, 4, 4]
    assert fn.loc == SourceLoc("/src/k.py", 1)  # printed as k.py:1
    first = fn.blocks[0].ops
    assert first[0].loc == SourceLoc("k.py", 3) and first[1].loc.line == 0
    assert fn.blocks[2].ops[0].loc == SourceLoc("k.py", 4)
    [loop] = natural_loops(fn)
    assert loop.header is fn.blocks[3] and loop.latches == [fn.blocks[2]]
    # every value keeps the name the text gave it; blocks are numbered in text order
    printed = str(fn)
    for name in ("%0 ", "%one ", "%s ", "%4 ", "%s.5 ", "%i.6 ", "%i ", "%s.2 ", "%3 "):
        assert f"  {name}= " in printed
    assert "br %3, bb2, bb1" in printed
    assert str(parse_function(printed)) == printed


def test_hints_come_back_as_the_printer_had_them(captured):
    """`%12` had no hint and `%s.14` the hint `s`: derived code of parsed IR names its values
    as derived code of the original does."""
    fn = captured("tuple_state_loop")
    parsed = parse_function(str(fn))

    def hints(f):
        return [a.hint for a in f.args] + [op.result.hint for op in f.ops() if op.result]
    assert hints(parsed) == hints(fn)
    assert None in hints(fn) and any(h and "." not in h for h in hints(fn))


def test_parsed_function_lowers_and_runs():
    text = SUM_OF_SQUARES
    compiled = moonlite.lower(verify(parse_function(text)))
    x = np.random.default_rng(3).uniform(-1.0, 1.0, 7)
    assert compiled(x) == pytest.approx(float(np.sum(x * x)), rel=1e-14)
    assert compiled(np.empty(0)) == 0.0


def test_every_kind_of_op_reads_back():
    text = """func ops_zoo(%a: array(float64, 1d, C), %x: float64, %k: int64, %t: tuple(float64, int64)) -> float64 boundscheck {
    bb0:
      %u = undef : float64
      %tape = tape.new <float64> : tape<float64>
      tape.push %tape, %x
      %top = tape.top %tape : float64
      %popped = tape.pop %tape : float64
      store $acc %popped
      store $only_stored %a
      %acc = load $acc : float64
      %q = truediv checked %x, %acc : float64
      %m = mod %k, %k : int64
      %f = cast %k : float64
      %neg = neg %f : float64
      %not = not %k : bool
      %sel = select %not, %q, %neg : float64
      %a2 = inplace *= %a, %x : array(float64, 1d, C)
      %shape = getattr .shape %a2 : tuple(int64,)
      %t0 = tuplegetitem [0] %t : float64
      %pair = tuple %t0, %k : tuple(float64, int64)
      %dtype = global np.float64 : opaque<class(float64)>
      %z = call np.zeros(%k, dtype=%dtype) : array(float64, 1d, C)
      %total = methodcall %z.sum() : float64
      %part = methodcall %a2.sum(axis=%m) : float64
      %el = getitem %a, %k : float64
      setitem %a, %k, %sel
      %big = gt %el, %total : bool
      br %big, bb1, bb2
    bb1:
      %msg = const 'too big' : opaque<unicode_type>
      raise ValueError %msg
    bb2:
      %r = add %part, %top : float64
      ret %r
    }"""
    fn = verify(parse_function(text))
    assert fn.boundscheck
    assert_round_trips(fn)
    kinds = {type(op) for op in fn.ops()}
    assert {ops.Undef, ops.TapeNew, ops.TapePush, ops.TapePeek, ops.TapePop, ops.StoreLocal,
            ops.LoadLocal, ops.TrueDiv, ops.Cast, ops.Not, ops.Select, ops.InplaceBinary,
            ops.GetAttr, ops.TupleGetItem, ops.BuildTuple, ops.GlobalRef, ops.Call,
            ops.MethodCall, ops.SetItem, ops.Raise} <= kinds
    [call] = [op for op in fn.ops() if isinstance(op, ops.Call)]
    assert call.callee is np.zeros and call.kwnames == ("dtype",)
    [store] = [op for op in fn.ops() if isinstance(op, ops.StoreLocal) and op.var.name ==
               "only_stored"]
    assert store.var.type == T.ArrayType(T.float64, 1)  # a local never loaded: what is stored
    assert next(op for op in fn.ops() if isinstance(op, ops.TrueDiv)).checked


def test_boundscheck_is_printed_and_read_back():
    @numba.njit(boundscheck=True)
    def first(a):
        return a[0]

    fn = moonlite.capture(first, np.ones(2))
    assert fn.boundscheck and " -> float64 boundscheck {" in str(fn).splitlines()[0]
    assert assert_round_trips(fn).boundscheck
    with pytest.raises(IndexError):
        moonlite.lower(parse_function(str(fn)))(np.ones(0))


def test_reraise_and_several_functions():
    text = """func first(%x: float64) -> float64 {
    bb0:
      raise <re-raise>
    }
    func second(%x: float64) -> float64 {
    bb0:
      ret %x
    }"""
    first, second = parse_functions(text)
    assert first.entry.terminator.exc_class is None and second.name == "second"
    with pytest.raises(ParseError, match="expected one function, the text defines 2"):
        parse_function(text)


def test_callees_from_a_namespace():
    @numba.njit
    def helper(v):
        return v * 3.0

    text = """func f(%x: float64) -> float64 {
    bb0:
      %y = call helper(%x) : float64
      ret %y
    }"""
    fn = parse_function(text, namespace={"helper": helper})
    assert moonlite.lower(fn)(2.0) == 6.0
    # the printer names it by module and qualified name; the namespace answers for that too
    printed = str(fn)
    assert "test_callees_from_a_namespace.<locals>.helper" in printed
    assert parse_function(printed, namespace_of(fn)).entry.ops[0].callee is helper
    assert parse_function(printed, {"helper": helper}).entry.ops[0].callee is helper


def test_numpy_functions_printed_without_their_submodule():
    text = """func f(%a: array(float64, 2d, C)) -> float64 {
    bb0:
      %inv = call np.inv(%a) : array(float64, 2d, C)
      %d = call np.det(%inv) : float64
      ret %d
    }"""
    fn = parse_function(text)
    assert [op.callee for op in fn.ops() if isinstance(op, ops.Call)] == [np.linalg.inv,
                                                                          np.linalg.det]


# --- errors -------------------------------------------------------------------------------------

def _function(*body: str) -> str:
    return "\n".join(["func f(%x: float64) -> float64 {", "bb0:", *body, "}"])


@pytest.mark.parametrize("text, line, column, message", [
    (_function("  %y = frobnicate %x : float64", "  ret %y"), 3, 8, "unknown op 'frobnicate'"),
    (_function("  %y = add %x, %z : float64", "  ret %y"), 3, 16, "unknown value %z"),
    (_function("  %y = call np.no_such_thing(%x) : float64", "  ret %y"), 3, 13,
     "unknown name 'np.no_such_thing'"),
    (_function("  %y = call nowhere.f(%x) : float64", "  ret %y"), 3, 13,
     "unknown name 'nowhere.f'"),
    (_function("  jump bb7"), 3, 8, "unknown block bb7"),
    (_function("  %y = add %x, %x : float64", "  %y = mul %x, %x : float64", "  ret %y"), 4, 3,
     "value %y is defined twice"),
    (_function("  %y = add %x, %x", "  ret %y"), 3, 18, "expected ':' and the result type"),
    (_function("  %y = add %x, %x : float65", "  ret %y"), 3, 21, "unknown type 'float65'"),
    (_function("  %y = tuple %x : tuple(int64,)", "  ret %x"), 3, 19,
     "tuple gives tuple(float64,), the text says tuple(int64,)"),
    (_function("  %y = neg %x, %x : float64", "  ret %y"), 3, 8, "neg takes 1 operand"),
    (_function("  %r = ret %x"), 3, 3, "ret has no result"),
    (_function("  %y = add %x, %y : float64", "  ret %y"), 3, 8, "%y is needed to define itself"),
    ("func f(%x: float64) -> float64 {\nbb0:\n  ret %x\n", 1, 1, "not closed"),
    ("  ret %x", 1, 3, "expected 'func'"),
    ("func f(%x: float64) -> float64 {\n  ret %x\n}", 2, 3, "before the first block label"),
    (_function("  %y = const 'open : float64", "  ret %y"), 3, 14, "unterminated string"),
])
def test_errors_name_line_and_column(text, line, column, message):
    with pytest.raises(ParseError) as info:
        parse_function(text)
    error = info.value
    assert isinstance(error, MoonliteError)
    assert message in str(error)
    assert (error.line, error.column) == (line, column), str(error)
    assert str(error).startswith(f"line {line}, column {column}: ")
    assert str(error).splitlines()[-1].index("^") == column + 1  # the caret under the column
