"""moonlite's value types.

Every IR value carries one of these. They mirror the numba types moonlite understands (floats,
integers, bools, arrays, tuples, none, slices) and wrap everything else in `OpaqueType`, so the
importer never loses a type and AD passes can ask precise questions (`is_float`, `ndim`) without
knowing numba's type zoo. `to_numba()` goes back, for lowering and for numba's typing rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._numba import types as nbt


class Type:
    """Base of moonlite types: immutable, hashable, printable."""

    def to_numba(self):
        raise NotImplementedError

    @property
    def is_float(self) -> bool:
        return False

    @property
    def is_integer(self) -> bool:
        return False

    @property
    def is_scalar(self) -> bool:
        return False


@dataclass(frozen=True)
class FloatType(Type):
    bits: int

    def to_numba(self):
        return nbt.float64 if self.bits == 64 else nbt.float32

    @property
    def is_float(self) -> bool:
        return True

    @property
    def is_scalar(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"float{self.bits}"


@dataclass(frozen=True)
class IntType(Type):
    bits: int
    signed: bool = True

    def to_numba(self):
        return nbt.Integer(f"{'' if self.signed else 'u'}int{self.bits}")

    @property
    def is_integer(self) -> bool:
        return True

    @property
    def is_scalar(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"{'' if self.signed else 'u'}int{self.bits}"


@dataclass(frozen=True)
class BoolType(Type):
    def to_numba(self):
        return nbt.boolean

    @property
    def is_scalar(self) -> bool:
        return True

    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class ComplexType(Type):
    """Complex numbers: captured faithfully, but not differentiable (see docs/limitations.md)."""

    bits: int

    def to_numba(self):
        return nbt.complex128 if self.bits == 128 else nbt.complex64

    def __str__(self) -> str:
        return f"complex{self.bits}"


@dataclass(frozen=True)
class NoneType(Type):
    def to_numba(self):
        return nbt.none

    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True)
class ArrayType(Type):
    dtype: Type
    ndim: int
    layout: str = "C"
    readonly: bool = False

    def to_numba(self):
        return nbt.Array(self.dtype.to_numba(), self.ndim, self.layout, readonly=self.readonly)

    def __str__(self) -> str:
        ro = ", readonly" if self.readonly else ""
        return f"array({self.dtype}, {self.ndim}d, {self.layout}{ro})"


@dataclass(frozen=True)
class TupleType(Type):
    elements: tuple

    def to_numba(self):
        return nbt.BaseTuple.from_types(tuple(e.to_numba() for e in self.elements))

    def __len__(self) -> int:
        return len(self.elements)

    def __str__(self) -> str:
        inner = ", ".join(str(e) for e in self.elements)
        return f"tuple({inner}{',' if len(self.elements) == 1 else ''})"


@dataclass(frozen=True)
class NamedTupleType(TupleType):
    """A namedtuple: to AD passes the tuple of its entries (its tangents and adjoints are plain
    tuples); `numba_type` names the class and its fields, for lowering and for reading fields
    (`p.alpha` is the entry at alpha's position)."""

    numba_type: object = None

    def __post_init__(self):
        _OPAQUE_BY_TEXT.setdefault(str(self.numba_type), self.numba_type)  # (parsed back)

    def to_numba(self):
        return self.numba_type

    @property
    def fields(self) -> tuple:
        return tuple(self.numba_type.fields)

    def __str__(self) -> str:
        return f"namedtuple<{self.numba_type}>"


@dataclass(frozen=True)
class SliceType(Type):
    """A slice object; `members` is 2 (start:stop) or 3 (start:stop:step), as numba types them."""

    members: int = 3

    def to_numba(self):
        return nbt.slice3_type if self.members == 3 else nbt.slice2_type

    def __str__(self) -> str:
        return "slice"


@dataclass(frozen=True)
class TapeType(Type):
    """A stack of values that AD passes push in one sweep and pop in the other (numba's list)."""

    element: Type

    def to_numba(self):
        return nbt.List(self.element.to_numba(), reflected=False)

    def __str__(self) -> str:
        return f"tape<{self.element}>"


@dataclass(frozen=True)
class OpaqueType(Type):
    """Any numba type moonlite does not model (strings, dtype classes, records, ...), kept as is."""

    numba_type: object

    def __post_init__(self):
        # remembered under its printed form: the IR parser reads `opaque<...>` back through it
        _OPAQUE_BY_TEXT.setdefault(str(self.numba_type), self.numba_type)

    def to_numba(self):
        return self.numba_type

    def __str__(self) -> str:
        return f"opaque<{self.numba_type}>"


_OPAQUE_BY_TEXT: dict = {}


def seen_opaque_type(text: str):
    """The numba type of an OpaqueType made in this process that prints as `opaque<text>`, or
    None (numba's types have no parser of their own)."""
    return _OPAQUE_BY_TEXT.get(text)


float64 = FloatType(64)
float32 = FloatType(32)
int64 = IntType(64)
int32 = IntType(32)
intp = int64
boolean = BoolType()
none = NoneType()


def from_numba(t) -> Type:
    """Translate a numba type into a moonlite type (literals become their base types)."""
    t = nbt.unliteral(t)
    if isinstance(t, nbt.Boolean):
        return boolean
    if isinstance(t, nbt.Float):
        return FloatType(t.bitwidth)
    if isinstance(t, nbt.Integer):
        return IntType(t.bitwidth, t.signed)
    if isinstance(t, nbt.Complex):
        return ComplexType(t.bitwidth)
    if isinstance(t, nbt.NoneType):
        return none
    if isinstance(t, nbt.Array) and not isinstance(t, nbt.Record) and type(t) is nbt.Array:
        return ArrayType(from_numba(t.dtype), t.ndim, t.layout, not t.mutable)
    if isinstance(t, nbt.NestedArray):  # a record's array field: capture reads it as an array
        return ArrayType(from_numba(t.dtype), t.ndim, "C")
    if isinstance(t, nbt.BaseNamedTuple):
        return NamedTupleType(tuple(from_numba(e) for e in t.types), t)
    if isinstance(t, nbt.BaseTuple):
        return TupleType(tuple(from_numba(e) for e in t.types))
    if isinstance(t, nbt.SliceType):
        return SliceType(t.members)
    return OpaqueType(t)


def is_differentiable(t: Type) -> bool:
    """True for the types that carry a tangent: real floats, float arrays, tuples holding those,
    records with float fields and structured arrays of them."""
    if isinstance(t, FloatType):
        return True
    if isinstance(t, ArrayType):
        return isinstance(t.dtype, FloatType) or is_float_record(t.dtype)
    if isinstance(t, TupleType):
        return any(is_differentiable(e) for e in t.elements)
    return is_float_record(t)


def is_record(t: Type) -> bool:
    """A numpy record (one entry of a structured array), whatever its fields."""
    return isinstance(t, OpaqueType) and isinstance(t.numba_type, nbt.Record)


def is_float_record(t: Type) -> bool:
    """A numpy record (one entry of a structured array) whose fields are scalars or arrays of
    scalars (`('pos', 'f8', (3,))`, numba's NestedArray), one of them real floats at least: its
    float fields carry derivatives, its tangent is a record of the same type (integer and bool
    fields of a tangent are unused)."""
    if not (isinstance(t, OpaqueType) and isinstance(t.numba_type, nbt.Record)):
        return False
    return _float_record(t.numba_type)


def _float_record(record) -> bool:
    fields = [_scalar_of_field(field.type) for field in record.fields.values()]
    scalar = all(isinstance(f, (nbt.Float, nbt.Integer, nbt.Boolean))
                 or isinstance(f, nbt.Record) and _float_record(f) for f in fields)
    return scalar and any(isinstance(f, nbt.Float) or isinstance(f, nbt.Record) for f in fields)


def _scalar_of_field(t):
    return t.dtype if isinstance(t, nbt.NestedArray) else t


def is_record_array(t: Type) -> bool:
    """A structured array of such records (`params[i]['alpha']`)."""
    return isinstance(t, ArrayType) and is_float_record(t.dtype)


def is_record_like(t: Type) -> bool:
    """Such a record, or a structured array of them."""
    return is_float_record(t) or is_record_array(t)
