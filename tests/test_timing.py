"""`moonlite.compile_timings()` (`timing.py`): where a first call's compile time goes."""

import numba
import numpy as np
import pytest

import moonlite
from moonlite.timing import phase


def test_a_first_call_is_split_into_phases_that_add_up():
    @numba.njit
    def f(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += np.sin(x[i]) * x[i]
        return s

    @numba.njit
    def other(x):
        return np.sin(x[0]) * x[1]

    x = np.linspace(0.0, 1.0, 5)
    # what a process does once (numba loading moonlite's helpers from its disk cache, which
    # runs no compiler pass) would count as unattributed time, depending on that cache's state
    moonlite.grad(other)(x)
    with moonlite.compile_timings() as t:
        moonlite.grad(f)(x)
    for name in ("capture", "AD passes", "verify", "emit numba IR", "numba typing",
                 "numba lowering", "LLVM"):
        assert t.seconds.get(name, 0.0) > 0.0, name
    assert sum(t.seconds.values()) <= t.wall * 1.001
    assert sum(t.seconds.values()) > 0.5 * t.wall  # the phases cover most of a first call
    with moonlite.compile_timings() as again:
        moonlite.grad(f)(x)  # compiled: nothing to time
    assert sum(again.seconds.values()) < 0.01
    assert "LLVM" in repr(t)


def test_phases_outside_a_recorder_record_nothing_and_recorders_do_not_nest():
    with phase("capture"):
        pass
    with moonlite.compile_timings() as t:
        with phase("outer"):
            with phase("inner"):
                pass
        with pytest.raises(RuntimeError, match="already open"):
            with moonlite.compile_timings():
                pass
    assert set(t.seconds) == {"outer", "inner"}
