"""Primitive rules, keyed by primitive, with helpers for the common shapes.

A primitive is what an op stands for: the op class for operators (`ops.Mul`, `ops.Cast`), the
callee object for calls (`math.sin`, `np.sum`, `min`), `Method("sum")` for method calls
(`a.sum()`, whose primals start with the receiver) and `Attribute("T")` for attributes. A forward
(JVP) rule has the signature

    rule(b: Builder, primals: tuple[Value], tangents: tuple[Value | None],
         kwargs: dict[str, Value]) -> Value | None

It emits, at the builder's insertion point, the tangent of the op's result for one tangent
direction (batched mode calls it once per direction). `None` in `tangents` means "zero" (an
int/bool operand, or a value whose tangent is known to be zero); the forward pass never calls a
rule whose tangents are all None. `kwargs` holds keyword arguments of calls, which never carry
tangents (`axis=`, `dtype=`). Returning None means a zero tangent. The pass casts a scalar tangent
a rule returns to the result's type, so rules need not track float32/float64 promotion.

Helpers, so that most rules are one line (after ChainRules' `@scalar_rule` and JAX's
`defjvp`/`deflinear`/`defjvp_zero`):
- `defpartials(prim, *partials)`: an elementwise primitive by its partial derivatives,
  `partial_i(b, *primals)`; forward mode multiplies each argument's tangent by its partial and
  reverse mode the adjoint, with `strong_mul` (`strong_zeros.py`: a zero factor gives exactly
  zero, so `0 * inf` is 0, not nan);
- `defjvp(prim, *jvps)`: one function per argument, `jvp_i(b, *primals, dx_i)`, giving that
  argument's contribution; the tangent is the sum over the arguments that carry a tangent (for
  the bilinear products, whose contributions are not elementwise).
- `deflinear(prim)`: the op applied to the tangents (`Add`, `Neg`, ...).
- `defzero(prim)`: a piecewise-constant function (`floor`): zero tangent.
- `defrule(prim, rule)`: a full rule, for the shapes the helpers do not cover.

Rule files by topic (`scalar.py`, `numpy_shapes.py`, ...) register their rules on import, with the
helpers of `define.py`, and list their test cases beside them. They import `define.py` and
`registry.py`, never this package's `__init__` (which imports them: `tests/test_imports.py`).
"""

from __future__ import annotations

from .registry import (ANY_KEYWORD, DuplicateRule, PRIMITIVES, Primitive, lookup,  # noqa: F401
                       lookup_field, register, register_each, unregister)
from .define import (Attribute, Method, RuleNotApplicable, const_like, defjvp, deflinear,
                     defpartials, defrule, defzero, has_bounded_partials, is_one,
                     linear_attribute, linear_call, linear_method, lookup_jvp, no_adjoint,
                     positional_only, square, zero_like)  # noqa: F401  (what rule files use)
from . import scalar  # noqa: F401  (registers the scalar rules)
from . import numpy_rules  # noqa: F401  (numpy's elementwise functions)
from . import numpy_reductions  # noqa: F401  (sum, mean, prod, max, cumsum, trace, norm)
from . import numpy_shapes  # noqa: F401  (copies, reshapes, views, joins, triangles, fills)
from . import numpy_products  # noqa: F401  (dot, outer, @)
from . import numpy_interp  # noqa: F401  (np.interp)
from . import numpy_percentiles  # noqa: F401  (np.percentile, np.quantile)
from . import numpy_flips  # noqa: F401  (np.flip, np.fliplr, np.flipud, np.roll, np.cumprod)
from . import numpy_nan_reductions  # noqa: F401  (np.ptp, np.nansum, np.nanmean, np.nanmax, ...)
from . import numpy_vectors  # noqa: F401  (np.cross, np.vdot, np.linspace, np.asarray)
from . import list_views  # noqa: F401  (entries of lists of arrays, as views)
from . import linalg  # noqa: F401  (np.linalg, as custom rules)
from . import reductions  # noqa: F401  (np.var, np.std, as custom rules)
from . import call_traits  # noqa: F401  (answers op.traits() for calls)


def numpy_rule_cases() -> list:
    """Every numpy rule file's test cases (np.linalg's and np.var/np.std's included)."""
    return (numpy_rules.NUMPY_RULE_CASES + numpy_reductions.CASES + numpy_shapes.CASES
            + numpy_products.CASES + numpy_interp.CASES + numpy_percentiles.CASES
            + numpy_flips.CASES + numpy_nan_reductions.CASES + numpy_vectors.CASES
            + linalg.LINALG_RULE_CASES
            + reductions.REDUCTION_RULE_CASES)
