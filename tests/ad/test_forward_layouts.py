"""Tangent locals and phis typed as numba types them (ad/forward.py: `_layouts_differ`): their
primal's tangent type while every tangent reaching them shares its layout, "A" once they differ.

numba types a variable from everything assigned to it; moonlite's IR must say the same, or code
built for one layout reads another (the check in every compile, lower/dispatcher.py, refuses
it). Each case is checked against differences of the kernel itself.
"""

import numba
import numpy as np
import pytest

import moonlite

H = 1e-6


@numba.njit
def resolvent_steps(a):
    """A loop carrying a matrix that starts as a copy of a Fortran-ordered argument and is
    then inv's result: F-ordered on both paths, while its tangent is F on the first and a
    product (C-ordered) on the second."""
    m = a * 1.0
    for _ in range(2):
        m = np.linalg.inv(m + 3.0 * np.eye(3))
    return np.sum(m)


def _fortran(seed):
    return np.asfortranarray(np.random.default_rng(seed).standard_normal((3, 3)) * 0.3)


def test_a_loop_phi_whose_tangents_differ_in_layout_in_forward_mode():
    a, da = _fortran(0), np.asfortranarray(np.ones((3, 3)))
    out, tangent = moonlite.jvp(resolvent_steps, (a,), (da,))
    assert out == pytest.approx(resolvent_steps(a))
    fd = (resolvent_steps(a + H * da) - resolvent_steps(a - H * da)) / (2 * H)
    assert tangent == pytest.approx(fd, rel=1e-6)


def test_a_loop_phi_whose_tangents_differ_in_layout_in_second_order():
    a, v, h = _fortran(0), _fortran(1), 1e-4
    hv = moonlite.hvp(resolvent_steps, (a,), (v,))
    f = resolvent_steps.py_func
    for w in np.random.default_rng(2).standard_normal((3, 3, 3)):  # w.Hv by differences
        fd = (f(a + h * v + h * w) - f(a + h * v - h * w) - f(a - h * v + h * w)
              + f(a - h * v - h * w)) / (4 * h * h)
        assert np.sum(w * hv) == pytest.approx(fd, rel=1e-5, abs=1e-8)
