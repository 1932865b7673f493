"""moonlite IR operations: one class per operation, each with its operand/result schema.

Arithmetic follows numba's semantics (and its type promotion rules): an op's result type is the
type numba infers for the matching Python operation, which the builder asks numba for
(`typing.py`). Arithmetic classes carry the Python operator they stand for (`PYFUNC`), which is
what lowering emits and what AD rule tables are keyed by.
"""

from __future__ import annotations

import operator
from typing import ClassVar, Optional, Sequence

import numpy as np

from ..errors import UNKNOWN_LOC, SourceLoc
from .core import (ANY, ARRAY, BOOL, INDEX, NUMERIC, SLICE_PART, TUPLE, Block, Op, OperandDef,
                   Terminator, Value)
from .traits import ALLOCATES, AXES_VIEW, ELEMENTWISE, PURE, VIEW, WRITES, Trait, call_traits
from .types import ArrayType, BoolType, NamedTupleType, TapeType, TupleType, Type


def short_name(obj) -> str:
    """A readable name for a Python object referenced by the IR (a callee, an exception class)."""
    mod = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name is None:
        py_func = getattr(obj, "py_func", None)
        name = getattr(py_func, "__qualname__", repr(obj))
    if mod in ("builtins", "") or mod.startswith("numba") and hasattr(obj, "py_func"):
        return name
    if mod.startswith("numpy"):
        sub = mod.split(".")[1] if "." in mod else ""
        if sub in ("linalg", "fft", "random"):
            return f"np.{sub}.{name}"
        if getattr(np, name, None) is obj or not sub:
            return f"np.{name}"
        # (np.polynomial.polynomial.polyval is not np.polyval: its arguments are the other way)
        return "np." + mod.split(".", 1)[1] + f".{name}"
    return f"{mod}.{name}"


# --- values from nothing ---------------------------------------------------------------------

class Constant(Op):
    """A compile-time constant: a number, bool, None, string or (read-only) numpy array."""

    TRAITS = PURE

    OPERANDS = ()
    MNEMONIC = "const"

    def __init__(self, value, type: Type, loc: SourceLoc = UNKNOWN_LOC, hint=None):
        super().__init__((), type, loc, hint)
        self.value = value

    def attributes(self) -> str:
        if hasattr(self.value, "shape") and getattr(self.value, "ndim", 0) > 0:
            return f"<array shape={self.value.shape}>"
        return repr(self.value)


class GlobalRef(Op):
    """A Python object used as a value (a dtype class passed as `dtype=`, a function value)."""

    TRAITS = PURE

    OPERANDS = ()
    MNEMONIC = "global"

    def __init__(self, obj, type: Type, loc: SourceLoc = UNKNOWN_LOC, hint=None):
        super().__init__((), type, loc, hint)
        self.obj = obj

    def attributes(self) -> str:
        return short_name(self.obj)


class Undef(Op):
    """A value on a path where the source never assigned it (read there would be a bug)."""

    TRAITS = PURE

    OPERANDS = ()


# --- arithmetic --------------------------------------------------------------------------------

class BinaryOp(Op):
    """`lhs <op> rhs` on numbers or arrays (with broadcasting), as numba computes it.

    `checked` (division, modulo and power of scalars only): a zero divisor raises
    ZeroDivisionError, as in Python and under numba's default error model. Unchecked, the op
    gives numpy's answer (inf, nan). The importer marks the primal's own divisions checked when
    the primal was compiled with the "python" error model; everything AD passes add is
    unchecked, so a derivative never raises where the primal does not."""

    TRAITS = ELEMENTWISE

    OPERANDS = (OperandDef("lhs", NUMERIC), OperandDef("rhs", NUMERIC))
    RESULT = NUMERIC
    PYFUNC: ClassVar = None
    SYMBOL: ClassVar[str] = "?"
    CAN_DIVIDE_BY_ZERO: ClassVar[bool] = False

    def __init__(self, lhs: Value, rhs: Value, type: Type, loc=UNKNOWN_LOC, hint=None,
                 checked: bool = False):
        super().__init__((lhs, rhs), type, loc, hint)
        self.checked = checked

    def attributes(self) -> str:
        return "checked" if self.checked else ""

    def type_errors(self) -> list:
        if self.checked and not (self.CAN_DIVIDE_BY_ZERO and self.lhs.type.is_scalar
                                 and self.rhs.type.is_scalar):
            return [f"only scalar division, modulo and power can be checked, not {self.mnemonic()}"
                    f" on ({self.lhs.type}, {self.rhs.type})"]
        return []


class Add(BinaryOp):
    TRAITS = PURE | ELEMENTWISE
    PYFUNC, SYMBOL = operator.add, "+"


class Sub(BinaryOp):
    TRAITS = PURE | ELEMENTWISE
    PYFUNC, SYMBOL = operator.sub, "-"


class Mul(BinaryOp):
    TRAITS = PURE | ELEMENTWISE
    PYFUNC, SYMBOL = operator.mul, "*"


class TrueDiv(BinaryOp):
    PYFUNC, SYMBOL = operator.truediv, "/"
    CAN_DIVIDE_BY_ZERO = True


class FloorDiv(BinaryOp):
    PYFUNC, SYMBOL = operator.floordiv, "//"
    CAN_DIVIDE_BY_ZERO = True


class Mod(BinaryOp):
    PYFUNC, SYMBOL = operator.mod, "%"
    CAN_DIVIDE_BY_ZERO = True


class Pow(BinaryOp):
    PYFUNC, SYMBOL = operator.pow, "**"
    CAN_DIVIDE_BY_ZERO = True


class MatMul(BinaryOp):
    TRAITS = Trait.NONE
    PYFUNC, SYMBOL = operator.matmul, "@"


class BitAnd(BinaryOp):
    TRAITS = PURE | ELEMENTWISE
    PYFUNC, SYMBOL = operator.and_, "&"


class BitOr(BinaryOp):
    TRAITS = PURE | ELEMENTWISE
    PYFUNC, SYMBOL = operator.or_, "|"


class BitXor(BinaryOp):
    TRAITS = PURE | ELEMENTWISE
    PYFUNC, SYMBOL = operator.xor, "^"


class LShift(BinaryOp):
    PYFUNC, SYMBOL = operator.lshift, "<<"


class RShift(BinaryOp):
    PYFUNC, SYMBOL = operator.rshift, ">>"


class Compare(BinaryOp):
    """A comparison: bool on scalars, a bool array on arrays."""

    TRAITS = PURE | ELEMENTWISE

    def type_errors(self) -> list:
        t = self.result.type
        ok = isinstance(t, BoolType) or (isinstance(t, ArrayType) and isinstance(t.dtype, BoolType))
        return [] if ok else [f"comparison result must be bool, is {t}"]


class Lt(Compare):
    PYFUNC, SYMBOL = operator.lt, "<"


class Le(Compare):
    PYFUNC, SYMBOL = operator.le, "<="


class Gt(Compare):
    PYFUNC, SYMBOL = operator.gt, ">"


class Ge(Compare):
    PYFUNC, SYMBOL = operator.ge, ">="


class Eq(Compare):
    PYFUNC, SYMBOL = operator.eq, "=="


class Ne(Compare):
    PYFUNC, SYMBOL = operator.ne, "!="


BINARY_OPS = (Add, Sub, Mul, TrueDiv, FloorDiv, Mod, Pow, MatMul, BitAnd, BitOr, BitXor, LShift,
              RShift, Lt, Le, Gt, Ge, Eq, Ne)
BINARY_OP_BY_PYFUNC = {cls.PYFUNC: cls for cls in BINARY_OPS}


class InplaceBinary(Op):
    """`target <op>= value` on an array: writes into `target`; the result is `target` itself."""

    TRAITS = WRITES

    OPERANDS = (OperandDef("target", ARRAY), OperandDef("value", NUMERIC))
    RESULT = ARRAY
    MNEMONIC = "inplace"

    def __init__(self, binop: type, target: Value, value: Value, loc=UNKNOWN_LOC, hint=None):
        super().__init__((target, value), target.type, loc, hint)
        self.binop = binop

    def attributes(self) -> str:
        return self.binop.SYMBOL + "="

    def type_errors(self) -> list:
        errors = []
        if self.result.type != self.target.type:
            errors.append("in-place result must have the target's type")
        if getattr(self.target.type, "readonly", False):
            errors.append("in-place update of a read-only array")
        return errors


class UnaryOp(Op):
    TRAITS = PURE | ELEMENTWISE
    OPERANDS = (OperandDef("value", NUMERIC),)
    RESULT = NUMERIC
    PYFUNC: ClassVar = None
    SYMBOL: ClassVar[str] = "?"
    NUMBA_SYMBOL: ClassVar[str] = "?"  # how numba's IR spells the operator

    def __init__(self, value: Value, type: Type, loc=UNKNOWN_LOC, hint=None):
        super().__init__((value,), type, loc, hint)


class Neg(UnaryOp):
    PYFUNC, SYMBOL, NUMBA_SYMBOL = operator.neg, "-", "-"


class Pos(UnaryOp):
    PYFUNC, SYMBOL, NUMBA_SYMBOL = operator.pos, "+", "+"


class Not(UnaryOp):
    PYFUNC, SYMBOL, NUMBA_SYMBOL = operator.not_, "not", "not"


class Invert(UnaryOp):
    PYFUNC, SYMBOL, NUMBA_SYMBOL = operator.invert, "~", "~"


UNARY_OPS = (Neg, Pos, Not, Invert)
UNARY_OP_BY_SYMBOL = {cls.NUMBA_SYMBOL: cls for cls in UNARY_OPS}


class Cast(Op):
    """Convert a scalar to another scalar type (numba's conversion rules: float->int truncates)."""

    TRAITS = PURE | ELEMENTWISE

    OPERANDS = (OperandDef("value", NUMERIC),)
    RESULT = NUMERIC

    def __init__(self, value: Value, type: Type, loc=UNKNOWN_LOC, hint=None):
        super().__init__((value,), type, loc, hint)

    def type_errors(self) -> list:
        if not self.result.type.is_scalar or not self.value.type.is_scalar:
            return ["cast converts scalars only"]
        return []


class Select(Op):
    """`if_true if cond else if_false`, without control flow (both sides are already computed)."""

    TRAITS = PURE | ELEMENTWISE | VIEW

    OPERANDS = (OperandDef("cond", BOOL), OperandDef("if_true"), OperandDef("if_false"))

    def __init__(self, cond, if_true, if_false, loc=UNKNOWN_LOC, hint=None):
        super().__init__((cond, if_true, if_false), if_true.type, loc, hint)

    def type_errors(self) -> list:
        if self.if_true.type != self.if_false.type or self.result.type != self.if_true.type:
            return ["select needs both sides and its result of one type"]
        return []


# --- calls -----------------------------------------------------------------------------------

class Call(Op):
    """A call of a Python object numba can call: a `math`/numpy function, an njit function, a
    builtin. `callee` is the object itself; trailing operands may be passed by keyword."""

    TRAITS = WRITES  # before the rules are imported; `traits()` asks them per callee
    OPERANDS = (OperandDef("args", ANY, variadic=True),)

    def __init__(self, callee, args: Sequence[Value], type: Type, kwnames: Sequence[str] = (),
                 loc=UNKNOWN_LOC, hint=None):
        super().__init__(tuple(args), type, loc, hint)
        self.callee = callee
        self.kwnames = tuple(kwnames)

    @property
    def positional(self) -> tuple:
        return self.operands[:len(self.operands) - len(self.kwnames)]

    @property
    def keywords(self) -> dict:
        kw = self.operands[len(self.operands) - len(self.kwnames):]
        return dict(zip(self.kwnames, kw))

    def attributes(self) -> str:
        return short_name(self.callee)

    def traits(self) -> Trait:
        return call_traits(self)  # per callee, from its registration in moonlite.rules


class MethodCall(Op):
    """`receiver.method(args)`: a method numba implements on arrays (`a.sum()`, `a.copy()`)."""

    TRAITS = WRITES  # before the rules are imported; `traits()` asks them per callee
    OPERANDS = (OperandDef("receiver"), OperandDef("args", ANY, variadic=True))

    def __init__(self, method: str, receiver: Value, args: Sequence[Value], type: Type,
                 kwnames: Sequence[str] = (), loc=UNKNOWN_LOC, hint=None):
        super().__init__((receiver, *args), type, loc, hint)
        self.method = method
        self.kwnames = tuple(kwnames)

    @property
    def positional(self) -> tuple:
        return self.args[:len(self.args) - len(self.kwnames)]

    @property
    def keywords(self) -> dict:
        return dict(zip(self.kwnames, self.args[len(self.args) - len(self.kwnames):]))

    def attributes(self) -> str:
        return "." + self.method

    def traits(self) -> Trait:
        return call_traits(self)  # per method, from its registration in moonlite.rules


class GetAttr(Op):
    """`value.name` for data attributes (`a.shape`, `a.size`, `a.T`, `a.ndim`)."""

    TRAITS = PURE | VIEW

    OPERANDS = (OperandDef("value"),)

    def __init__(self, value: Value, name: str, type: Type, loc=UNKNOWN_LOC, hint=None):
        super().__init__((value,), type, loc, hint)
        self.name = name

    def attributes(self) -> str:
        return "." + self.name

    def traits(self) -> Trait:
        return self.TRAITS | AXES_VIEW if self.name == "T" else self.TRAITS


# --- arrays, tuples, slices ------------------------------------------------------------------

class GetItem(Op):
    """`value[index]` on an array (element or view) or a homogeneous tuple."""

    TRAITS = VIEW

    OPERANDS = (OperandDef("value"), OperandDef("index", INDEX))

    def __init__(self, value: Value, index: Value, type: Type, loc=UNKNOWN_LOC, hint=None):
        super().__init__((value, index), type, loc, hint)

    def type_errors(self) -> list:
        if not isinstance(self.value.type, (ArrayType, TupleType)):
            return [f"getitem needs an array or tuple, got {self.value.type}"]
        return []


class SetItem(Op):
    """`target[index] = value`: writes into the array `target`."""

    TRAITS = WRITES

    OPERANDS = (OperandDef("target", ARRAY), OperandDef("index", INDEX), OperandDef("value"))
    RESULT = None

    def __init__(self, target: Value, index: Value, value: Value, loc=UNKNOWN_LOC):
        super().__init__((target, index, value), None, loc)

    def type_errors(self) -> list:
        if getattr(self.target.type, "readonly", False):
            return ["setitem on a read-only array"]
        return []


class TupleGetItem(Op):
    """`t[k]` for a constant k: the k-th element of a (possibly heterogeneous) tuple."""

    TRAITS = PURE

    OPERANDS = (OperandDef("tuple", TUPLE),)

    def __init__(self, tup: Value, index: int, loc=UNKNOWN_LOC, hint=None):
        elements = tup.type.elements if isinstance(tup.type, TupleType) else ()
        if not -len(elements) <= index < len(elements):
            raise IndexError(f"tuple index {index} out of range for {tup.type}")
        super().__init__((tup,), elements[index], loc, hint)
        self.index = index % len(elements)  # one index per entry: t[-1] is t[n - 1]

    def attributes(self) -> str:
        return f"[{self.index}]"

    def type_errors(self) -> list:
        elements = getattr(self.tuple.type, "elements", None)
        if elements is None:
            return []  # the schema check already reports the non-tuple operand
        if not -len(elements) <= self.index < len(elements):
            return [f"tuple index {self.index} out of range for {self.tuple.type}"]
        if self.result.type != elements[self.index]:
            return ["tuple element type does not match the result type"]
        return []


class BuildTuple(Op):
    TRAITS = PURE
    OPERANDS = (OperandDef("items", ANY, variadic=True),)
    RESULT = TUPLE
    MNEMONIC = "tuple"

    def __init__(self, items: Sequence[Value], loc=UNKNOWN_LOC, hint=None, named=None):
        """`named`: the numba type of the namedtuple built (None: a plain tuple)."""
        items = tuple(items)
        super().__init__(items, _tuple_type(tuple(v.type for v in items), named), loc, hint)

    def type_errors(self) -> list:
        named = getattr(self.result.type, "numba_type", None)
        if self.result.type != _tuple_type(tuple(v.type for v in self.items), named):
            return ["tuple type does not match its items"]
        return []


def _tuple_type(elements: tuple, named) -> TupleType:
    return TupleType(elements) if named is None else NamedTupleType(elements, named)


class BuildSlice(Op):
    """`start:stop:step`; absent parts are none-typed constants."""

    TRAITS = PURE

    OPERANDS = (OperandDef("start", SLICE_PART), OperandDef("stop", SLICE_PART),
                OperandDef("step", SLICE_PART))
    MNEMONIC = "slice"

    def __init__(self, start, stop, step, type: Type, loc=UNKNOWN_LOC, hint=None):
        super().__init__((start, stop, step), type, loc, hint)


# --- SSA and control flow --------------------------------------------------------------------

class Phi(Op):
    """Chooses the value that arrives from the predecessor control came from."""

    TRAITS = PURE | VIEW

    OPERANDS = (OperandDef("incoming_values", ANY, variadic=True),)

    def __init__(self, type: Type, incoming: Sequence = (), loc=UNKNOWN_LOC, hint=None):
        super().__init__((), type, loc, hint)
        self.incoming_blocks: tuple = ()
        for block, value in incoming:
            self.add_incoming(block, value)

    def add_incoming(self, block: Block, value: Value) -> None:
        """Used while a function is being built: back edges are known only after their blocks."""
        self.incoming_blocks = (*self.incoming_blocks, block)
        self.operands = (*self.operands, value)

    @property
    def incoming(self) -> tuple:
        return tuple(zip(self.incoming_blocks, self.operands))

    def value_from(self, block: Block) -> Value:
        return self.operands[self.incoming_blocks.index(block)]

    def type_errors(self) -> list:
        return [f"phi incoming value of type {v.type} differs from the phi's {self.result.type}"
                for v in self.operands if v.type != self.result.type
                and not _any_layout_accepts(self.result.type, v.type)]


class Jump(Terminator):
    TRAITS = Trait.NONE
    def __init__(self, target: Block, loc=UNKNOWN_LOC):
        super().__init__((), None, loc)
        self.target = target

    def successors(self) -> tuple:
        return (self.target,)


class Branch(Terminator):
    TRAITS = Trait.NONE
    OPERANDS = (OperandDef("cond", BOOL),)
    MNEMONIC = "br"

    def __init__(self, cond: Value, if_true: Block, if_false: Block, loc=UNKNOWN_LOC):
        super().__init__((cond,), None, loc)
        self.if_true = if_true
        self.if_false = if_false

    def successors(self) -> tuple:
        return (self.if_true, self.if_false)


class Return(Terminator):
    TRAITS = Trait.NONE
    OPERANDS = (OperandDef("value"),)
    MNEMONIC = "ret"

    def __init__(self, value: Value, loc=UNKNOWN_LOC):
        super().__init__((value,), None, loc)

    def type_errors(self) -> list:
        fn = self.block.function if self.block is not None else None
        if fn is not None and self.value.type != fn.return_type:
            return [f"returns {self.value.type} from a function declared to return "
                    f"{fn.return_type}"]
        return []


class Raise(Terminator):
    """Raise `exc_class(*args)`: lowers to the same exception numba would raise."""

    TRAITS = Trait.NONE

    OPERANDS = (OperandDef("args", ANY, variadic=True),)

    def __init__(self, exc_class, args: Sequence[Value] = (), loc=UNKNOWN_LOC):
        super().__init__(tuple(args), None, loc)
        self.exc_class = exc_class

    def attributes(self) -> str:
        return short_name(self.exc_class) if self.exc_class is not None else "<re-raise>"


def constant_value(value: Value, default=None) -> Optional[object]:
    """The Python value of `value` if a Constant op defines it, else `default`."""
    op = getattr(value, "op", None)
    return op.value if isinstance(op, Constant) else default


def is_constant(value: Value) -> bool:
    return isinstance(getattr(value, "op", None), Constant)


# --- mutable locals and tapes (what AD passes use to communicate across sweeps) ----------------

class LocalVar:
    """A named mutable slot of one type, like an LLVM alloca: AD passes keep adjoints and values
    the reverse sweep needs in these. Lowering makes it an ordinary numba variable, whose stack
    slot LLVM's mem2reg turns back into registers and phis."""

    def __init__(self, type, name: str):
        self.type = type
        self.name = name

    def __repr__(self) -> str:
        return f"<local {self.name}: {self.type}>"


class LoadLocal(Op):
    TRAITS = Trait.NONE
    OPERANDS = ()
    MNEMONIC = "load"

    def __init__(self, var: LocalVar, loc=UNKNOWN_LOC, hint=None):
        super().__init__((), var.type, loc, hint)
        self.var = var

    def attributes(self) -> str:
        return f"${self.var.name}"


class StoreLocal(Op):
    TRAITS = WRITES
    OPERANDS = (OperandDef("value"),)
    RESULT = None
    MNEMONIC = "store"

    def __init__(self, var: LocalVar, value: Value, loc=UNKNOWN_LOC):
        super().__init__((value,), None, loc)
        self.var = var

    def attributes(self) -> str:
        return f"${self.var.name}"

    def type_errors(self) -> list:
        if self.value.type != self.var.type and not _any_layout_accepts(self.var.type,
                                                                        self.value.type):
            return [f"stores {self.value.type} into local ${self.var.name} of type "
                    f"{self.var.type}"]
        return []


def _any_layout_accepts(var_type, value_type) -> bool:
    """A local of layout "A" holds arrays of any layout (numba unifies them to "A")."""
    return (isinstance(var_type, ArrayType) and isinstance(value_type, ArrayType)
            and var_type.layout == "A" and var_type.dtype == value_type.dtype
            and var_type.ndim == value_type.ndim)


class TapeNew(Op):
    """An empty tape (a stack) of `element_type` values: numba's built-in list."""

    TRAITS = ALLOCATES  # a fresh tape: two of them are never one

    OPERANDS = ()
    MNEMONIC = "tape.new"

    def __init__(self, element_type, loc=UNKNOWN_LOC, hint=None):
        super().__init__((), TapeType(element_type), loc, hint)
        self.element_type = element_type

    def attributes(self) -> str:
        return f"<{self.element_type}>"


class TapePush(Op):
    TRAITS = WRITES
    OPERANDS = (OperandDef("tape"), OperandDef("value"))
    RESULT = None
    MNEMONIC = "tape.push"

    def __init__(self, tape: Value, value: Value, loc=UNKNOWN_LOC):
        super().__init__((tape, value), None, loc)

    def type_errors(self) -> list:
        element = _tape_element(self.tape)
        if element != self.value.type and not _any_layout_accepts(element, self.value.type):
            return [f"pushes {self.value.type} onto a tape of {_tape_element(self.tape)}"]
        return []


class TapePop(Op):
    TRAITS = WRITES
    OPERANDS = (OperandDef("tape"),)
    MNEMONIC = "tape.pop"

    def __init__(self, tape: Value, loc=UNKNOWN_LOC, hint=None):
        super().__init__((tape,), _tape_element(tape), loc, hint)


class TapePeek(Op):
    """The value on top of a tape, left there (the pullback reads a kept value as often as it
    needs, and pops it once, where its definition is reversed)."""

    TRAITS = Trait.NONE

    OPERANDS = (OperandDef("tape"),)
    MNEMONIC = "tape.top"

    def __init__(self, tape: Value, loc=UNKNOWN_LOC, hint=None):
        super().__init__((tape,), _tape_element(tape), loc, hint)


def _tape_element(tape: Value):
    return tape.type.element if isinstance(tape.type, TapeType) else None
