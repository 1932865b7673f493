"""AD passes tested as IR text in, IR text out: a small function written in moonlite IR's text
form is parsed, transformed, and the printed result is checked line by line (FileCheck style,
`tests/ir/irtext.py`); the derived function verifies, and lowered it computes the derivative
that central finite differences estimate."""

import numpy as np
import pytest

import moonlite
from moonlite.ad.forward import forward_transform
from moonlite.ad.reverse import reverse_transform
from moonlite.ir import natural_loops, verify
from moonlite.ir.cleanup import remove_dead_code
from moonlite.ir.parser import parse_function
from tests.ir.irtext import SUM_OF_SQUARES, check_lines

# s += x[i] * x[i] where x[i] > 0, else s -= 2 x[i]
BRANCH_IN_LOOP = """
func abs_square_sum(%x: array(float64, 1d, C)) -> float64 {
entry:
  %zero = const 0 : int64
  %one = const 1 : int64
  %s0 = const 0.0 : float64
  %two = const 2.0 : float64
  %n = call len(%x) : int64
  jump header
header:
  %i = phi [entry: %zero], [join: %i.next] : int64
  %s = phi [entry: %s0], [join: %s.next] : float64
  %more = lt %i, %n : bool
  br %more, body, exit
body:
  %xi = getitem %x, %i : float64
  %positive = gt %xi, %s0 : bool
  br %positive, square, double
square:
  %sq = mul %xi, %xi : float64
  jump join
double:
  %twice = mul %two, %xi : float64
  %minus = neg %twice : float64
  jump join
join:
  %term = phi [square: %sq], [double: %minus] : float64
  %s.next = add %s, %term : float64
  %i.next = add %i, %one : int64
  jump header
exit:
  ret %s
}
"""

# p = 1; for i: for j: p *= x[i, j]  -- the product is carried through both loops
PRODUCT_2D = """
func product_2d(%x: array(float64, 2d, C)) -> float64 {
entry:
  %shape = getattr .shape %x : tuple(int64, int64)
  %rows = tuplegetitem [0] %shape : int64
  %cols = tuplegetitem [1] %shape : int64
  %zero = const 0 : int64
  %one = const 1 : int64
  %p0 = const 1.0 : float64
  jump outer
outer:
  %i = phi [entry: %zero], [outer_latch: %i.next] : int64
  %p = phi [entry: %p0], [outer_latch: %q] : float64
  %more_rows = lt %i, %rows : bool
  br %more_rows, inner_entry, exit
inner_entry:
  jump inner
inner:
  %j = phi [inner_entry: %zero], [body: %j.next] : int64
  %q = phi [inner_entry: %p], [body: %q.next] : float64
  %more_cols = lt %j, %cols : bool
  br %more_cols, body, outer_latch
body:
  %ij = tuple %i, %j : tuple(int64, int64)
  %xij = getitem %x, %ij : float64
  %q.next = mul %q, %xij : float64
  %j.next = add %j, %one : int64
  jump inner
outer_latch:
  %i.next = add %i, %one : int64
  jump outer
exit:
  ret %p
}
"""


def central_difference_gradient(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    grad = np.empty_like(x)
    for k in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[k] += h
        minus[k] -= h
        grad[k] = (f(plus) - f(minus)) / (2 * h)
    return grad


def reverse_of(text: str):
    """(the primal, its reverse-mode function, printed): both verified."""
    primal = verify(parse_function(text))
    rev = verify(reverse_transform(primal))
    return primal, rev, str(rev)


def assert_gradient_matches_finite_differences(primal, rev, x: np.ndarray) -> None:
    f, pullback = moonlite.lower(primal), moonlite.lower(rev)
    out, (grad,) = pullback(x, 1.0)
    assert out == pytest.approx(f(x), rel=1e-14)
    np.testing.assert_allclose(grad, central_difference_gradient(f, x), rtol=1e-6, atol=1e-8)


def test_reverse_of_a_scalar_loop_recomputes_from_a_trip_counter():
    primal, rev, text = reverse_of(SUM_OF_SQUARES)
    check_lines(text, [
        "func sum_squares_rev(%x: array(float64, 1d, C), %dout: float64) -> "
        "tuple(float64, tuple(array(float64, 1d, C),)) {",
        "%[[GRAD:\\d+]] = call np.zeros_like(%x) : array(float64, 1d, C)",
        # the forward sweep is the primal loop, which records the iteration it is in
        "%i = phi [bb{{\\d+}}: %zero], [bb{{\\d+}}: %i.next] : int64",
        "store $[[COUNTER:counter\\d+]] %i",
        "%sq = mul %xi, %xi : float64",
        # the reverse sweep reads the counter: done at 0, else one iteration back ...
        "%[[K:\\d+]] = load $[[COUNTER]] : int64",
        "eq %[[K]], %{{[\\w.]+}} : bool",
        # ... where x[i] is read again (not kept on a tape) and d/dx[i] += 2 x[i] dout
        "%[[AT:\\d+]] = load $[[COUNTER]] : int64",
        "%xi.{{\\d+}} = getitem %x, %[[AT]] : float64",
        "setitem %[[GRAD]], %[[AT]], %{{\\d+}}",
        "ret %",
        "sub %[[K]], %{{\\d+}} : int64",
        "NEXT: store $[[COUNTER]] %{{\\d+}}",
    ])
    assert "tape." not in text
    assert len(natural_loops(rev)) == 2  # the primal's loop and the reverse sweep's
    x = np.random.default_rng(0).uniform(-1.0, 1.0, 6)
    assert_gradient_matches_finite_differences(primal, rev, x)


def test_reverse_of_a_branch_in_a_loop_tests_the_condition_again():
    primal, rev, text = reverse_of(BRANCH_IN_LOOP)
    check_lines(text, [
        # forward: the loop as it was, nothing recorded about the arm taken ...
        "%positive = gt %xi, %s0 : bool",
        "NEXT: br %positive, bb{{\\d+}}, bb{{\\d+}}",
        "%term = phi [bb{{\\d+}}: %sq], [bb{{\\d+}}: %minus] : float64",
        "NOT: came_from",
        # ... the reverse sweep reads x[i] again, compares it again, and goes back through the
        # arm that comparison chose (branches.py)
        "%[[TEST:positive\\.\\d+]] = gt %{{xi\\.\\d+}}, %{{s0[.\\d]*}} : bool",
        "NEXT: br %[[TEST]], bb{{\\d+}}, bb{{\\d+}}",
    ])
    assert "tape." not in text
    x = np.array([0.7, -1.3, 0.2, -0.4, 1.1])  # away from the kink at 0
    assert_gradient_matches_finite_differences(primal, rev, x)


def test_reverse_of_a_product_through_a_double_loop_keeps_only_the_partial_products():
    primal, rev, text = reverse_of(PRODUCT_2D)
    check_lines(text, [
        "%[[KEPT:\\d+]] = tape.new <float64> : tape<float64>",
        # the inner loop's counter is not taped: every run of it ends at `cols` (below)
        "NOT: tape.new <int64>",
        "%i = phi [bb{{\\d+}}: %zero], [bb{{\\d+}}: %i.next] : int64",
        # each inner iteration keeps the running product the multiplication reads
        "%q = phi [bb{{\\d+}}: %p], [bb{{\\d+}}: %q.next] : float64",
        "NEXT: tape.push %[[KEPT]], %q",
        "%q.next = mul %q, %xij : float64",
        # the reverse sweep reads the kept product where it needs it, and pops it once
        "tape.pop %[[KEPT]] : float64",
        "tape.top %[[KEPT]] : float64",
        # leaving the inner loop along its entry edge, the counter goes back to where the
        # previous run ended: max(0, cols)
        "%[[RAN:\\d+]] = lt %{{zero[.\\d]*}}, %[[COLS:cols[.\\d]*]] : bool",
        "NEXT: %[[END:\\d+]] = select %[[RAN]], %[[COLS]], %{{zero[.\\d]*}} : int64",
        "NEXT: store $[[COUNTER:counter\\d+]] %[[END]]",
    ])
    assert "tape.new <int64>" not in text
    assert len(natural_loops(rev)) == 4
    x = np.random.default_rng(1).uniform(0.5, 1.5, (3, 4))
    assert_gradient_matches_finite_differences(primal, rev, x)


def test_forward_mode_of_a_loop_carries_the_tangent_in_a_phi():
    primal = verify(parse_function(SUM_OF_SQUARES))
    fwd = verify(forward_transform(primal))
    check_lines(str(fwd), [
        "func sum_squares_fwd(%x: array(float64, 1d, C), %dx: array(float64, 1d, C)) -> "
        "tuple(float64, float64) {",
        "%[[ZERO:\\d+]] = const 0.0 : float64",
        "%s = phi [bb0: %s0], [bb{{\\d+}}: %s.next] : float64",
        "NEXT: %ds = phi [bb0: %[[ZERO]]], [bb{{\\d+}}: %[[DS:\\d+]]] : float64",
        "%[[T:\\d+]] = tuple %s, %ds : tuple(float64, float64)",
        "NEXT: ret %[[T]]",
        "%xi = getitem %x, %i : float64",
        "%[[DXI:\\d+]] = getitem %dx, %i : float64",
        "%[[DSQ:\\d+]] = add %{{\\d+}}, %{{\\d+}} : float64",
        "%[[DS]] = add %ds, %[[DSQ]] : float64",
    ])
    f, jvp = moonlite.lower(primal), moonlite.lower(fwd)
    rng = np.random.default_rng(2)
    x, dx = rng.uniform(-1.0, 1.0, 5), rng.uniform(-1.0, 1.0, 5)
    out, tangent = jvp(x, dx)
    h = 1e-6
    assert out == pytest.approx(f(x), rel=1e-14)
    assert tangent == pytest.approx((f(x + h * dx) - f(x - h * dx)) / (2 * h), rel=1e-6)
    assert tangent == pytest.approx(2 * np.dot(x, dx), rel=1e-12)


def test_dead_code_removal():
    fn = parse_function("""
    func f(%x: float64, %y: float64) -> float64 {
    bb0:
      %unused = mul %x, %y : float64
      %feeds_unused = add %unused, %x : float64
      %quotient = truediv %x, %y : float64
      %c = const 2.0 : float64
      %r = mul %x, %c : float64
      ret %r
    }""")
    # a dead chain goes, a dead division stays: it may raise ZeroDivisionError in the primal
    assert str(verify(remove_dead_code(fn))) == """\
func f(%x: float64, %y: float64) -> float64 {
bb0:
  %quotient = truediv %x, %y : float64
  %c = const 2.0 : float64
  %r = mul %x, %c : float64
  ret %r
}"""


def test_check_lines_reports_what_it_could_not_find():
    text = "bb0:\n  %a = add %x, %y : float64\n  %b = mul %a, %a : float64\n  ret %b"
    found = check_lines(text, ["%[[A:\\w+]] = add", "NOT: sub", "mul %[[A]], %[[A]]",
                               "NEXT: ret %b"])
    assert found == {"A": "a"}
    with pytest.raises(AssertionError, match="no line after line 3 matches 'add'"):
        check_lines(text, ["mul", "add"])
    with pytest.raises(AssertionError, match="line 2 matches 'NOT: add'"):
        check_lines(text, ["bb0:", "NOT: add", "ret"])
    with pytest.raises(AssertionError, match="no line after line 2 matches 'NEXT: ret'"):
        check_lines(text, ["add", "NEXT: ret"])
    with pytest.raises(AssertionError, match="no line in the output matches 'sub'"):
        check_lines(text, ["sub"])
