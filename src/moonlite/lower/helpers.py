"""Small njit functions that lowered IR calls where numba IR has no direct expression."""

import operator

from .. import _numba as nb


@nb.njit(cache=True)
def select_impl(cond, if_true, if_false):
    # numba IR has no select expression; LLVM turns this call into a select after inlining.
    return if_true if cond else if_false


# Derived code compiles with numba's "numpy" error model (a derivative's division by zero gives
# inf or nan), so a primal division that raises ZeroDivisionError under the "python" model (a
# `checked` op) calls one of these instead; LLVM inlines them.

@nb.njit(error_model="python", cache=True)
def checked_truediv(a, b):
    return a / b


@nb.njit(error_model="python", cache=True)
def checked_floordiv(a, b):
    return a // b


@nb.njit(error_model="python", cache=True)
def checked_mod(a, b):
    return a % b


@nb.njit(error_model="python", cache=True)
def checked_pow(a, b):
    return a ** b


CHECKED_BINOPS = {operator.truediv: checked_truediv, operator.floordiv: checked_floordiv,
                  operator.mod: checked_mod, operator.pow: checked_pow}
