"""CFG utilities: predecessors, reverse post-order, dominators, natural loops.

The CFGs are bare shapes built with `make_cfg` (each block: ret, jump, or `br %c`)."""

import pytest

from moonlite.ir import Dominators, natural_loops, predecessors, reverse_post_order, verify

from .irbuild import make_cfg

DIAMOND = {"entry": ["then", "else"], "then": ["join"], "else": ["join"], "join": []}

# for i: for j: ...; the inner loop's exit is the outer latch
NESTED = {
    "entry": ["oh"],
    "oh": ["ih", "exit"],     # outer header
    "ih": ["ib", "ol"],       # inner header
    "ib": ["ih"],             # inner body = inner latch
    "ol": ["oh"],             # outer latch
    "exit": [],
}


def names(blocks) -> list:
    return [b.hint for b in blocks]


def name_set(blocks) -> set:
    return {b.hint for b in blocks}


def test_shapes_are_valid_ir():
    for spec in (DIAMOND, NESTED):
        fn, _ = make_cfg(spec)
        assert verify(fn) is fn


# --- predecessors ------------------------------------------------------------------------------

def test_predecessors_of_a_diamond():
    fn, bl = make_cfg(DIAMOND)
    preds = predecessors(fn)
    assert {b.hint: names(p) for b, p in preds.items()} == {
        "entry": [], "then": ["entry"], "else": ["entry"], "join": ["then", "else"]}


def test_predecessors_are_listed_once_in_block_order():
    fn, bl = make_cfg({"entry": ["h"], "latch": ["h"], "h": ["latch", "x"], "x": ["y", "y"],
                       "y": []})
    preds = predecessors(fn)
    assert names(preds[bl["h"]]) == ["entry", "latch"]
    assert names(preds[bl["y"]]) == ["x"]  # br %c, y, y: one edge in the CFG


def test_predecessors_include_unreachable_blocks():
    fn, bl = make_cfg({"entry": ["join"], "dead": ["join"], "join": []})
    assert names(predecessors(fn)[bl["join"]]) == ["entry", "dead"]
    assert predecessors(fn)[bl["dead"]] == []


# --- reverse post-order ------------------------------------------------------------------------

def test_reverse_post_order_of_a_diamond():
    fn, bl = make_cfg(DIAMOND)
    order = names(reverse_post_order(fn))
    assert order[0] == "entry" and order[-1] == "join"
    assert sorted(order[1:3]) == ["else", "then"]


def test_reverse_post_order_skips_unreachable_blocks():
    fn, bl = make_cfg({"entry": ["b"], "dead": ["b", "dead2"], "dead2": ["dead"], "b": []})
    assert names(reverse_post_order(fn)) == ["entry", "b"]


@pytest.mark.parametrize("spec", [DIAMOND, NESTED], ids=["diamond", "nested"])
def test_reverse_post_order_visits_a_block_after_a_predecessor(spec):
    fn, bl = make_cfg(spec)
    order = reverse_post_order(fn)
    position = {b: k for k, b in enumerate(order)}
    preds = predecessors(fn)
    dom = Dominators(fn)
    assert order[0] is fn.entry
    assert set(order) == set(fn.blocks)
    for block in order[1:]:
        assert any(position[p] < position[block] for p in preds[block]), block
    # Every edge that goes backwards in the order is a back edge to a loop header.
    for block in order:
        for succ in block.successors():
            if position[succ] <= position[block]:
                assert dom.dominates(succ, block), (block, succ)


def test_reverse_post_order_of_nested_loops():
    fn, bl = make_cfg(NESTED)
    order = names(reverse_post_order(fn))
    assert order.index("entry") < order.index("oh") < order.index("ih") < order.index("ib")
    assert order.index("ih") < order.index("ol")
    assert order.index("oh") < order.index("exit")


# --- dominators --------------------------------------------------------------------------------

def test_dominators_of_a_diamond():
    fn, bl = make_cfg(DIAMOND)
    dom = Dominators(fn)
    entry, then, else_, join = (bl[n] for n in ("entry", "then", "else", "join"))
    for b in fn.blocks:
        assert dom.dominates(entry, b)
        assert dom.dominates(b, b)
    assert not dom.dominates(then, join)
    assert not dom.dominates(else_, join)
    assert not dom.dominates(then, else_)
    assert not dom.dominates(join, then)
    assert not dom.dominates(join, entry)


def test_dominators_of_nested_loops():
    fn, bl = make_cfg(NESTED)
    dom = Dominators(fn)
    dominated = {a: {b for b in bl if dom.dominates(bl[a], bl[b])} for a in bl}
    assert dominated == {
        "entry": {"entry", "oh", "ih", "ib", "ol", "exit"},
        "oh": {"oh", "ih", "ib", "ol", "exit"},
        "ih": {"ih", "ib", "ol"},
        "ib": {"ib"},   # the inner latch does not dominate the inner loop's exit
        "ol": {"ol"},
        "exit": {"exit"},
    }


def test_unreachable_blocks_are_dominated_by_everything():
    fn, bl = make_cfg({"entry": ["a"], "a": [], "dead": ["a"]})
    dom = Dominators(fn)
    assert dom.dominates(bl["a"], bl["dead"])
    assert not dom.dominates(bl["dead"], bl["a"])


# --- natural loops -----------------------------------------------------------------------------

def test_a_single_loop():
    fn, bl = make_cfg({"entry": ["h"], "h": ["body", "exit"], "body": ["h"], "exit": []})
    [loop] = natural_loops(fn)
    assert loop.header is bl["h"]
    assert name_set(loop.body) == {"h", "body"}
    assert names(loop.latches) == ["body"]
    assert names(loop.exits()) == ["exit"]


def test_no_loops_in_a_diamond():
    fn, _ = make_cfg(DIAMOND)
    assert natural_loops(fn) == []


def test_two_nested_loops_outermost_first():
    fn, bl = make_cfg(NESTED)
    outer, inner = natural_loops(fn)
    assert outer.header is bl["oh"] and inner.header is bl["ih"]
    assert name_set(outer.body) == {"oh", "ih", "ib", "ol"}
    assert name_set(inner.body) == {"ih", "ib"}
    assert inner.body < outer.body
    assert names(outer.latches) == ["ol"] and names(inner.latches) == ["ib"]
    assert name_set(outer.exits()) == {"exit"}
    assert name_set(inner.exits()) == {"ol"}


def test_three_nested_loops_sorted_outermost_first():
    fn, bl = make_cfg({
        "entry": ["h1"],
        "h1": ["h2", "exit"],
        "h2": ["h3", "l1"],
        "h3": ["b3", "l2"],
        "b3": ["h3"],
        "l2": ["h2"],
        "l1": ["h1"],
        "exit": [],
    })
    loops = natural_loops(fn)
    assert [lp.header.hint for lp in loops] == ["h1", "h2", "h3"]
    assert loops[2].body < loops[1].body < loops[0].body


def test_a_loop_with_two_latches_is_one_loop():
    # while c: if c: continue  (the `continue` block jumps straight back to the header)
    fn, bl = make_cfg({
        "entry": ["h"],
        "h": ["b1", "exit"],
        "b1": ["cont", "b2"],
        "cont": ["h"],
        "b2": ["h"],
        "exit": [],
    })
    [loop] = natural_loops(fn)
    assert loop.header is bl["h"]
    assert names(loop.latches) == ["cont", "b2"]
    assert name_set(loop.body) == {"h", "b1", "cont", "b2"}
    assert name_set(loop.exits()) == {"exit"}


def test_a_loop_with_a_break():
    fn, bl = make_cfg({
        "entry": ["h"],
        "h": ["body", "exit"],
        "body": ["brk", "latch"],
        "brk": ["exit"],          # break
        "latch": ["h"],
        "exit": [],
    })
    [loop] = natural_loops(fn)
    assert name_set(loop.body) == {"h", "body", "latch"}  # the break block never loops back
    assert names(loop.latches) == ["latch"]
    assert name_set(loop.exits()) == {"exit", "brk"}


def test_a_loop_with_a_break_straight_to_the_exit():
    fn, bl = make_cfg({
        "entry": ["h"],
        "h": ["body", "exit"],
        "body": ["exit", "latch"],
        "latch": ["h"],
        "exit": [],
    })
    [loop] = natural_loops(fn)
    assert name_set(loop.body) == {"h", "body", "latch"}
    assert names(loop.exits()) == ["exit"]  # each exit block once


def test_unreachable_loops_are_ignored():
    fn, bl = make_cfg({
        "entry": ["h"],
        "h": ["body", "exit"],
        "body": ["h"],
        "exit": [],
        "dead": ["dead2"],      # an unreachable loop
        "dead2": ["dead"],
        "dead3": ["h"],         # an unreachable edge into the live loop's header
    })
    [loop] = natural_loops(fn)
    assert loop.header is bl["h"]
    assert name_set(loop.body) == {"h", "body"}
    assert names(loop.latches) == ["body"]


def test_unreachable_predecessors_of_a_loop_body_are_ignored():
    fn, bl = make_cfg({
        "entry": ["h"],
        "h": ["body", "exit"],
        "body": ["h"],
        "exit": [],
        "dead": ["body"],       # unreachable, but a predecessor of the latch
    })
    [loop] = natural_loops(fn)
    assert name_set(loop.body) == {"h", "body"}
