"""Loop-exit phis (`ir/loop_exits.py`), as IR text in and out, and what they save reverse mode."""

import numba
import numpy as np

import moonlite
from moonlite.ir import verify
from moonlite.ir.loop_exits import add_loop_exit_phis
from moonlite.ir.parser import parse_function
from tests.helpers import central_differences
from tests.ir.irtext import check_lines

# total = sum over rows i of r_i^2 with r_i = 1 - sum_j x[i, j]: `r` is carried through the
# inner loop and read after it
ROW_RESIDUALS = """
func row_residuals(%x: array(float64, 2d, C)) -> float64 {
entry:
  %shape = getattr .shape %x : tuple(int64, int64)
  %rows = tuplegetitem [0] %shape : int64
  %cols = tuplegetitem [1] %shape : int64
  %zero = const 0 : int64
  %one = const 1 : int64
  %t0 = const 0.0 : float64
  %r0 = const 1.0 : float64
  jump outer
outer:
  %i = phi [entry: %zero], [after: %i.next] : int64
  %total = phi [entry: %t0], [after: %total.next] : float64
  %more_rows = lt %i, %rows : bool
  br %more_rows, inner_entry, exit
inner_entry:
  jump inner
inner:
  %j = phi [inner_entry: %zero], [body: %j.next] : int64
  %r = phi [inner_entry: %r0], [body: %r.next] : float64
  %more_cols = lt %j, %cols : bool
  br %more_cols, body, after
body:
  %ij = tuple %i, %j : tuple(int64, int64)
  %xij = getitem %x, %ij : float64
  %r.next = sub %r, %xij : float64
  %j.next = add %j, %one : int64
  jump inner
after:
  %sq = mul %r, %r : float64
  %total.next = add %total, %sq : float64
  %i.next = add %i, %one : int64
  jump outer
exit:
  ret %total
}
"""


def test_a_value_read_after_its_loop_is_read_through_a_phi_in_the_exit_block():
    fn = verify(add_loop_exit_phis(parse_function(ROW_RESIDUALS)))
    check_lines(str(fn), [
        "%[[EXIT:r\\.\\d+]] = phi [bb{{\\d+}}: %r] : float64",
        "NEXT: %sq = mul %[[EXIT]], %[[EXIT]] : float64",
        # the outer loop's values read after it get theirs too
        "%[[T:total\\.\\d+]] = phi [bb{{\\d+}}: %total] : float64",
        "NEXT: ret %[[T]]",
    ])
    # values used inside their own loop are untouched
    assert "%r.next = sub %r, %xij" in str(fn)


def test_it_is_idempotent():
    once = str(add_loop_exit_phis(parse_function(ROW_RESIDUALS)))
    twice = str(add_loop_exit_phis(add_loop_exit_phis(parse_function(ROW_RESIDUALS))))
    assert once.count("phi") == twice.count("phi")


@numba.njit
def row_residuals(x):
    total = 0.0
    for i in range(x.shape[0]):
        r = 1.0
        for j in range(x.shape[1]):
            r -= x[i, j] * (j + 1.0)
        total += r * r
    return total


def test_reverse_mode_keeps_the_exit_value_once_per_row_not_every_iteration():
    x = np.random.default_rng(0).standard_normal((5, 4))
    rule = moonlite.build_rrule(row_residuals, x)
    moonlite.verify(rule.ir)
    inner_pushes = [op for lp in moonlite.ir.natural_loops(rule.ir) if len(lp.body) <= 3
                    for b in lp.body for op in b.ops if type(op).__name__ == "TapePush"]
    assert inner_pushes == []  # the inner loop keeps nothing: r - x*w needs neither operand
    np.testing.assert_allclose(moonlite.grad(row_residuals)(x),
                               central_differences(row_residuals, (x,)), rtol=1e-6, atol=1e-8)
