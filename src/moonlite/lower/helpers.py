"""Small njit functions that lowered IR calls where numba IR has no direct expression."""

import numba


@numba.njit
def select_impl(cond, if_true, if_false):
    # numba IR has no select expression; LLVM turns this call into a select after inlining.
    return if_true if cond else if_false
