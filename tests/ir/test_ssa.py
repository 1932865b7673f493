"""Locals back into SSA values (`ir/ssa.py`): loads replaced by the values stored, phis where
paths with different stores meet, none where they agree."""

from moonlite.ir import ops, verify
from moonlite.ir.parser import parse_function
from moonlite.ir.ssa import promote_locals
from moonlite.lower.dispatcher import lower

# s = x; for i in range(n): s = s * 0.5 + i  (a store in the loop, a load after it); t holds
# a value no path changes: it needs no phi
HALVING = """
func halving(%x: float64, %n: int64) -> float64 {
entry:
  %zero = const 0 : int64
  %one = const 1 : int64
  %half = const 0.5 : float64
  store $s %x
  store $t %half
  jump head
head:
  %i = phi [entry: %zero], [body: %i.next] : int64
  %more = lt %i, %n : bool
  br %more, body, exit
body:
  %s.old = load $s : float64
  %t.now = load $t : float64
  %scaled = mul %s.old, %t.now : float64
  %fi = cast %i : float64
  %s.new = add %scaled, %fi : float64
  store $s %s.new
  %i.next = add %i, %one : int64
  jump head
exit:
  %s.end = load $s : float64
  ret %s.end
}
"""


def _promoted(text: str):
    fn = parse_function(text)
    variables = {op.var for op in fn.ops() if isinstance(op, (ops.LoadLocal, ops.StoreLocal))}
    return promote_locals(fn, variables)


def test_a_local_stored_in_a_loop_becomes_a_phi_at_its_header():
    fn = _promoted(HALVING)
    verify(fn)
    assert not any(isinstance(op, (ops.LoadLocal, ops.StoreLocal)) for op in fn.ops())
    head = fn.blocks[1]  # blocks keep the order of the text
    phis = [op for op in head.ops if isinstance(op, ops.Phi)]
    assert len(phis) == 2  # i and s; t is the same value on every path: no phi
    compiled, original = lower(fn), lower(parse_function(HALVING))
    for x, n in [(3.0, 0), (3.0, 1), (-1.5, 7)]:
        assert compiled(x, n) == original(x, n)


# a store on one branch only: the load after the join reads a phi of the stored value and the
# value from before the branch; a load right after a store in one block reads what was stored
BRANCH = """
func clipped(%x: float64) -> float64 {
entry:
  %zero = const 0.0 : float64
  store $y %x
  %neg = lt %x, %zero : bool
  br %neg, flip, join
flip:
  %minus = neg %x : float64
  store $y %minus
  %again = load $y : float64
  %twice = add %again, %again : float64
  store $y %twice
  jump join
join:
  %y = load $y : float64
  ret %y
}
"""


def test_a_store_on_one_branch_meets_the_value_from_before_it_in_a_phi():
    fn = _promoted(BRANCH)
    verify(fn)
    join = fn.blocks[2]
    [phi] = [op for op in join.ops if isinstance(op, ops.Phi)]
    assert {v.hint for v in phi.operands} == {"x", "twice"}
    compiled = lower(fn)
    assert compiled(2.0) == 2.0 and compiled(-2.0) == 4.0
