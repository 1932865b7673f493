"""Every construct is differentiated correctly in every mode, or refused in every mode (issue #16).

Each case below was a silent wrong derivative (or a crash) found on code moonlite's authors did
not write. A "correct" case runs moonlite's rule checker: forward mode against central finite
differences, reverse mode (vjp, and grad's own compiled path) by the dot-product identity against
them, and second order (hvp) against finite differences of the gradient. A "refused" case must
raise `UnsupportedError` naming the construct in every mode.
"""

from __future__ import annotations

import collections
import math

import numba
import numpy as np
import pytest
from numba.experimental import jitclass

import moonlite
from moonlite.driver import derived_reverse_rule
from moonlite.errors import UnsupportedError
from moonlite.testing import check_rule

RNG = np.random.default_rng(16)


# --- kernels -----------------------------------------------------------------------------------

@numba.njit
def scaled(x, bias=0.0, factor=1.0):
    return x * factor + bias


@numba.njit
def keyword_call(x, a):
    return scaled(x, factor=a) + scaled(a, 0.5) * scaled(x)


Pair = collections.namedtuple("Pair", ["first", "second"])


@numba.njit
def namedtuple_of_derivative(x):
    p = Pair(x, 2.0)
    return p.first * p.second


@numba.njit
def namedtuple_of_constants(x, n):
    p = Pair(float(n), 2.0)  # built from an int: it holds no derivative
    return x * p.first + p.second


@jitclass([("value", numba.float64)])
class Box:
    def __init__(self, value):
        self.value = value

    def scaled(self, factor):
        return self.value * factor


@numba.njit
def jitclass_field(x):
    box = Box(0.0)
    box.value = x  # a field written: a local variable once inlined (ad/instance_fields.py)
    return box.value * 3.0


@numba.njit
def jitclass_field_of_a_chosen_instance(x):
    a = Box(0.0)
    b = Box(1.0)
    box = a if x > 0.0 else b
    box.value = x  # writes a or b: reads of a.value and b.value must see it
    return a.value * 3.0 + b.value


@numba.njit
def jitclass_method(x):
    return Box(2.0).scaled(x)


@numba.njit
def jitclass_built_from_derivative(x):
    return Box(x).value


@numba.njit
def jitclass_carried_around_a_loop(x):
    box = Box(x)
    for _ in range(3):
        box = Box(box.scaled(0.5) + 1.0)  # a new instance each iteration: a phi of instances
    return box.value * x


@numba.njit
def jitclass_in_a_tuple_carried_around_a_loop(x):
    state = (Box(x), 0)
    for i in range(3):
        state = (Box(state[0].scaled(0.5) + 1.0), i)
    return state[0].value


@numba.njit
def jitclass_built_from_numbers_of_two_types(x, c):
    box = Box(x) if c > 0 else Box(1)  # the int converted to the field's float, as numba does
    return box.value * 2.0 * x


def test_a_jitclass_built_from_numbers_of_two_types_in_every_mode():
    """Refused until the fields tuples were converted to the declared types at capture."""
    for c in (1.0, -1.0):
        check_rule(jitclass_built_from_numbers_of_two_types, 0.7, c, second_order=True)


@jitclass([("w", numba.float64[:])])
class Weights:
    def __init__(self, w):
        self.w = w


@numba.njit
def jitclass_built_from_arrays_of_two_layouts(x, c):
    v = Weights(x * 2.0) if c > 0 else Weights(x[::2])  # fields tuples of C and A arrays
    return np.sum(v.w ** 2) * 2.0


def test_a_jitclass_built_from_arrays_of_two_layouts_in_every_mode():
    """The phi's fields tuples have their arrays retyped "A" (ad/instances.py): refused
    before."""
    for c in (1.0, -1.0):
        check_rule(jitclass_built_from_arrays_of_two_layouts, np.array([0.3, -0.5, 0.8, 1.1]),
                   c, second_order=True)


@numba.njit
def jitclass_built_or_given(x, given, c):
    box = Box(x * 2.0) if c > 0 else given  # the given one's fields read where it is chosen
    return box.value * x


def test_a_jitclass_built_or_given_in_every_mode():
    """Refused before: the phi of fields tuples takes the given instance's fields as they are
    (no field of Box is written in the kernel)."""
    for c in (1.0, -1.0):
        check_rule(jitclass_built_or_given, 0.7, Box(3.0), c, second_order=True, fixed=(1,))


@numba.njit
def boxed_value_doubled(box):
    return box.value * 2.0


@numba.njit
def _boxed_value_doubled_jvp(primals, tangents):
    return primals[0].value * 2.0, 0.0


moonlite.custom_jvp(boxed_value_doubled, _boxed_value_doubled_jvp)


@numba.njit
def jitclass_given_to_a_rule(x):
    return boxed_value_doubled(Box(x)) * x  # the rule sees an instance, not its fields


def test_a_jitclass_in_a_tuple_carried_around_a_loop_in_every_mode():
    """The tuple phi is split into a phi per entry (ad/instances.py): it was refused."""
    check_rule(jitclass_in_a_tuple_carried_around_a_loop, 0.7, second_order=True)


@jitclass([("value", numba.float64)])
class SelfCalling:
    def __init__(self, value):
        self.value = value
        self.check()  # __init__ passes self on: numba's constructor is kept, opaque

    def check(self):
        return self.value > 0.0


@numba.njit
def jitclass_whose_init_calls_a_method(x):
    return SelfCalling(x).value


@numba.njit
def sum_last_axis_1d(v):
    return np.sum(v, axis=-1) * np.sum(v * v, axis=0)


@numba.njit
def sum_last_axis_2d(a):
    return np.sum(np.sum(a * a, axis=-1) * np.sum(a, axis=-2)[:3])


@numba.njit
def array_from_floats(a, b, c):
    v = np.array((a, b * c, c))
    m = np.asarray(((a, b), (c, a * b)))
    return np.sum(v * v) + np.sum(m @ v[:2])


@numba.njit
def builtin_sum_of_tuple(a, b):
    return sum((a, b, a * b)) + sum((b, 1.0))


@numba.njit
def fill_with_value(x, v):
    y = np.empty_like(x)
    y.fill(v * v)
    x.fill(v)
    return np.sum(x * y) + np.sum(np.sin(y))


@numba.njit
def trace_offsets(a):
    return np.trace(a, 1) * np.trace(a, offset=-1) + np.trace(a)


@numba.njit
def triangles(a):
    return np.triu(a) * 2.0 + np.tril(a, -1) * a


@numba.njit
def mean_of_tuple(a, b):
    return np.mean(np.array((a, b * b))) + np.sum(np.asarray((a, b)))


@numba.njit
def mod_broadcast(x, y):
    return np.sum((x % y) ** 2 + x * y)


@numba.njit
def power(x, y):
    return x ** y


@numba.njit
def masked_sqrt(d, keep):
    return np.sum(np.where(keep, np.sqrt(d), 0.0) * d)


@numba.njit
def soft_min(x, t):
    big = 1.7976931348623157e308  # the sentinel: entries with it weigh exp(-inf) = 0
    d = np.full(x.shape[0] + 2, big)
    d[:x.shape[0]] = x * x
    w = np.exp(-d / t)
    return np.sum(w * np.minimum(d, 1e3)) / np.sum(w)


@numba.njit
def distance(p, q):
    return math.sqrt((p - q) ** 2) + math.sqrt(p * p + 1.0)


@numba.njit
def safe_distance(p, q):
    d2 = (p - q) ** 2
    return (math.sqrt(d2) if d2 > 0.0 else 0.0) + math.sqrt(p * p + 1.0)


@numba.njit
def reduce_scalar(x):
    return np.sum(x) * np.prod(x) + np.mean(x)


@numba.njit
def zero_d(x):
    return x[()] * np.sum(x) * 2.0


@numba.njit
def tuple_indexed_at_run_time(a, b):
    t = (a, b, a * b)
    s = 0.0
    for i in range(3):
        s += t[i] * t[-1 - i]
    return s


@numba.njit
def tuple_argument(t):
    return t[-1] * 2.0 + t[0] * t[1]


@numba.njit
def writes_in_place(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * x[i] + 1.0
    return np.sum(np.sin(x))


@numba.njit
def fill_diagonal(a, v):
    np.fill_diagonal(a, v)
    return np.sum(a)


@numba.njit
def sorts_in_place(x):
    y = x * 2.0
    y.sort()
    return y[0]


@numba.njit
def out_argument(x):
    y = np.empty_like(x)
    np.sin(x, y)  # a ufunc's output argument
    return np.sum(y)


@numba.njit
def writes_through_views(a, x):
    b = np.transpose(a)
    b[0, 1] = x * 2.0          # writes a[1, 0]
    c = np.swapaxes(a, 0, 1)
    c[2, 0] += x * a[1, 1]     # writes a[0, 2]
    d = np.moveaxis(a, 0, 1)
    d[1, 1] *= x               # writes a[1, 1]
    return np.sum(a * a * a)


@numba.njit
def numpy_keywords(A, v, x):
    """Keywords of numpy functions: the adjoint of np.tril once ignored k=-1 (fuzz, wide
    profile, seed 174: a wrong gradient on the diagonal)."""
    B = np.tril(A, k=-1) + np.triu(A * x, k=1)
    c = np.clip(v, a_min=-0.5, a_max=x)
    return np.sum(np.diag(v, k=1) * B) + np.sum(c * v) + np.sum(np.sum(B, axis=0) * A.sum(axis=-1))


@numba.njit
def masked_product(d, c):
    """Array code computes the masked entries too: sqrt of a negative entry is nan, and the
    adjoint of c once got 0 * nan from the entries where drops (fuzz, wide profile, seeds 78,
    168, 180, 234)."""
    return np.sum(np.where(d > 0.0, np.sqrt(d) * c, 0.0)) + np.sum(np.where(d > 0.0,
                                                                       d * np.log(d), 0.0))


@numba.njit
def sum_with_dtype(a):
    return np.sum(a * a, dtype=np.float64)


# --- cases ---------------------------------------------------------------------------------------

Case = collections.namedtuple("Case", "name fn args fixed second_order")


def _case(name, fn, *args, fixed=(), second_order=True):
    return Case(name, fn, args, fixed, second_order)


SQUARE = RNG.uniform(-1.0, 1.0, (3, 3))
CORRECT = [
    _case("keyword_call", keyword_call, 0.7, 1.3),
    _case("namedtuple_of_constants", namedtuple_of_constants, 0.7, 3, fixed=(1,)),
    # a namedtuple is the tuple of its entries (issue #20; refused before)
    _case("namedtuple_of_derivative", namedtuple_of_derivative, 0.7),
    _case("jitclass_field", jitclass_field, 0.7),
    # a jitclass method is a call of its njit function (issue #20; refused before)
    _case("jitclass_method", jitclass_method, 0.7),
    # fields of an instance built from derivatives are read through (issue #20; refused before)
    _case("jitclass_built_from_derivative", jitclass_built_from_derivative, 0.7),
    _case("jitclass_carried_around_a_loop", jitclass_carried_around_a_loop, 0.7),
    _case("sum_last_axis_1d", sum_last_axis_1d, RNG.uniform(-1, 1, 4)),
    _case("sum_last_axis_2d", sum_last_axis_2d, RNG.uniform(-1, 1, (3, 4))),
    _case("array_from_floats", array_from_floats, 0.7, -1.1, 0.4),
    _case("builtin_sum_of_tuple", builtin_sum_of_tuple, 0.7, -1.1),
    _case("fill_with_value", fill_with_value, RNG.uniform(-1, 1, 4), 0.6),
    _case("trace_offsets", trace_offsets, SQUARE),
    _case("triangles", triangles, RNG.uniform(-1, 1, (3, 4)), second_order=False),
    _case("mean_of_tuple", mean_of_tuple, 0.7, -1.1),
    _case("mod_broadcast", mod_broadcast, RNG.uniform(2.1, 2.9, (3, 4)),
          RNG.uniform(0.7, 0.9, 4)),
    _case("power_at_zero_exponent", power, 0.0, 0.0, fixed=(1,)),
    _case("masked_sqrt", masked_sqrt, np.array([0.0, 1.0, 4.0, 0.0]),
          np.array([False, True, True, False])),
    _case("soft_min_with_sentinel", soft_min, RNG.uniform(0.5, 1.5, 4), 0.8),
    _case("reduce_scalar", reduce_scalar, 1.3),
    _case("zero_d_array", zero_d, np.array(1.5)),
    _case("tuple_indexed_at_run_time", tuple_indexed_at_run_time, 0.7, -1.1),
    _case("tuple_argument", tuple_argument, (0.7, -1.1, 0.4)),
    _case("fortran_order", writes_in_place, np.asfortranarray(RNG.uniform(-1, 1, (2, 3)))[0]),
    _case("strided", writes_in_place, RNG.uniform(-1, 1, 9)[::3]),
    _case("transposed", sum_last_axis_2d, RNG.uniform(-1, 1, (4, 3)).T),
    _case("writes_through_views", writes_through_views, RNG.uniform(-1, 1, (3, 3)), 0.7),
    _case("masked_product", masked_product, np.array([-1.0, 0.5, -0.2, 2.0]),
          RNG.uniform(0.5, 1.5, 4), fixed=(0,)),
    _case("numpy_keywords", numpy_keywords, RNG.uniform(-1, 1, (4, 4)), RNG.uniform(-1, 1, 3), 0.3,
          second_order=False),
]


@pytest.mark.parametrize("case", CORRECT, ids=[c.name for c in CORRECT])
def test_differentiated_correctly_in_every_mode(case):
    check_rule(case.fn, *case.args, fixed=case.fixed, second_order=case.second_order)


def _copies(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def test_masked_sqrt_has_an_exact_zero_gradient_where_masked():
    g = moonlite.grad(masked_sqrt)(np.array([0.0, 1.0, 4.0, 0.0]),
                                   np.array([False, True, True, False]))
    assert np.all(np.isfinite(g)) and g[0] == 0.0 and g[3] == 0.0


def test_power_at_zero_zero_follows_the_documented_convention():
    # d/dx x**0 = 0 everywhere, also at 0; d/dy x**y at x = 0 is taken as 0 (log 0 = -inf)
    assert moonlite.grad(power, (0, 1))(0.0, 0.0) == (0.0, 0.0)
    assert moonlite.jvp(power, (0.0, 0.0), (1.0, 1.0))[1] == 0.0


@pytest.mark.parametrize("fn, x", [
    (lambda x: math.log(x), 0.0), (lambda x: math.hypot(x, 0.0), 0.0),
    (lambda x: math.atan2(x, 0.0), 0.0), (lambda x: np.cbrt(x), 0.0),
    (lambda x: np.arcsin(x), 1.0), (lambda x: math.sqrt(x), 0.0),
    (lambda x: np.arccosh(x), 1.0), (lambda x: x ** 0.5, 0.0)],
    ids=["log", "hypot", "atan2", "cbrt", "arcsin", "sqrt", "arccosh", "pow_half"])
def test_singular_points_give_numpys_answer_not_an_exception(fn, x):
    kernel = numba.njit(fn)
    slope = moonlite.grad(kernel)(x)
    _, tangent = moonlite.jvp(kernel, (x,), (1.0,))
    (hv,) = moonlite.hvp(kernel, (x,), (1.0,))
    assert not np.isfinite(slope) or slope == 0.0  # inf or nan, as numpy would compute it
    assert (np.isnan(tangent) and np.isnan(slope)) or tangent == slope
    assert isinstance(hv, float)


def test_distance_of_a_point_to_itself_is_a_subgradient_not_an_exception():
    # |p - q| has a kink there. The plain reverse rule gives numpy's answer (its adjoint inf
    # times the square's slope 0 is nan); the nan rerun with strong zeros (ad/nan_retry.py)
    # makes that product 0, as forward mode's zero tangent meeting sqrt's infinite slope does:
    # the subgradient 0 for the kink in both modes (docs/limitations.md)
    plain = derived_reverse_rule(distance, (numba.float64, numba.float64))
    assert np.isnan(plain(1.0, 1.0, 1.0)[1][1])
    assert moonlite.grad(distance, (0, 1))(1.0, 1.0) == pytest.approx(
        (1.0 / math.sqrt(2.0), 0.0))
    assert moonlite.jvp(distance, (1.0, 1.0), (1.0, 0.0))[1] == pytest.approx(
        1.0 / math.sqrt(2.0))
    # the documented way around it: the branch never takes sqrt's slope at 0
    assert moonlite.grad(safe_distance, (0, 1))(1.0, 1.0) == pytest.approx(
        (1.0 / math.sqrt(2.0), 0.0))


def test_primal_division_by_zero_still_raises_as_in_the_primal():
    @numba.njit
    def divide(x, y):
        return x / y

    with pytest.raises(ZeroDivisionError):
        divide(1.0, 0.0)
    with pytest.raises(ZeroDivisionError):
        moonlite.grad(divide)(1.0, 0.0)


@numba.njit
def contiguous_copy_of_a_structured_view(p):
    q = np.ascontiguousarray(p[::2])  # numba copies or views by layout: no rule
    return q[0].a * 2.0 + p[1]["b"]


_TABLE = np.array([(0.5, 1.5), (2.0, -1.0)], dtype=[("a", "f8"), ("b", "f8")])


REFUSED = [
    ("jitclass_field_of_a_chosen_instance", jitclass_field_of_a_chosen_instance, (0.7,),
     "writing a field of a Box instance chosen by a branch"),
    ("jitclass_given_to_a_rule", jitclass_given_to_a_rule, (0.7,),
     "Box instance built from values being differentiated and used other than"),
    ("jitclass_whose_init_calls_a_method", jitclass_whose_init_calls_a_method, (0.7,),
     "puts a value being differentiated into a jitclass instance"),
    ("fill_diagonal", fill_diagonal, (np.ones((3, 3)), 0.5), "returns nothing"),
    ("sort", sorts_in_place, (np.array([3.0, 1.0, 2.0]),), "returns nothing"),
    ("out_argument", out_argument, (np.ones(3),), "output argument"),
    ("big_tuple", tuple_argument, (tuple(np.linspace(0.0, 1.0, 65)),), "65 differentiable"),
    ("structured_ascontiguousarray", contiguous_copy_of_a_structured_view, (_TABLE,),
     "structured array or record"),
]


@pytest.mark.parametrize("name, fn, args, match", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_in_every_mode(name, fn, args, match):
    tangents = tuple(np.ones_like(a) if isinstance(a, np.ndarray) else
                     (tuple(1.0 for _ in a) if isinstance(a, tuple) else
                      1.0 if isinstance(a, float) else None) for a in args)  # (an instance)
    modes = {"jvp": lambda: moonlite.jvp(fn, _copies(args), tangents),
             "grad": lambda: moonlite.grad(fn)(*_copies(args)),
             "vjp": lambda: moonlite.vjp(fn, *_copies(args)),
             "hvp": lambda: moonlite.hvp(fn, _copies(args), tangents)}
    for mode, run in modes.items():
        with pytest.raises(UnsupportedError, match=match):
            run()


@numba.njit
def sum_times(x, y):
    return np.sum(x) * y


def test_one_gradient_function_serves_many_argument_types():
    g = moonlite.grad(sum_times)
    cases = [(np.ones(3), 2.0), (np.ones(3, np.float32), 2.0), (np.ones((2, 2)), 2.0),
             (np.ones(3), np.float32(2.0)), (np.ones(6)[::2], 2.0), (np.ones((2, 3)).T, 2.0),
             (np.ones(3), 2), (np.ones((2, 2, 2)), 1.0), (np.asfortranarray(np.ones((2, 3))), 3.0),
             (np.array(1.0), 2.0)]
    for x, y in cases:
        grad_x = g(x, y)
        assert np.shape(grad_x) == x.shape
        np.testing.assert_allclose(grad_x, np.full(x.shape, y), err_msg=f"{x.shape} {y!r}")


def test_a_keyword_no_adjoint_reads_is_refused_in_reverse_mode_and_right_in_forward_mode():
    v = RNG.uniform(-1, 1, 3)
    _, tangent = moonlite.jvp(sum_with_dtype, (v,), (np.ones(3),))
    assert tangent == pytest.approx(2.0 * np.sum(v))
    for run in (lambda: moonlite.grad(sum_with_dtype)(v), lambda: moonlite.vjp(sum_with_dtype, v)):
        with pytest.raises(UnsupportedError, match="keyword argument.*dtype"):
            run()
