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


def _strong_mul_rule(b, primals, tangents, kwargs):
    # d(a p) = da p + a dp, each product strong like the primal's
    (a, p), (da, dp) = primals, tangents
    terms = []
    if da is not None:
        terms.append(strong_product(b, da, p))
    if dp is not None:
        terms.append(strong_product(b, a, dp))
    return terms[0] if len(terms) == 1 else b.add(terms[0], terms[1])


register(strong_mul, jvp=_strong_mul_rule)
register(strong_mul_scalar, jvp=_strong_mul_rule, traits=Trait.PURE)
