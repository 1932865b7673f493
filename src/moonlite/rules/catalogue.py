"""What moonlite does with every function numba can call: the catalogue AD modes agree on.

numba types several hundred numpy, `math` and builtin functions. Each one is in exactly one
class here, and `tests/rules/test_catalogue.py` walks numba's own registry to check that every
function numba can call is classified (a function numba adds in a new version fails the test
until someone decides what it is) and that each class has its handlers in every mode:

- `DIFFERENTIATED`: a forward rule and a reverse path (the rule's partials, its unit-tangent
  derivative for an elementwise function, or an adjoint registered with the primitive in `rules/`);
- `ZERO_DERIVATIVE`: piecewise constant with float results (`np.floor`, `np.sign`): a rule
  giving a zero tangent, and nothing flowing back;
- `NO_DERIVATIVE`: results that carry no derivative (bools, integers, indices, shapes, dtypes):
  no rule is needed, and none of them writes into an array;
- `ALLOCATIONS`: fresh arrays whose values do not depend on float arguments;
- `CONSTANTS`: random numbers, a derivative of zero by declaration (`nondifferentiable`);
- `CAPTURE`: handled by capture itself (loops, casts, tuple sums and arrays: `capture/`);
- everything else is `REFUSED`: a call with an argument being differentiated raises
  `UnsupportedError` in every mode, naming the function (write a custom rule for it).
"""

from __future__ import annotations

import builtins
import math
import random

import numpy as np

ZERO_DERIVATIVE = frozenset([
    np.floor, np.ceil, np.trunc, np.rint, np.round, np.around, np.sign, np.floor_divide,
    np.spacing, math.floor, math.ceil, math.trunc, builtins.round])

NO_DERIVATIVE = frozenset([
    # predicates and comparisons
    np.all, np.any, np.allclose, np.array_equal, np.isclose, np.equal, np.not_equal, np.greater,
    np.greater_equal, np.less, np.less_equal, np.logical_and, np.logical_or, np.logical_xor,
    np.logical_not, np.isfinite, np.isinf, np.isnan, np.isnat, np.isneginf, np.isposinf,
    np.iscomplex, np.iscomplexobj, np.isreal, np.isrealobj, np.isscalar, np.isin, np.signbit,
    math.isfinite, math.isinf, math.isnan, builtins.isinstance, builtins.hasattr,
    # indices, counts and integer arithmetic
    np.argmax, np.argmin, np.argsort, np.argpartition, np.argwhere, np.nonzero,
    np.flatnonzero, np.nanargmax, np.nanargmin, np.searchsorted, np.digitize, np.bincount,
    np.count_nonzero, np.gcd, np.lcm, np.bitwise_and, np.bitwise_or, np.bitwise_xor,
    np.invert, np.left_shift, np.right_shift, math.gcd, np.tril_indices, np.triu_indices,
    np.tril_indices_from, np.triu_indices_from, np.indices, np.ndindex, np.shape, np.size,
    builtins.len, builtins.hash, builtins.ord, builtins.chr, builtins.str, builtins.repr,
    builtins.bytes, builtins.getattr, builtins.type,
    # dtypes and type objects
    np.dtype, np.finfo, np.iinfo, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
    np.uint16, np.uint32, np.uint64])

ALLOCATIONS = frozenset([np.empty, np.zeros, np.ones, np.empty_like, np.zeros_like,
                         np.ones_like, np.eye, np.identity, np.tri])

CAPTURE = frozenset([
    builtins.range, builtins.zip, builtins.enumerate, builtins.slice, builtins.bool,
    builtins.int, builtins.float, builtins.sum, np.float32, np.float64, np.array, np.asarray,
    # numba's returns an Optional: capture calls linalg.matrix_power, njit code, instead
    np.linalg.matrix_power,
    # of float arrays: numba's function on the entries' places, the numbers gathered
    # (capture/calls.py: moved_numbers); of other arguments refused in every mode
    np.take, np.delete, np.repeat, np.append,
    builtins.divmod])  # (x // y, x % y)

# seeding writes no array and keeps no value (ad/refusals.EFFECT_FREE_CALLS)
EFFECT_FREE = frozenset([np.random.seed, random.seed])


def classify(fn) -> str:
    """'differentiated', 'zero', 'none', 'allocation', 'constant', 'capture', 'effect-free' or
    'refused' (see the module docstring)."""
    from .define import lookup_jvp
    from .custom import lookup_custom
    custom = lookup_custom(fn)
    if custom is not None and custom.nondifferentiable:
        return "constant"
    for name, members in (("zero", ZERO_DERIVATIVE), ("none", NO_DERIVATIVE),
                          ("allocation", ALLOCATIONS), ("capture", CAPTURE),
                          ("effect-free", EFFECT_FREE)):
        if _member(fn, members):
            return name
    if custom is not None or lookup_jvp(fn) is not None:
        return "differentiated"
    return "refused"


def numba_callables() -> list:
    """Every numpy, `math`, `cmath`, `random` and builtin function numba's typing registry
    knows, as objects."""
    import weakref
    from .. import _numba as nb
    nb.target_context().refresh()
    context = nb.typing_context()
    context.refresh()
    found = []
    for key in list(context._globals):
        obj = key() if isinstance(key, weakref.ref) else key
        module = getattr(obj, "__module__", None) or ""
        if module.split(".")[0] in ("numpy", "math", "cmath", "random", "builtins"):
            found.append(obj)
    return found


def _member(fn, members) -> bool:
    try:
        return fn in members
    except TypeError:  # unhashable
        return False

