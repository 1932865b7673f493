"""Arguments sharing memory through a jitclass instance's array field (`ad/guards.py`): a
field may be the same array as another argument the kernel writes, or the kernel may write
into a field that is another argument; a derivative follows each separately and would be
wrong (grad gave [0, 1.6, -1.2] where finite differences give [0, 14, -2.4]), so every API
refuses the call, naming the field."""

import numba
import numpy as np
import pytest
from numba.experimental import jitclass

import moonlite
from moonlite.errors import ArgumentError


@jitclass([("w", numba.float64[:])])
class Linear:
    def __init__(self, w):
        self.w = w


@numba.njit
def writes_the_argument(m, x):
    x[0] = x[1] * 3.0
    return np.sum(m.w * x)


@numba.njit
def writes_the_field(m, x):
    m.w[0] = 5.0
    return np.sum(m.w * x)


@numba.njit
def writes_the_argument_beside_a_tuple(t, x):
    m, s = t
    x[0] = x[1] * 3.0
    return np.sum(m.w * x) * s


CALLS = {
    "grad": lambda f, a: moonlite.grad(f, argnums=1)(*a),
    "jvp": lambda f, a: moonlite.jvp(f, a, (None if not isinstance(a[0], tuple) else
                                            (None, 0.0), np.ones(3))),
    "vjp": lambda f, a: moonlite.vjp(f, *a)[1](1.0),
    "hvp": lambda f, a: moonlite.hvp(f, a, (None if not isinstance(a[0], tuple) else
                                            (None, 0.0), np.ones(3))),
}


@pytest.mark.parametrize("api", sorted(CALLS))
@pytest.mark.parametrize("kernel, field", [(writes_the_argument, "m.w"),
                                           (writes_the_field, "m.w")])
def test_an_instance_field_sharing_a_written_argument_is_refused(api, kernel, field):
    x = np.array([0.3, 0.7, -1.2])
    with pytest.raises(ArgumentError, match=f"{field}.* share memory|share memory.*{field}"):
        CALLS[api](kernel, (Linear(x), x))


@pytest.mark.parametrize("api", ["grad", "jvp"])
def test_an_instance_in_a_tuple_sharing_a_written_argument_is_refused(api):
    x = np.array([0.3, 0.7, -1.2])
    with pytest.raises(ArgumentError, match="t.w"):
        CALLS[api](writes_the_argument_beside_a_tuple, ((Linear(x), 2.0), x))


def test_separate_memory_is_differentiated():
    x = np.array([0.3, 0.7, -1.2])
    g = moonlite.grad(writes_the_argument, argnums=1)(Linear(x.copy()), x.copy())
    w = x  # the field's values; x[0] is overwritten by 3 x[1]
    np.testing.assert_allclose(g, [0.0, w[1] + 3.0 * w[0], w[2]])
