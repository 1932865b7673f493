"""The IR verifier accepts well-formed IR and rejects each broken invariant with a message that
names the problem and shows the offending instruction (a '> ... <-- here' line)."""

import pytest

from moonlite.errors import MoonliteError, VerificationError
from moonlite.ir import Block, Builder, verify
from moonlite.ir import ops
from moonlite.ir import types as T

from .irbuild import (counted_loop, diamond, marked_line, marked_lines, problems, rejection,
                      straight_line)

TUPLE2 = T.TupleType((T.float64, T.float64))


# --- correct IR ------------------------------------------------------------------------------

def test_accepts_straight_line_code():
    fn = straight_line()
    assert verify(fn) is fn
    assert [op.mnemonic() for op in fn.entry.ops] == ["mul", "add", "ret"]


def test_accepts_a_diamond_with_a_phi():
    d = diamond()
    assert verify(d.fn) is d.fn
    assert d.join.phis == [d.phi]
    assert d.phi.incoming == ((d.then, d.a), (d.else_, d.m))


def test_accepts_a_counted_loop_with_phis_in_the_header():
    loop = counted_loop()
    assert verify(loop.fn) is loop.fn
    assert loop.header.phis == [loop.i, loop.s]
    # The back-edge operands are defined in the latch, after the header: still well-formed,
    # because a phi's use sits at the end of its incoming block.
    assert loop.i.value_from(loop.body).op.block is loop.body


def test_verification_error_is_a_moonlite_error():
    assert issubclass(VerificationError, MoonliteError)


# --- block structure -------------------------------------------------------------------------

def test_rejects_a_block_without_terminator():
    fn = straight_line()
    fn.entry.ops.pop()  # drop the `ret`
    msg = rejection(fn)
    assert msg.splitlines()[0] == "IR verification failed for function straight: 1 problem(s)"
    assert problems(msg) == [f"block {fn.entry!r} does not end in a terminator"]
    assert "<Block entry#" in msg
    assert marked_line(msg) == "%z = add %y, %n : float64"


def test_rejects_an_empty_block_naming_it():
    fn = straight_line()
    empty = fn.add_block(Block("empty"))
    msg = rejection(fn)
    assert problems(msg) == [f"block {empty!r} does not end in a terminator"]
    assert marked_lines(msg) == []  # there is no instruction to show


def test_rejects_a_terminator_in_the_middle_of_a_block():
    d = diamond()
    d.then.insert(0, ops.Jump(d.join))
    msg = rejection(d.fn)
    assert problems(msg) == ["terminator in the middle of a block"]
    assert marked_line(msg) == "jump bb3"


def test_rejects_a_predecessor_of_the_entry_block():
    b = Builder.new_function("f", [T.boolean, T.float64], ["c", "x"], T.float64)
    c, x = b.function.args
    entry, again, exit_ = b.new_block("entry"), b.new_block("again"), b.new_block("exit")
    b.position_at_end(entry)
    b.mul(x, x, hint="y")
    b.jump(again)
    b.position_at_end(again)
    b.branch(c, entry, exit_)
    b.position_at_end(exit_)
    b.ret(x)
    msg = rejection(b.function)
    assert problems(msg) == ["the entry block must have no predecessors"]
    assert marked_line(msg) == "%y = mul %x, %x : float64"


# --- definitions and dominance ---------------------------------------------------------------

def test_rejects_a_use_not_dominated_by_its_definition():
    d = diamond()
    # `a` is defined in the `then` arm only; using it in the join block is invalid.
    d.join.insert(1, ops.Add(d.a, d.phi.result, T.float64, hint="bad"))
    msg = rejection(d.fn)
    assert problems(msg) == ["operand 0 is used where its definition does not dominate"]
    assert marked_line(msg) == "%bad = add %a, %y : float64"


def test_rejects_a_phi_value_not_available_at_the_end_of_its_incoming_block():
    d = diamond()
    d.phi.operands = (d.m, d.m)  # `m` comes from `else`, but is listed for `then` too
    msg = rejection(d.fn)
    assert problems(msg) == ["operand 0 is used where its definition does not dominate"]
    assert marked_line(msg) == "%y = phi [bb1: %m], [bb2: %m] : float64"


def test_rejects_a_use_before_its_definition_in_the_same_block():
    fn = straight_line()
    mul, add, ret = fn.entry.ops
    fn.entry.ops[:] = [add, mul, ret]  # z = y + n now precedes y = x * x
    msg = rejection(fn)
    assert problems(msg) == ["operand 0 is used where its definition does not dominate"]
    assert marked_line(msg) == "%z = add %y, %n : float64"


def test_rejects_an_argument_of_another_function():
    fn = straight_line()
    other = straight_line()
    add = fn.entry.ops[1]
    add.operands = (add.operands[0], other.args[1])  # the other function's `n`
    msg = rejection(fn)
    assert problems(msg) == ["operand 1 is an argument of another function"]
    assert marked_line(msg).startswith("%z = add %y, %n.")  # named apart from this `n`


def test_rejects_a_result_of_another_functions_op():
    fn = straight_line()
    other = straight_line()
    add = fn.entry.ops[1]
    add.operands = (other.entry.ops[0].result, add.operands[1])  # the other function's `y`
    msg = rejection(fn)
    assert problems(msg) == ["operand 0 is not defined in this function"]
    assert marked_line(msg).startswith("%z = add %y.")


def test_rejects_the_same_op_appended_to_two_blocks():
    d = diamond()
    d.else_.insert(0, d.a.op)  # `a` now defined in both arms; its op.block says `else`
    msg = rejection(d.fn)
    # The structural check catches it first: the op sits in `then`, whose back-reference is wrong.
    assert problems(msg) == ["op's block back-reference is wrong"]
    assert marked_lines(msg) == ["%a = add %x, %x : float64"] * 2


def test_rejects_a_value_defined_twice():
    fn = straight_line()
    mul = fn.entry.ops[0]
    fn.entry.insert(1, mul)  # the same `y = x * x` twice in one block
    msg = rejection(fn)
    assert problems(msg) == ["value defined twice"]
    assert marked_lines(msg) == ["%y = mul %x, %x : float64"] * 2


# --- phis ------------------------------------------------------------------------------------

def test_rejects_a_phi_missing_an_incoming_block():
    d = diamond()
    d.phi.incoming_blocks = (d.then,)
    d.phi.operands = (d.a,)
    msg = rejection(d.fn)
    assert problems(msg) == ["phi incoming blocks [bb1] differ from the block's "
                             "predecessors [bb1, bb2]"]
    assert marked_line(msg) == "%y = phi [bb1: %a] : float64"


def test_rejects_a_phi_with_an_extra_incoming_block():
    d = diamond()
    d.phi.add_incoming(d.entry, d.fn.args[1])
    msg = rejection(d.fn)
    [problem] = problems(msg)
    assert problem == ("phi incoming blocks [bb0, bb1, bb2] differ from the block's "
                       "predecessors [bb1, bb2]")
    assert marked_line(msg) == "%y = phi [bb1: %a], [bb2: %m], [bb0: %x] : float64"


def test_rejects_a_phi_listing_an_incoming_block_twice():
    d = diamond()
    d.phi.add_incoming(d.then, d.a)
    msg = rejection(d.fn)
    assert problems(msg) == ["phi lists an incoming block twice"]
    assert marked_line(msg) == "%y = phi [bb1: %a], [bb2: %m], [bb1: %a] : float64"


def test_rejects_a_phi_after_a_non_phi_op():
    d = diamond()
    d.join.insert(0, ops.Constant(1.0, T.float64, hint="k"))
    msg = rejection(d.fn)
    assert problems(msg) == ["phi after a non-phi op"]
    assert marked_line(msg) == "%y = phi [bb1: %a], [bb2: %m] : float64"


def test_rejects_a_phi_incoming_value_of_the_wrong_type():
    loop = counted_loop()
    zero = loop.i.value_from(loop.entry)  # int64
    loop.s.operands = (zero, loop.s.operands[1])
    msg = rejection(loop.fn)
    assert problems(msg) == ["phi incoming value of type int64 differs from the phi's float64"]
    assert marked_line(msg) == "%s = phi [bb0: %zero], [bb2: %s_next] : float64"


def test_rejects_a_phi_with_fewer_values_than_incoming_blocks():
    d = diamond()
    d.phi.operands = (d.a,)  # incoming_blocks still lists then and else
    msg = rejection(d.fn)
    assert "phi" in problems(msg)[0]


def test_rejects_a_phi_with_more_values_than_incoming_blocks():
    d = diamond()
    d.phi.operands = (d.a, d.m, d.a)
    msg = rejection(d.fn)
    assert "phi" in problems(msg)[0]


# --- op schemas ------------------------------------------------------------------------------

def test_rejects_a_branch_on_a_float_condition():
    d = diamond()
    d.entry.terminator.operands = (d.fn.args[1],)  # x: float64
    msg = rejection(d.fn)
    assert problems(msg) == ["operand 'cond' must be bool, is float64"]
    assert marked_line(msg) == "br %x, bb1, bb2"


def test_rejects_an_add_of_a_tuple():
    b = Builder.new_function("f", [TUPLE2, T.float64], ["t", "x"], T.float64)
    t, x = b.function.args
    b.position_at_end(b.new_block())
    bad = b.emit(ops.Add(t, x, T.float64, hint="bad")).result
    b.ret(bad)
    msg = rejection(b.function)
    assert problems(msg) == ["operand 'lhs' must be number or numeric array, "
                             "is tuple(float64, float64)"]
    assert marked_line(msg) == "%bad = add %t, %x : float64"


def test_rejects_a_result_type_violating_the_schema():
    fn = straight_line()
    x, n = fn.args
    fn.entry.insert(0, ops.Add(x, n, TUPLE2, hint="bad"))
    msg = rejection(fn)
    assert problems(msg) == ["result must be number or numeric array, is tuple(float64, float64)"]
    assert marked_line(msg) == "%bad = add %x, %n : tuple(float64, float64)"


def test_rejects_getitem_on_a_scalar():
    fn = straight_line()
    x, n = fn.args
    fn.entry.insert(0, ops.GetItem(x, n, T.float64, hint="bad"))
    msg = rejection(fn)
    assert problems(msg) == ["getitem needs an array or tuple, got float64"]
    assert marked_line(msg) == "%bad = getitem %x, %n : float64"


def test_rejects_setitem_on_a_readonly_array():
    ro = T.ArrayType(T.float64, 1, readonly=True)
    b = Builder.new_function("f", [ro, T.int64, T.float64], ["a", "i", "x"], T.float64)
    a, i, x = b.function.args
    b.position_at_end(b.new_block())
    b.setitem(a, i, x)
    b.ret(x)
    msg = rejection(b.function)
    assert problems(msg) == ["setitem on a read-only array"]
    assert marked_line(msg) == "setitem %a, %i, %x"


def test_rejects_setitem_on_a_non_array():
    fn = straight_line()
    x, n = fn.args
    fn.entry.insert(0, ops.SetItem(x, n, x))
    msg = rejection(fn)
    assert "operand 'target' must be array, is float64" in problems(msg)
    assert marked_line(msg) == "setitem %x, %n, %x"


def test_rejects_tuple_getitem_on_a_non_tuple():
    b = Builder.new_function("f", [TUPLE2, T.float64], ["t", "x"], T.float64)
    t, x = b.function.args
    b.position_at_end(b.new_block())
    first = b.tuple_getitem(t, 0, hint="first")
    first.op.operands = (x,)
    b.ret(first)
    msg = rejection(b.function)
    assert "operand 'tuple' must be tuple, is float64" in problems(msg)
    assert marked_line(msg) == "%first = tuplegetitem [0] %x : float64"


def test_rejects_a_return_of_the_wrong_type():
    fn = straight_line()
    fn.entry.terminator.operands = (fn.args[1],)  # n: int64, the function returns float64
    msg = rejection(fn)
    assert problems(msg) == ["returns int64 from a function declared to return float64"]
    assert marked_line(msg) == "ret %n"


def _drop_rhs(d):
    add = d.a.op
    add.operands = add.operands[:1]
    return "add takes 2 operands, has 1", "%a = add %x : float64"


def _jump_with_operand(d):
    d.then.terminator.operands = (d.fn.args[1],)
    return "jump takes 0 operands, has 1", "jump %x bb3"


def _branch_with_two_conditions(d):
    c = d.fn.args[0]
    d.entry.terminator.operands = (c, c)
    return "br takes 1 operands, has 2", "br %c, %c, bb1, bb2"


def _return_nothing(d):
    d.join.terminator.operands = ()
    return "ret takes 1 operands, has 0", "ret"


@pytest.mark.parametrize("break_it", [_drop_rhs, _jump_with_operand, _branch_with_two_conditions,
                                      _return_nothing])
def test_rejects_an_op_with_the_wrong_number_of_operands(break_it):
    d = diamond()
    problem, line = break_it(d)
    msg = rejection(d.fn)
    assert problems(msg) == [problem]
    assert marked_line(msg) == line


# --- the report ------------------------------------------------------------------------------

def test_lists_every_problem_and_marks_the_first():
    d = diamond()
    d.entry.terminator.operands = (d.fn.args[1],)          # br on a float
    d.join.terminator.operands = (d.fn.args[0],)           # ret of a bool
    msg = rejection(d.fn)
    assert msg.splitlines()[0] == "IR verification failed for function diamond: 2 problem(s)"
    assert problems(msg) == ["operand 'cond' must be bool, is float64",
                             "returns bool from a function declared to return float64"]
    assert marked_line(msg) == "br %x, bb1, bb2"


def test_context_is_the_neighbourhood_of_the_offending_op():
    b = Builder.new_function("long", [T.float64], ["x"], T.float64)
    (v,) = b.function.args
    b.position_at_end(b.new_block())
    for k in range(20):
        v = b.add(v, v, hint=f"v{k}")
    b.ret(v)
    b.function.entry.ops[10].operands = (b.function.args[0],)  # %v10 = add %x : wrong arity
    msg = rejection(b.function)
    context = msg.split("\nat:\n", 1)[1].splitlines()
    assert context[0] == "  ..." and context[-1] == "  ..."
    def line(k):
        return f"  %v{k} = add %v{k - 1}, %v{k - 1} : float64"

    assert context[1:-1] == [line(k) for k in range(5, 10)] \
        + ["> %v10 = add %x : float64    <-- here"] \
        + [line(k) for k in range(11, 16)]
