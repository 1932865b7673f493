"""The skeleton of moonlite IR: values, operations with declared schemas, blocks, functions.

moonlite IR is typed SSA in basic blocks. A `Value` is defined exactly once, either as a function
`Argument` or as the result of an `Op`; it carries its `Type`. Values and blocks are identified by
object identity: names and numbers appear only when the printer needs them (`printer.py`).

An op class declares its operands (`OPERANDS`, each with a type constraint) and whether it
produces a result (`RESULT`, a constraint, or None). The verifier checks every op against its
declaration, so a pass that builds an ill-typed op is caught at the op, not in numba's typer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable, ClassVar, Iterator, Optional, Sequence

from ..errors import UNKNOWN_LOC, SourceLoc
from .traits import Trait
from .types import (ArrayType, BoolType, ComplexType, FloatType, IntType, SliceType, TupleType,
                    Type)

_ids = itertools.count()


class Value:
    """An SSA value: defined once, typed, identified by identity (never by name)."""

    __slots__ = ("type", "hint", "_id")

    def __init__(self, type: Type, hint: Optional[str] = None):
        if not isinstance(type, Type):
            raise TypeError(f"IR values need a moonlite Type, got {type!r}")
        self.type = type
        self.hint = hint
        self._id = next(_ids)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.hint or ''}#{self._id}: {self.type}>"


class Argument(Value):
    __slots__ = ("index",)

    def __init__(self, type: Type, index: int, name: str):
        super().__init__(type, name)
        self.index = index

    @property
    def name(self) -> str:
        return self.hint


class OpResult(Value):
    __slots__ = ("op",)

    def __init__(self, type: Type, op: "Op", hint: Optional[str] = None):
        super().__init__(type, hint)
        self.op = op


# --- operand constraints ---------------------------------------------------------------------

@dataclass(frozen=True)
class Constraint:
    """A named predicate on types, used in op schemas and shown in verifier messages."""

    name: str
    test: Callable[[Type], bool]

    def __call__(self, t: Type) -> bool:
        return self.test(t)


def _is_number(t: Type) -> bool:
    return isinstance(t, (FloatType, IntType, BoolType, ComplexType))


def _is_index(t: Type) -> bool:
    if isinstance(t, TupleType):
        return all(_is_index(e) for e in t.elements)
    return isinstance(t, (IntType, BoolType, SliceType)) or (
        isinstance(t, ArrayType) and isinstance(t.dtype, (IntType, BoolType)))


ANY = Constraint("any", lambda t: True)
NUMBER = Constraint("number", _is_number)
NUMERIC = Constraint("number or numeric array",
                     lambda t: _is_number(t) or (isinstance(t, ArrayType) and _is_number(t.dtype)))
BOOL = Constraint("bool", lambda t: isinstance(t, BoolType))
INTEGER = Constraint("integer", lambda t: isinstance(t, IntType))
ARRAY = Constraint("array", lambda t: isinstance(t, ArrayType))
TUPLE = Constraint("tuple", lambda t: isinstance(t, TupleType))
INDEX = Constraint("index (integer, slice, integer array or tuple of them)", _is_index)
SLICE_PART = Constraint("integer or none",
                        lambda t: isinstance(t, IntType) or type(t).__name__ == "NoneType")


@dataclass(frozen=True)
class OperandDef:
    name: str
    constraint: Constraint = ANY
    variadic: bool = False


# --- operations ------------------------------------------------------------------------------

class Op:
    """Base of all operations. Subclasses declare OPERANDS and RESULT and add typed attributes."""

    OPERANDS: ClassVar[tuple] = ()
    RESULT: ClassVar[Optional[Constraint]] = ANY
    IS_TERMINATOR: ClassVar[bool] = False
    # How the printer names the op; defaults to the lower-cased class name.
    MNEMONIC: ClassVar[Optional[str]] = None
    # What the op does besides computing its result (`traits.py`); an op class that declares
    # nothing is taken to write memory.
    TRAITS: ClassVar[Trait] = Trait.WRITES

    def __init__(self, operands: Sequence[Value], result_type: Optional[Type] = None,
                 loc: SourceLoc = UNKNOWN_LOC, hint: Optional[str] = None):
        self.operands = tuple(operands)
        for v in self.operands:
            if not isinstance(v, Value):
                raise TypeError(f"{type(self).__name__} operand is not an IR value: {v!r}")
        self.loc = loc
        self.block: Optional[Block] = None
        if self.RESULT is None:
            if result_type is not None:
                raise TypeError(f"{type(self).__name__} produces no result")
            self.result = None
        else:
            if result_type is None:
                raise TypeError(f"{type(self).__name__} needs a result type")
            self.result = OpResult(result_type, self, hint)

    def traits(self) -> Trait:
        """What this op does besides computing its result (the class's `TRAITS`; calls answer
        per callee)."""
        return self.TRAITS

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        # Named accessors for operands: `op.lhs` instead of `op.operands[0]`.
        for i, odef in enumerate(cls.OPERANDS):
            if odef.name in cls.__dict__:
                continue
            if odef.variadic:
                setattr(cls, odef.name, property(lambda self, i=i: self.operands[i:]))
            else:
                setattr(cls, odef.name, property(lambda self, i=i: self.operands[i]))

    @classmethod
    def mnemonic(cls) -> str:
        return cls.MNEMONIC or cls.__name__.lower()

    def attributes(self) -> str:
        """Non-operand data, as the printer shows it between the mnemonic and the operands."""
        return ""

    def type_errors(self) -> list:
        """Op-specific type rules beyond the schema; each returned string is a verifier error."""
        return []

    def successors(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return f"<{_installed.format_op(self)}>"


class Terminator(Op):
    RESULT = None
    IS_TERMINATOR = True


# --- blocks and functions --------------------------------------------------------------------

class Block:
    """A basic block: phis first, then ordinary ops, then exactly one terminator."""

    _labels = itertools.count()

    def __init__(self, hint: Optional[str] = None):
        self.ops: list = []
        self.hint = hint
        self.function: Optional[Function] = None
        self._id = next(Block._labels)

    def append(self, op: Op) -> Op:
        op.block = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Op) -> Op:
        op.block = self
        self.ops.insert(index, op)
        return op

    @property
    def terminator(self) -> Optional[Op]:
        if self.ops and self.ops[-1].IS_TERMINATOR:
            return self.ops[-1]
        return None

    @property
    def phis(self) -> list:
        phi = _installed.phi_class
        return list(itertools.takewhile(lambda op: isinstance(op, phi), self.ops))

    def successors(self) -> tuple:
        term = self.terminator
        return term.successors() if term is not None else ()

    def __repr__(self) -> str:
        return f"<Block {self.hint or ''}#{self._id}>"


class Function:
    """A moonlite IR function: typed arguments, a return type, blocks (the first is the entry).

    `py_func` is the Python function the IR was captured from (None for derived code); the
    printer uses it to show source lines, and lowering copies its argument names and defaults.
    """

    def __init__(self, name: str, args: Sequence[Argument], return_type: Type,
                 py_func=None, loc: SourceLoc = UNKNOWN_LOC, arg_defaults: tuple = (),
                 boundscheck: bool = False):
        self.name = name
        # compile with numba's bounds checking: the primal was (an index out of range then
        # raises IndexError in derived code too, instead of reading or writing out of bounds)
        self.boundscheck = boundscheck
        self.args = list(args)
        self.return_type = return_type
        self.blocks: list = []
        self.py_func = py_func
        self.loc = loc
        # Python defaults of the trailing arguments, kept so the lowered callable can be called
        # exactly like the original.
        self.arg_defaults = tuple(arg_defaults)

    @property
    def entry(self) -> Block:
        return self.blocks[0]

    def add_block(self, block: Block) -> Block:
        block.function = self
        self.blocks.append(block)
        return block

    def ops(self) -> Iterator[Op]:
        for block in self.blocks:
            yield from block.ops

    @property
    def argtypes(self) -> tuple:
        return tuple(a.type for a in self.args)

    def __str__(self) -> str:
        return _installed.format_function(self)

    def __repr__(self) -> str:
        return str(self)


# --- what core uses of the modules built on it ------------------------------------------------
# ops.py (the op classes, Phi among them) and printer.py import this module, so this module does
# not import them back: `ir/__init__` installs what it needs of them once they are loaded, and
# imports inside ir/ run one way (core below ops below printer).

_installed = SimpleNamespace(
    phi_class=None,  # `isinstance(op, None)` fails loudly if it was never installed
    format_op=lambda op: type(op).__name__,
    format_function=lambda fn: f"func {fn.name}")


def install(phi_class: type, format_op: Callable, format_function: Callable) -> None:
    """Give core the op class Phi (for `Block.phis`) and the printer (for `repr` and `str`)."""
    _installed.phi_class = phi_class
    _installed.format_op = format_op
    _installed.format_function = format_function
