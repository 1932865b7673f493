"""Store-to-load forwarding of locals within blocks (`ir/locals.py`): loads after a store of the
same block read the stored value, overwritten and unread stores go, and nothing moves between
blocks."""

from moonlite.ir import ops, verify
from moonlite.ir.locals import forward_locals
from moonlite.ir.parser import parse_function
from moonlite.lower.dispatcher import lower

# the reverse pass's pattern: an adjoint read, added to and stored, then read back at once and
# reset; `$acc` crosses the loop's back edge and is read after it, so its loads there stay
ACCUMULATE = """
func accumulate(%x: float64, %n: int64) -> float64 {
entry:
  %zero = const 0 : int64
  %one = const 1 : int64
  %fzero = const 0.0 : float64
  store $acc %fzero
  store $adj %fzero
  store $unread %x
  jump head
head:
  %i = phi [entry: %zero], [body: %i.next] : int64
  %more = lt %i, %n : bool
  br %more, body, exit
body:
  %a0 = load $acc : float64
  %a1 = add %a0, %x : float64
  store $adj %a1
  store $adj %x
  %a2 = load $adj : float64
  %a3 = mul %a2, %a1 : float64
  store $acc %a3
  %a4 = load $acc : float64
  %a5 = add %a4, %a2 : float64
  store $acc %a5
  store $adj %fzero
  %i.next = add %i, %one : int64
  jump head
exit:
  %end = load $acc : float64
  %spent = load $adj : float64
  %out = add %end, %spent : float64
  ret %out
}
"""


def _count(fn, cls, block=None) -> int:
    where = fn.ops() if block is None else block.ops
    return sum(isinstance(op, cls) for op in where)


def test_loads_after_a_store_of_the_same_block_read_the_stored_value():
    fn = forward_locals(parse_function(ACCUMULATE))
    verify(fn)
    body = fn.blocks[2]
    # the first load of $acc in the body reads the value from the loop's last trip: kept
    assert [op.var.name for op in body.ops if isinstance(op, ops.LoadLocal)] == ["acc"]
    # `store $adj %a1` is overwritten unread; `store $acc %a3` is read only by a forwarded load
    stored = [(op.var.name, op.value) for op in body.ops if isinstance(op, ops.StoreLocal)]
    assert [name for name, _ in stored] == ["acc", "adj"]


def test_stores_no_load_reads_are_dropped_and_the_function_computes_the_same():
    original = parse_function(ACCUMULATE)
    fn = forward_locals(parse_function(ACCUMULATE))
    assert not any(isinstance(op, ops.StoreLocal) and op.var.name == "unread" for op in fn.ops())
    assert _count(fn, ops.LoadLocal, fn.blocks[3]) == 2  # loads after the loop: across blocks
    compiled, reference = lower(fn), lower(original)
    for x, n in [(0.5, 0), (0.5, 1), (-1.25, 6), (2.0, 3)]:
        assert compiled(x, n) == reference(x, n)


# a local of layout "A" holding a C-contiguous array: the load's type differs from the stored
# value's, so it is not forwarded (its users expect the local's type)
LAYOUTS = """
func first(%a: array(float64, 1d, C)) -> float64 {
entry:
  store $view %a
  %v = load $view : array(float64, 1d, A)
  %zero = const 0 : int64
  %x = getitem %v, %zero : float64
  ret %x
}
"""


def test_a_load_of_another_type_than_the_stored_value_is_kept():
    fn = parse_function(LAYOUTS)
    local = next(op.var for op in fn.ops() if isinstance(op, ops.StoreLocal))
    local.type = next(op.result.type for op in fn.ops() if isinstance(op, ops.LoadLocal))
    forward_locals(fn)
    verify(fn)
    assert _count(fn, ops.LoadLocal) == 1 and _count(fn, ops.StoreLocal) == 1
