"""One registration per primitive: everything moonlite knows about it, in one place.

A primitive (an op class, a callee, `Method(name)`, `Attribute(name)`: see `rules/__init__.py`)
is registered once, by the rule file of its topic, with any of:

- `jvp`: its forward rule, `jvp(b, primals, tangents, kwargs) -> tangent | None`;
- `adjoint`: its reverse rule, for primitives that mix entries (reductions, products, joins),
  `adjoint(rv, op)`, emitting the op's pullback with the reverse pass `rv` (below); elementwise
  primitives need none: the reverse pass derives their adjoints from `jvp` (its partials);
- `reads`: `reads(op) -> set of operands` the adjoint reads (kept for the pullback: each costs a
  tape slot per loop iteration); without it, the reverse pass finds out by a dry run of `jvp`;
- `keywords`: the keyword arguments the adjoint reads (`("axis",)`); a call with any other
  keyword is refused in reverse mode, since an adjoint that ignores a keyword gives a wrong
  gradient (`np.tril(A, k=-1)` read as `np.tril(A)`); `ANY_KEYWORD` for adjoints no keyword
  can change (a zero derivative);
- `traits`: what a call of it does besides computing its result (`ir/traits.py`): `VIEW`,
  `AXES_VIEW`, `ALLOCATES`, `ELEMENTWISE`, `WRITES`. Calls answer `op.traits()` from here.

Registering a field a primitive already has raises `DuplicateRule` at import, naming both
places, so a rule can never be silently overwritten by another file. Custom rules users give
(`custom.py`) replace theirs explicitly (`replace=True`).

The reverse pass `rv` an adjoint receives offers (duck-typed, so `rules/` imports nothing of
`ad/`): `rv.b` (the builder, positioned in the pullback), `rv.shadow(v)` (the adjoint array of
an array, or None), `rv.take_adjoint(v)` (a float's adjoint, reset to zero),
`rv.result_adjoint(v)` (the adjoint of a result, float or array, or None), `rv.recall(v)` (a
primal value, kept or recomputed), `rv.send(v, contribution)` (add to v's adjoint, summing over
broadcast axes), `rv.send_to_every_entry(v, scalar)`, `rv.varied` (the values that may carry a
derivative) and `rv.unsupported(op, construct, hint)` (an `UnsupportedError` to raise).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from typing import Callable, Optional

from ..errors import MoonliteError
from ..ir.traits import Trait
from ..ir.types import ArrayType, FloatType, TupleType, is_float_record, is_record_array

ANY_KEYWORD = ("*",)


@dataclass
class Primitive:
    """What moonlite knows about one primitive (see the module docstring)."""

    key: object
    jvp: Optional[Callable] = None
    adjoint: Optional[Callable] = None
    reads: Optional[Callable] = None
    keywords: Optional[tuple] = None
    traits: Optional[Trait] = None
    # where each field was registered (module:line), for the duplicate error
    origins: dict = field(default_factory=dict, repr=False)

    def reads_keyword(self, name: str) -> bool:
        keywords = self.keywords or ()
        return keywords == ANY_KEYWORD or name in keywords


class DuplicateRule(MoonliteError):
    """A second registration of something a primitive already has."""


PRIMITIVES: dict = {}
# the fields a registration sets (all but the key and where they came from)
_FIELDS = tuple(f.name for f in fields(Primitive) if f.name not in ("key", "origins"))


def register(key, *, replace: bool = False, **given) -> Primitive:
    """Register fields of the primitive `key` (see the module docstring); a field it already
    has raises `DuplicateRule` unless `replace`."""
    unknown = set(given) - set(_FIELDS)
    if unknown:
        raise TypeError(f"unknown rule field(s) {sorted(unknown)}")
    primitive = PRIMITIVES.get(key)
    if primitive is None:
        primitive = PRIMITIVES[key] = Primitive(key)
    origin = _caller()
    for name, value in given.items():
        if value is None:
            continue
        if getattr(primitive, name) is not None and not replace:
            raise DuplicateRule(f"the {name} of {_name(key)} is registered twice: at "
                                f"{primitive.origins[name]} and at {origin}")
        setattr(primitive, name, value)
        primitive.origins[name] = origin
    return primitive


def register_each(keys, **given) -> None:
    """The same fields for several primitives (`np.max`, `np.amax`, `Method("max")`)."""
    for key in keys:
        register(key, **given)


def unregister(key, name: str) -> None:
    """Forget one field of `key` (custom rules taken back, tests)."""
    primitive = PRIMITIVES.get(key)
    if primitive is not None:
        setattr(primitive, name, None)
        primitive.origins.pop(name, None)


def lookup(key) -> Optional[Primitive]:
    try:
        return PRIMITIVES.get(key)
    except TypeError:  # an unhashable callee
        return None


def lookup_field(key, name: str):
    primitive = lookup(key)
    return getattr(primitive, name) if primitive is not None else None


def _caller() -> str:
    """module:line of the rule file that registers (outside the registry and its helpers)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.endswith(("rules/registry.py", "rules/define.py")):
            return f"{filename.rsplit('/', 1)[-1]}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def _name(key) -> str:
    return getattr(key, "__qualname__", None) or getattr(key, "__name__", None) or repr(key)


# --- which types carry derivatives (shared by the rules and the passes) -------------------------

def is_float(t) -> bool:
    return isinstance(t, FloatType)


def is_float_array(t) -> bool:
    return isinstance(t, ArrayType) and isinstance(t.dtype, FloatType)


def is_float64_array(t, ndim=None) -> bool:
    """A float64 array (of `ndim` dimensions when given): what rules written for numba's
    float64 implementations take."""
    return isinstance(t, ArrayType) and t.dtype == FloatType(64) and ndim in (None, t.ndim)


def has_adjoint(t) -> bool:
    """Floats, float arrays, records and structured arrays with float fields (their fields get
    their adjoints in a shadow structured array) and tuples holding one carry an adjoint."""
    if isinstance(t, TupleType):
        return any(has_adjoint(e) for e in t.elements)
    return is_float(t) or is_float_array(t) or is_record_array(t) or is_float_record(t)

