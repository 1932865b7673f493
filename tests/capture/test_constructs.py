"""Issue #20's constructs in every mode: forward, reverse and forward over reverse, each checked
against finite differences by moonlite's rule checker (the dot-product identity included), on
the kernels of `tests/corpus/constructs.py`; and the uses of them moonlite refuses, refused
with an error naming the construct."""

import numba
import numpy as np
import pytest
from numba import literal_unroll

import moonlite
from moonlite.errors import UnsupportedError
from moonlite.testing import check_rule
from tests.corpus.constructs import CASES, RECORD_CASES, Neuron, Oscillator
from tests.helpers import check_corpus_case


OTHER_CASES = [c for c in CASES if c not in RECORD_CASES]  # records: test_record_fields.py


@pytest.mark.parametrize("index, case", enumerate(OTHER_CASES), ids=[c.name for c in OTHER_CASES])
def test_construct_in_every_mode(index, case):
    check_corpus_case(case, index)


def test_the_primal_ir_verifies():
    for case in CASES[::3]:
        moonlite.verify(moonlite.capture(case.kernel, *case.make_args()))


def test_unpacking_checks_the_length_as_numba_does():
    @numba.njit
    def pair(x):
        a, b = x
        return a * b

    for n, message in ((3, "too many values"), (1, "not enough values")):
        with pytest.raises(ValueError):
            pair(np.ones(n))  # numba raises too
        with pytest.raises(ValueError, match=message):
            moonlite.grad(pair)(np.ones(n))
        with pytest.raises(ValueError, match=message):
            moonlite.jvp(pair, (np.ones(n),), (np.ones(n),))


def test_a_list_literal_indexed_at_run_time():
    @numba.njit
    def pick(x, i):
        entries = [x[0], x[1] * x[2]]
        return entries[i] * x[3]

    x = np.array([0.3, 1.2, -0.7, 0.5])
    for i in (0, 1, -1):
        check_rule(pick, x, i, second_order=True)
    with pytest.raises(IndexError):
        moonlite.grad(pick)(x, 2)


@numba.njit
def appends_to_a_literal(x):
    values = [x[0]]
    values.append(x[1])
    return values[0] + values[1]


@numba.njit
def inserts_into_a_literal(x):
    values = [x[0]]
    values.insert(0, x[1])
    return values[0] + 2.0 * values[1]


def test_a_list_literal_appended_to_or_inserted_into():  # an array (capture/lists.py)
    check_rule(appends_to_a_literal, np.array([0.3, 1.2]), second_order=True, vjp=False)
    check_rule(inserts_into_a_literal, np.array([0.3, 1.2]), second_order=True)
    np.testing.assert_allclose(moonlite.grad(inserts_into_a_literal)(np.array([0.3, 1.2])),
                               [2.0, 1.0])


@numba.njit
def indexes_a_literal_out_of_range(x):
    values = [x[0], x[1]]
    return values[2 - 5]


@numba.njit
def spreads_into_range(x, bounds):
    s = 0.0
    for i in range(*bounds):
        s += x[i]
    return s


@numba.njit
def writes_into_a_jitclass_field(x, cell):
    for i in range(x.shape[0]):
        cell.weights[i] = x[i]  # each read of a field gets a fresh tangent: refused
    return np.sum(cell.weights ** 2)


@numba.njit
def writes_a_constant_into_a_jitclass_field(x, cell):
    cell.weights[0] = 1.0  # no derivative written: fine
    return np.sum(cell.weights * x)


@numba.njit
def _weighted(w, x):
    return np.sum(w * x)


@numba.njit
def _store(w, x):
    w[:] = x
    return 0.0


@numba.njit
def passes_a_field_to_a_reading_helper(x, cell):
    return _weighted(cell.weights, x) ** 2


@numba.njit
def passes_a_field_to_a_writing_helper(x, cell):
    _store(cell.weights, x)
    return np.sum(cell.weights ** 2)


def test_a_jitclass_field_passed_to_a_helper_that_only_reads_it_differentiates():
    # forward mode keeps the call and asks the helper's IR whether it writes the field
    check_rule(passes_a_field_to_a_reading_helper, _X, Neuron(1.0, np.array([0.5, -1.0, 2.0]), 1),
               second_order=True, vjp=False)


def test_a_constant_written_into_a_jitclass_field_differentiates():
    cell = Neuron(1.0, np.zeros(3), 1)
    check_rule(writes_a_constant_into_a_jitclass_field, _X, cell, second_order=True)


@numba.njit
def steps_by_keyword(x0, k):
    osc = Oscillator(x0, 0.1)
    for _ in range(4):
        osc.step(0.1, k=k, c=0.2)  # an @overload_method called with keywords
    return osc.energy(k=k) + osc.x


def test_overload_methods_of_a_structref_called_with_keywords():
    check_rule(steps_by_keyword, 0.5, 1.2, second_order=True, vjp=False)


@numba.njit
def unrolls_two_arrays_of_one_type(x):
    s = 0.0
    terms = (x, x * 2.0, 1.0)  # numba unrolls a tuple held in a variable only
    for t in literal_unroll(terms):
        s += np.sum(t)
    return s


@numba.njit
def unrolls_layers_and_a_scale(W1, b1, W2, b2, x, scale):
    """Two (weights, bias) pairs of one type beside a float: numba's typed_getitem of a pair
    picks one of two entries of its type at the loop's index."""
    h = x
    for item in literal_unroll(((W1, b1), scale, (W2, b2))):
        if isinstance(item, float):
            h = h * item
        else:
            W, b = item
            h = np.tanh(W @ h + b)
    return np.sum(h ** 2)


def test_literal_unroll_over_several_entries_of_one_type():
    """Refused before ("literal_unroll over a tuple holding several ... entries")."""
    check_rule(unrolls_two_arrays_of_one_type, _X, second_order=True)
    rng = np.random.default_rng(5)
    check_rule(unrolls_layers_and_a_scale, rng.standard_normal((3, 3)), rng.standard_normal(3),
               rng.standard_normal((2, 3)), rng.standard_normal(2), _X, 0.7, second_order=True,
               vjp=False)


@numba.njit
def carries_a_structref_in_a_tuple(x):
    pair = (Oscillator(x[0], x[1]), 1.0)
    for _ in range(3):
        pair = (pair[0], pair[1] * 2.0)
    return pair[0].x * pair[1]


_X = np.array([0.3, 1.2, -0.7])


def test_a_structref_in_a_tuple_carried_around_a_loop_in_every_mode():
    check_rule(carries_a_structref_in_a_tuple, _X, second_order=True)  # it was refused

REFUSED = [
    ("out_of_range", indexes_a_literal_out_of_range, (_X,), "indexing a list literal of 2"),
    ("jitclass_field_write", writes_into_a_jitclass_field, (_X, Neuron(1.0, np.zeros(3), 1)),
     "writes a value being differentiated into an array held by a jitclass"),
    ("jitclass_field_helper_write", passes_a_field_to_a_writing_helper,
     (_X, Neuron(1.0, np.zeros(3), 1)), "into an array held by a jitclass"),
    ("range_spread", spreads_into_range, (_X, (0, 2)), "spreading a tuple with \\* into range"),
]


def _zero_tangents(args) -> tuple:
    """Structured arrays take a tangent (zeros here), other arguments here none."""
    return tuple(np.zeros_like(a) if isinstance(a, np.ndarray) and a.dtype.names else None
                 for a in args)


@pytest.mark.parametrize("name, kernel, args, construct", REFUSED, ids=[r[0] for r in REFUSED])
def test_uses_moonlite_does_not_follow_are_refused_in_every_mode(name, kernel, args, construct):
    for run in (lambda: moonlite.grad(kernel)(*args),
                lambda: moonlite.jvp(kernel, args, (np.ones(3),) + _zero_tangents(args[1:])),
                lambda: moonlite.hessian(kernel)(*args)):
        with pytest.raises(UnsupportedError, match=construct):
            run()
