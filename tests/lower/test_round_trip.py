"""The foundation's contract: capture, verify, lower, and the result equals the njit original's.

Every kernel in the corpus goes through the round trip; arguments the kernel mutates must end up
identical too, and a kernel's bad-input path must raise the same exception with the same message.
"""

import numba
import numpy as np
import pytest

import moonlite
from tests.corpus.kernels import CASES
from tests.helpers import assert_same

IDS = [c.name for c in CASES]


@pytest.fixture(scope="module")
def lowered():
    cache = {}

    def get(case):
        if case.name not in cache:
            fn = moonlite.capture(case.kernel, *case.make_args())
            moonlite.verify(fn)
            cache[case.name] = moonlite.lower(fn)
        return cache[case.name]
    return get


def test_corpus_is_large_enough():
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_round_trip_matches_njit(case, lowered):
    compiled = lowered(case)
    args_ours, args_ref = case.make_args(), case.make_args()
    assert_same(compiled(*args_ours), case.kernel(*args_ref))
    assert_same(args_ours, args_ref, "arguments after the call")


@pytest.mark.parametrize("case", [c for c in CASES if c.make_bad_args], 
                         ids=[c.name for c in CASES if c.make_bad_args])
def test_bad_input_path_raises_the_same(case, lowered):
    compiled = lowered(case)
    with pytest.raises(Exception) as expected:
        case.kernel(*case.make_bad_args())
    with pytest.raises(type(expected.value)) as ours:
        compiled(*case.make_bad_args())
    assert str(ours.value) == str(expected.value)


@pytest.mark.parametrize("case", CASES[:10], ids=IDS[:10])
def test_lowered_is_callable_from_njit(case, lowered):
    compiled = lowered(case)

    @numba.njit
    def caller(args):
        return compiled(*args)

    assert_same(caller(case.make_args()), case.kernel(*case.make_args()))


def test_lowered_keeps_its_ir(lowered):
    compiled = lowered(CASES[0])
    assert isinstance(compiled, moonlite.MoonliteDispatcher)
    assert isinstance(compiled.ir, moonlite.ir.Function)
    assert "func " + CASES[0].kernel.py_func.__name__ in str(compiled.ir)
