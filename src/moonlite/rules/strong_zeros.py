"""Strong zeros: a product in a derivative with an exactly zero factor is exactly zero.

A derivative is assembled from products of a linear input (a tangent in forward mode, an adjoint
in reverse mode) and a partial derivative. Where one factor is infinite and the other zero, IEEE
arithmetic gives `0 * inf = nan`, and one nan poisons the whole gradient (JAX's `where` problem):

- the adjoint or tangent is zero because the value was masked out or never used, while the
  partial is infinite (`sqrt` at 0, `log` at 0, `0 ** -1` in the derivative of `x ** 0`);
- the partial is zero because the value underflowed or is flat, while the tangent overflowed
  (`exp(-d / t)` with a sentinel `d` of 1.8e308: `d / t` is inf, `exp` of it is 0).

moonlite takes such a product to be exactly zero: elementwise rules (`defpartials`) multiply a
tangent or an adjoint by a partial with `strong_mul`, in forward mode, reverse mode and forward
over reverse alike. Where neither factor is zero nothing changes: an infinite partial of a used
value still gives inf or nan, as the mathematics says.

`strong_mul` is a numba ufunc (`@vectorize`), so numba fuses it into the array expression around
it: no extra pass over an array. The convention has the usual price at singular points of a
composite: the gradient of `sqrt(x) ** 2` at 0 is 0 here (nan without strong zeros), while the
function is x, whose slope is 1.
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..ir.traits import Trait
from .registry import register


@nb.vectorize(cache=False)
def strong_mul(linear, partial):
    """`linear * partial`, exactly zero where either factor is zero (even if the other is inf or
    nan)."""
    # each branch's zero has the type of its factor; numba unifies the branches to the type of
    # the product (float32 stays float32)
    if linear == 0:
        return linear * linear
    if partial == 0:
        return partial * partial
    return linear * partial


@nb.njit(cache=False)
def strong_mul_scalar(linear, partial):
    """`strong_mul` of two numbers, an njit function: numba inlines it, so LLVM sees two
    compares and a select, as for IR written out (a call of the ufunc's scalar kernel, with its
    branches, was not inlined: rosenbrock's gradient took 2.3x the time). A primitive rather
    than that IR because forward mode must differentiate it as a product: over the IR, the
    select's zero branch gave `p * exp(x)` at `p = 0` a zero cross term in its Hessian, whose
    true value is `exp(x)` (adversarial tests)."""
    if linear == 0:  # (each zero of its factor's type: numba unifies them, as in strong_mul)
        return linear * linear
    if partial == 0:
        return partial * partial
    return linear * partial


def strong_product(b, linear, partial):
    """Emit `strong_mul(linear, partial)`: the ufunc for arrays (fused into the array
    expression), `strong_mul_scalar` for numbers."""
    from ..ir.types import ArrayType
    if isinstance(linear.type, ArrayType) or isinstance(partial.type, ArrayType):
        return b.call(strong_mul, [linear, partial])
    return b.call(strong_mul_scalar, [linear, partial])


def zero_of(value):
    """A zero of `value`'s numba type (njit code only; the value itself is not read)."""
    raise NotImplementedError("zero_of is called from njit code only")


@nb.overload(zero_of)
def _zero_of_impl(value):
    zero = nb.as_dtype(value).type(0)
    return lambda value: zero


def _strong_mul_tangent_py(linear, partial, dlinear, dpartial):
    product = linear * partial
    # masked: a zero factor against an infinite or nan one
    if (linear == 0 and not np.isfinite(partial)) or (partial == 0 and not np.isfinite(linear)):
        return zero_of(product)
    # a zero factor whose own tangent is not finite (an overflow upstream) counts as zero
    # around it too: its tangent's product is zero
    t1 = zero_of(product)
    if not (dlinear == 0 or partial == 0 or (linear == 0 and not np.isfinite(dlinear))):
        t1 = dlinear * partial
    t2 = zero_of(product)
    if not (linear == 0 or dpartial == 0 or (partial == 0 and not np.isfinite(dpartial))):
        t2 = linear * dpartial
    return t1 + t2


# The tangent of `strong_mul(linear, partial)`: the product rule with strong products,
# `dlinear * partial + linear * dpartial`, except where the product was masked (a zero factor
# against an infinite or nan one), whose tangent is zero as its value is: the nan rerun of a
# derivative whose partial overflowed relies on it (tests/ad/test_nan_retry.py). Against a
# finite factor a zero one keeps the product rule: the Hessian of `p * exp(x)` at `p = 0` has
# the cross term `exp(x)`. An njit function for numbers (inlined), a ufunc for arrays.
strong_mul_tangent = nb.njit(cache=False)(_strong_mul_tangent_py)
strong_mul_tangent_ufunc = nb.vectorize(cache=False)(_strong_mul_tangent_py)


def _strong_mul_rule(b, primals, tangents, kwargs):
    from ..ir.types import ArrayType
    (a, p), (da, dp) = primals, tangents
    if da is None and dp is None:
        return None
    arrays = any(isinstance(v.type, ArrayType) for v in (a, p))

    def zero_like(v):  # a number: the ufunc broadcasts it over the arrays
        t = v.type.dtype if isinstance(v.type, ArrayType) else v.type
        return b.const(0.0 if t.is_float else 0, t)

    da = da if da is not None else zero_like(a)
    dp = dp if dp is not None else zero_like(p)
    return b.call(strong_mul_tangent_ufunc if arrays else strong_mul_tangent, [a, p, da, dp])


register(strong_mul, jvp=_strong_mul_rule)
register(strong_mul_scalar, jvp=_strong_mul_rule, traits=Trait.PURE)
