"""Small njit functions that lowered IR calls where numba IR has no direct expression."""

import operator

from .. import _numba as nb


@nb.njit(cache=True)
def select_impl(cond, if_true, if_false):
    # numba IR has no select expression; LLVM turns this call into a select after inlining.
    return if_true if cond else if_false


# Derived code compiles with numba's default "python" error model, the one nearly every kernel
# uses: numba keys the implementations of numpy functions it compiles by the caller's flags, so
# derived code sharing the primal's reuses what the primal compiled (np.max, np.sum: 0.35 s of
# logsumexp's first gradient). Under that model a scalar division by zero raises, as the
# primal's own (`checked`) divisions must; the divisions AD passes add (unchecked: a derivative
# at a singular point is inf or nan, never an exception) call one of these instead. LLVM
# inlines them. Array operands go through numpy's ufuncs, which always use numpy's model.

@nb.njit(error_model="numpy", cache=True)
def quiet_truediv(a, b):
    return a / b


@nb.njit(error_model="numpy", cache=True)
def quiet_floordiv(a, b):
    return a // b


@nb.njit(error_model="numpy", cache=True)
def quiet_mod(a, b):
    return a % b


@nb.njit(error_model="numpy", cache=True)
def quiet_pow(a, b):
    return a ** b


QUIET_BINOPS = {operator.truediv: quiet_truediv, operator.floordiv: quiet_floordiv,
                operator.mod: quiet_mod, operator.pow: quiet_pow}
