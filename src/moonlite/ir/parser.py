"""Read the canonical text form of moonlite IR (`printer.py`) back into a `Function`.

`parse_function(str(fn))` prints as `fn` does and verifies where `fn` does, so pass tests can be
written as IR text in, IR text out. The grammar, one construct a line; `#` starts a comment, read
as the source location on a `func` or op line when it is `file.py:N`, ignored otherwise:

    function := "func" NAME "(" [VALUE ":" type {"," VALUE ":" type}] ")" "->" type
                ["boundscheck"] "{"   {LABEL ":"   {op}}   "}"
    op       := [VALUE "="] MNEMONIC body [":" type]     a type exactly when there is a result
    VALUE    := "%" name    LOCAL := "$" name    LABEL := bb0, bb1, ... or any identifier

    body, by mnemonic (DOTTED: a Python object's printed name, ARGS: VALUE or NAME=VALUE, ...)
      const LITERAL               global DOTTED                undef
      add ... ne ["checked"] VALUE, VALUE                      neg | pos | not | invert VALUE
      inplace OP= VALUE, VALUE    cast VALUE                   select VALUE, VALUE, VALUE
      call DOTTED(ARGS)           methodcall VALUE.NAME(ARGS)
      getattr .NAME VALUE         getitem VALUE, VALUE         setitem VALUE, VALUE, VALUE
      tuplegetitem [INT] VALUE    tuple VALUE, ...             slice VALUE, VALUE, VALUE
      phi [LABEL: VALUE], ...     jump LABEL                   br VALUE, LABEL, LABEL
      ret VALUE                   raise DOTTED VALUE, ...      raise <re-raise>
      load LOCAL                  store LOCAL VALUE
      tape.new <type>             tape.push VALUE, VALUE       tape.pop VALUE    tape.top VALUE

    type := float32 | float64 | intN | uintN | bool | complexN | none | slice
          | array(type, Nd, C|F|A[, readonly]) | tuple(type, ...) | tape<type> | opaque<numba type>
          | namedtuple<numba type>

LITERAL is what `repr` prints: numbers (`inf`, `nan`, complex), `True`, `False`, `None`, strings,
tuples of these, numpy scalars (`np.float32(0.5)`).

A value or block may be used on a line before the one that defines it: phis name values of
later blocks, and the printed block order need not follow dominance. A DOTTED name is looked up
in `namespace` (`namespace_of(fn)` gives a function's), then among `np`/`numpy` (whose `linalg`,
`fft` and `random` functions print as `np.NAME`), `math`, `cmath`, `operator` and builtins, then
in imported modules (`moonlite.ad.reverse.helpers.sum_to_shape_1d`, `_operator.getitem`), and last
by its final part in `namespace` (`helper` for `tests.test_x.test_f.<locals>.helper`).

Values come back with hints chosen so that the printer names each one as the text does: `%12`
had no hint, `%s.14` had the hint `s` where the printer would have added that suffix, any other
name is its own hint. What the text does not hold: an array constant's contents (refused), which
of numba's two slice types a `slice` is (the `slice` op's step says, phis take what comes in,
anything else has three members), the function's Python defaults and `py_func`, block hints, and
the directories of source files.
"""

from __future__ import annotations

import ast
import collections
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .._numba import types as nbt
from ..errors import UNKNOWN_LOC, MoonliteError, SourceLoc
from . import ops
from .core import Argument, Block, Function, Op
from .parser_names import Resolver
from .types import (ArrayType, ComplexType, FloatType, IntType, NoneType, OpaqueType, SliceType,
                    TapeType, TupleType, Type, boolean, from_numba, none, seen_opaque_type)


class ParseError(MoonliteError):
    """The text is not moonlite IR; the message names the line and column and shows them."""

    def __init__(self, message: str, line: int = 0, column: int = 0, source: str = ""):
        self.line, self.column = line, column
        text = f"line {line}, column {column}: {message}" if line else message
        if source:
            text += f"\n  {source}\n  {' ' * (column - 1)}^"
        super().__init__(text)


def parse_function(text: str, namespace: Optional[dict] = None) -> Function:
    """The one function `text` defines (the grammar is in the module docstring)."""
    functions = parse_functions(text, namespace)
    if len(functions) != 1:
        raise ParseError(f"expected one function, the text defines {len(functions)}")
    return functions[0]


def parse_functions(text: str, namespace: Optional[dict] = None) -> list:
    """Every function `text` defines, in order."""
    resolve = Resolver(namespace or {})
    return [_FunctionBuilder(f).build() for f in _read_functions(text.splitlines(), resolve)]


def parse_type(text: str) -> Type:
    """The moonlite type printed as `text` (`array(float64, 1d, C)`, `tuple(int64,)`, ...)."""
    c = _Cursor(text, 1)
    t = _type(c)
    c.expect_end()
    return t


def namespace_of(fn: Function) -> dict:
    """The Python objects `fn`'s calls, globals and raises use, under their printed names: what
    `namespace=` needs to read `fn`'s text back where a name does not resolve by itself (the
    `moonlite.f_fwd` rule a derived function calls, a helper defined inside a function)."""
    objects = {}
    for op in fn.ops():
        obj = {ops.Call: "callee", ops.GlobalRef: "obj", ops.Raise: "exc_class"}.get(type(op))
        if obj is not None and getattr(op, obj) is not None:
            objects[ops.short_name(getattr(op, obj))] = getattr(op, obj)
    return objects


# --- reading a line ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Pos:
    """Where something was written, to point at it in an error."""

    line: int
    pos: int
    source: str

    def error(self, message: str) -> ParseError:
        return ParseError(message, self.line, self.pos + 1, self.source.rstrip())


# a name used on a line: a value (`%x`), a block label, a local (`$adj0`)
_Ref = collections.namedtuple("_Ref", "name at")


_NAME = re.compile(r"[A-Za-z_]\w*")
_VALUE = re.compile(r"%[\w.$]+")
_LOCAL = re.compile(r"\$[\w.$]+")
_LABEL = re.compile(r"[A-Za-z_][\w.]*")
_LABEL_LINE = re.compile(r"\s*([A-Za-z_][\w.]*)\s*:\s*")
_DOTTED = re.compile(r"(?:[A-Za-z_]\w*|<\w+>)(?:\.(?:[A-Za-z_]\w*|<\w+>))*")
_MNEMONIC = re.compile(r"[a-z_][\w.]*")
_FUNC_NAME = re.compile(r"[^\s(]+")
_INT = re.compile(r"-?\d+")
_DIMS = re.compile(r"\d+d\b")
_LAYOUT = re.compile(r"[CFA]\b")
_INPLACE = re.compile(r"(\*\*|//|<<|>>|[-+*/%@&|^])=")
_INPLACE_OPS = {b.SYMBOL + "=": b for b in ops.BINARY_OPS}
_KEYWORD = re.compile(r"([A-Za-z_]\w*)\s*=")
_DIGITS = r"(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)"
_NUMBER = re.compile(rf"[-+]?{_DIGITS}(?:[-+]{_DIGITS}j|j)?(?![\w.])")
_LOCATION = re.compile(r"(.+):(\d+)")
_STRING = re.compile(r"""[bB]?(?:'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""")


class _Cursor:
    """Reads one line left to right, up to `end` (where its comment starts)."""

    def __init__(self, text: str, lineno: int, end: Optional[int] = None):
        self.text, self.lineno, self.pos = text, lineno, 0
        self.end = len(text) if end is None else end

    def here(self) -> _Pos:
        while self.pos < self.end and self.text[self.pos] in " \t":
            self.pos += 1
        return _Pos(self.lineno, self.pos, self.text)

    def error(self, message: str, at: Optional[_Pos] = None) -> ParseError:
        return (at or self.here()).error(message)

    def at_end(self) -> bool:
        return self.here().pos >= self.end

    def peek(self, s: str) -> bool:
        at = self.here().pos
        after = at + len(s)
        # a word is seen only whole: `checked`, not the start of `checked_sum`
        whole = not s[-1].isalnum() or after >= self.end or not (
            self.text[after].isalnum() or self.text[after] == "_")
        return after <= self.end and self.text.startswith(s, at) and whole

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: Optional[str] = None) -> None:
        if not self.accept(s):
            raise self.error(f"expected {what or repr(s)}, found {self.found()}")

    def match(self, pattern: re.Pattern) -> Optional[str]:
        m = pattern.match(self.text, self.here().pos, self.end)
        if m is not None:
            self.pos = m.end()
        return m and m.group(0)

    def take(self, pattern: re.Pattern, what: str) -> str:
        text = self.match(pattern)
        if text is None:
            raise self.error(f"expected {what}, found {self.found()}")
        return text

    def expect_end(self) -> None:
        if not self.at_end():
            raise self.error(f"unexpected {self.found()}")

    def found(self) -> str:
        return "the end of the line" if self.at_end() else \
            repr(self.text[self.pos:self.end].split()[0][:24])

    def raw_until_closing(self, opening: str, closing: str) -> str:
        """The text up to the `closing` that matches an `opening` just read (nested pairs and
        quoted strings skipped); the cursor moves past that `closing`."""
        depth, start, quote, i = 1, self.pos, None, self.pos
        while i < self.end:
            ch = self.text[i]
            if quote:
                quote = None if ch == quote else quote
                i += 2 if ch == "\\" else 1
                continue
            quote = ch if ch in "'\"" else None
            depth += (ch == opening) - (ch == closing)
            if depth == 0:
                self.pos = i + 1
                return self.text[start:i]
            i += 1
        raise self.error(f"no closing {closing!r}")


_CODE = re.compile(r"""(?:[^'"#]|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")*""")


def _code_end(line: str) -> int:
    """Where the line's comment starts (a `#` outside quotes), or its length."""
    end = _CODE.match(line).end()
    return end if line[end:end + 1] == "#" else len(line)


def _location(comment: str) -> SourceLoc:
    m = _LOCATION.fullmatch(comment.strip())
    return SourceLoc(m.group(1), int(m.group(2))) if m else UNKNOWN_LOC


def _ref(c: _Cursor, pattern: re.Pattern, what: str, sigil: str = "") -> _Ref:
    at = c.here()
    return _Ref(c.take(pattern, what)[len(sigil):], at)


def _value_ref(c: _Cursor) -> _Ref:
    return _ref(c, _VALUE, "a value (%name)", "%")


def _items(c: _Cursor, read: Callable, closing: str = ")") -> list:
    """What `read` reads, again and again, separated by commas, up to `closing`."""
    items = []
    while not c.accept(closing):
        items.append(read())
        if not c.peek(closing):
            c.expect(",", f"',' or {closing!r}")
    return items


def _value_list(c: _Cursor) -> list:
    """Comma-separated values, possibly none."""
    refs = [_value_ref(c)] if c.peek("%") else []
    while refs and c.accept(","):
        refs.append(_value_ref(c))
    return refs


# --- types ------------------------------------------------------------------------------------

_NAMED_TYPES = {"bool": boolean, "none": none, "slice": SliceType(3)}
_SIZED_TYPES = {"float": FloatType, "complex": ComplexType, "int": IntType,
                "uint": lambda bits: IntType(bits, False)}
_SIZED_TYPE = re.compile(r"(float)(16|32|64)|(u?int)(8|16|32|64)|(complex)(64|128)")


def _type(c: _Cursor) -> Type:
    at = c.here()
    name = c.take(_NAME, "a type")
    if name in _NAMED_TYPES:
        return _NAMED_TYPES[name]
    sized = _SIZED_TYPE.fullmatch(name)
    if sized:
        kind, bits = [g for g in sized.groups() if g is not None]
        return _SIZED_TYPES[kind](int(bits))
    if name == "array":
        c.expect("(")
        dtype = _type(c)
        c.expect(",")
        ndim = int(c.take(_DIMS, "the dimension count (1d, 2d, ...)")[:-1])
        c.expect(",")
        layout = c.take(_LAYOUT, "a layout (C, F or A)")
        readonly = c.accept(",")
        if readonly:
            c.expect("readonly")
        c.expect(")")
        return ArrayType(dtype, ndim, layout, readonly)
    if name == "tuple":
        c.expect("(")
        return TupleType(tuple(_items(c, lambda: _type(c))))
    if name == "tape":
        c.expect("<")
        element = _type(c)
        c.expect(">")
        return TapeType(element)
    if name in ("opaque", "namedtuple"):  # both print the numba type they keep
        c.expect("<")
        text = c.raw_until_closing("<", ">")
        numba_type = _numba_type(text)
        if numba_type is None:
            raise c.error(f"unknown numba type {text!r} (the opaque types read back are those "
                          f"numba names, and those this process has printed)", at)
        return OpaqueType(numba_type) if name == "opaque" else from_numba(numba_type)
    raise c.error(f"unknown type {name!r}", at)


_NUMBA_WRAPPERS = {"class": nbt.NumberClass, "DType": nbt.DType, "ListType": nbt.ListType}
_NUMBA_WRAPPED = re.compile(r"(class|DType|ListType)[(\[](.*)[)\]]")


def _numba_type(text: str):
    """The numba type printed as `text`, or None (numba types have no parser of their own)."""
    seen = seen_opaque_type(text)
    named = getattr(nbt, text, None)
    if seen is not None or isinstance(named, nbt.Type):
        return seen or named
    wrapped = _NUMBA_WRAPPED.fullmatch(text)
    if wrapped:
        try:
            return _NUMBA_WRAPPERS[wrapped.group(1)](parse_type(wrapped.group(2)).to_numba())
        except ParseError:
            return None
    return None


# --- constants ---------------------------------------------------------------------------------

def _literal(c: _Cursor, resolve):
    """A constant as `repr` prints it."""
    at = c.here()
    ch = c.text[c.pos:c.pos + 1]
    if ch in ("'", '"') or (ch in ("b", "B") and c.text[c.pos + 1:c.pos + 2] in ("'", '"')):
        return _string(c)
    if c.accept("("):  # a tuple, or a complex number: (1+2j)
        items = _items(c, lambda: _literal(c, resolve))
        single = len(items) == 1 and c.text[:c.pos - 1].rstrip()[-1] != ","
        return items[0] if single else tuple(items)
    if ch == "<":
        raise c.error("an array constant prints only its shape: its contents cannot be read "
                      "back (build it with Builder.const)")
    number = c.match(_NUMBER)
    if number is not None:
        if re.fullmatch(r"[-+]?\d+", number):
            return int(number)
        return complex(number) if number.endswith("j") else float(number)
    name = c.take(_DOTTED, "a constant")
    if name in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[name]
    obj = resolve(name, at)
    if isinstance(obj, type) and issubclass(obj, np.generic) and c.accept("("):
        value = obj(_literal(c, resolve))  # a numpy scalar: np.float32(0.5)
        c.expect(")")
        return value
    if isinstance(obj, np.generic):  # np.True_
        return obj
    raise c.error(f"{name} is not a constant", at)


def _string(c: _Cursor):
    at = c.here()
    text = c.match(_STRING)
    if text is None:
        raise c.error("unterminated string")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise c.error(f"malformed string: {exc}", at) from None


# --- the syntax of functions and ops -----------------------------------------------------------

@dataclass
class _OpText:
    """One op line read, not built: names stand where values, blocks and locals will be."""

    at: _Pos
    mnemonic: str
    form: "_Form"
    result: Optional[_Ref] = None
    type: Optional[Type] = None
    type_at: Optional[_Pos] = None
    operands: list = field(default_factory=list)  # _Ref of values, in operand order
    labels: list = field(default_factory=list)    # _Ref of blocks (jump, br, phi incoming)
    attrs: dict = field(default_factory=dict)     # what else the body says
    loc: SourceLoc = UNKNOWN_LOC
    hint: Optional[str] = None


@dataclass
class _FunctionText:
    at: _Pos
    name: str
    args: list           # (_Ref, Type)
    return_type: Type
    boundscheck: bool
    loc: SourceLoc
    blocks: list = field(default_factory=list)  # (_Ref of the label, [_OpText])


def _read_functions(lines: list, resolve) -> list:
    functions, current = [], None
    for lineno, line in enumerate(lines, 1):
        end = _code_end(line)
        code, comment, c = line[:end].strip(), line[end + 1:], _Cursor(line, lineno, end)
        label = _LABEL_LINE.fullmatch(line, 0, end)
        if not code:
            continue
        if current is None:
            current = _header(c, _location(comment))
            functions.append(current)
        elif code == "}":
            current = None
        elif label:
            at = _Pos(lineno, label.start(1), line)
            current.blocks.append((_Ref(label.group(1), at), []))
        elif not current.blocks:
            raise c.error("an op before the first block label")
        else:
            op = _op(c, resolve)
            op.loc = _location(comment)
            current.blocks[-1][1].append(op)
    if current is not None:
        raise current.at.error(f"function {current.name} is not closed by a '}}' line")
    return functions


def _header(c: _Cursor, loc: SourceLoc) -> _FunctionText:
    at = c.here()
    c.expect("func")
    name = c.take(_FUNC_NAME, "the function's name")
    c.expect("(")
    args = _items(c, lambda: _argument(c))
    c.expect("->")
    return_type = _type(c)
    boundscheck = c.accept("boundscheck")
    c.expect("{")
    c.expect_end()
    return _FunctionText(at, name, args, return_type, boundscheck, loc)


def _argument(c: _Cursor) -> tuple:
    ref = _value_ref(c)
    c.expect(":")
    return ref, _type(c)


def _op(c: _Cursor, resolve) -> _OpText:
    result = _value_ref(c) if c.peek("%") else None
    if result is not None:
        c.expect("=")
    at = c.here()
    mnemonic = c.take(_MNEMONIC, "an op")
    form = _FORMS.get(mnemonic)
    if form is None:
        raise c.error(f"unknown op {mnemonic!r}", at)
    op = _OpText(at, mnemonic, form, result)
    for item in form.syntax.split():
        reader = _READERS.get(item)
        if reader is None:
            c.expect(item)  # punctuation
        else:
            reader(c, op, resolve)
    has_result = form.cls.RESULT is not None
    if has_result and result is None:
        raise c.error(f"{mnemonic} has a result: write '%name = {mnemonic} ... : type'", at)
    if result is not None and not has_result:
        raise c.error(f"{mnemonic} has no result", result.at)
    if has_result:
        c.expect(":", "':' and the result type")
        op.type_at = c.here()
        op.type = _type(c)
    c.expect_end()
    return op


# --- what each part of an op's body reads into its _OpText -------------------------------------

def _read_arguments(c, op, resolve):
    """`(%a, %b, dtype=%c)`: positional values, then keyword ones."""
    kwnames = []

    def argument():
        keyword = c.match(_KEYWORD)
        if keyword:
            kwnames.append(keyword.rstrip("= "))
        elif kwnames:
            raise c.error("a positional argument after a keyword argument")
        op.operands.append(_value_ref(c))
    c.expect("(")
    _items(c, argument)
    op.attrs["kwnames"] = tuple(kwnames)


def _read_method(c, op, resolve):
    ref = _value_ref(c)  # the value's pattern takes the method too: %a.19.sum
    receiver, dot, method = ref.name.rpartition(".")
    if not (dot and receiver and _NAME.fullmatch(method)):
        raise ref.at.error("expected '%value.method(...)'")
    op.operands.append(_Ref(receiver, ref.at))
    op.attrs["method"] = method


def _read_incoming(c, op, resolve):
    while c.accept("["):
        op.labels.append(_ref(c, _LABEL, "a block label"))
        c.expect(":")
        op.operands.append(_value_ref(c))
        c.expect("]")
        if not c.accept(","):
            break


def _object(c: _Cursor, resolve):
    at = c.here()
    return resolve(c.take(_DOTTED, "a Python name"), at)


def _attr(key: str, read: Callable) -> Callable:
    def reader(c, op, resolve):
        op.attrs[key] = read(c, resolve)
    return reader


_READERS = {
    "VALUE": lambda c, op, resolve: op.operands.append(_value_ref(c)),
    "VALUES": lambda c, op, resolve: op.operands.extend(_value_list(c)),
    "LABEL": lambda c, op, resolve: op.labels.append(_ref(c, _LABEL, "a block label")),
    "INCOMING": _read_incoming,
    "ARGS": _read_arguments,
    "METHOD": _read_method,
    "OBJECT": _attr("obj", _object),
    "EXCEPTION": _attr("exc", lambda c, resolve: None if c.accept("<re-raise>")
                       else _object(c, resolve)),
    "INPLACE": _attr("binop", lambda c, resolve: _INPLACE_OPS[c.take(_INPLACE, "an in-place "
                                                                       "operator (+=, ...)")]),
    "LITERAL": _attr("value", _literal),
    "CHECKED": _attr("checked", lambda c, resolve: c.accept("checked")),
    "NAME": _attr("name", lambda c, resolve: c.take(_NAME, "a name")),
    "INDEX": _attr("index", lambda c, resolve: int(c.take(_INT, "an index"))),
    "LOCAL": _attr("local", lambda c, resolve: _ref(c, _LOCAL, "a local ($name)", "$")),
    "TYPE": _attr("element", lambda c, resolve: _type(c)),
}


# --- how each op is built from its _OpText and its operands' values ----------------------------

@dataclass(frozen=True)
class _Form:
    cls: type
    syntax: str      # the body: _READERS' names and punctuation, separated by blanks
    make: Callable   # (_OpText, [Value], _FunctionBuilder) -> Op


def _take(op: _OpText, values: list, count: int) -> list:
    if len(values) != count:
        raise op.at.error(f"{op.mnemonic} takes {count} operand(s), found {len(values)}")
    return values


def _make_slice(op, values, fb):
    start, stop, step = _take(op, values, 3)
    # numba's two slice types print alike: a none step makes the builder's two-member slice
    members = 2 if isinstance(step.type, NoneType) else 3
    return ops.BuildSlice(start, stop, step, SliceType(members), op.loc, op.hint)


def _binary_form(cls) -> _Form:
    return _Form(cls, "CHECKED VALUES", lambda op, v, fb: cls(
        *_take(op, v, 2), op.type, op.loc, op.hint, checked=op.attrs["checked"]))


def _unary_form(cls) -> _Form:
    return _Form(cls, "VALUES", lambda op, v, fb: cls(*_take(op, v, 1), op.type, op.loc,
                                                      op.hint))


_FORMS = {
    "const": _Form(ops.Constant, "LITERAL", lambda op, v, fb: ops.Constant(
        op.attrs["value"], op.type, op.loc, op.hint)),
    "undef": _Form(ops.Undef, "", lambda op, v, fb: ops.Undef((), op.type, op.loc, op.hint)),
    "global": _Form(ops.GlobalRef, "OBJECT", lambda op, v, fb: ops.GlobalRef(
        op.attrs["obj"], op.type, op.loc, op.hint)),
    "inplace": _Form(ops.InplaceBinary, "INPLACE VALUES", lambda op, v, fb: ops.InplaceBinary(
        op.attrs["binop"], *_take(op, v, 2), op.loc, op.hint)),
    "cast": _unary_form(ops.Cast),
    "select": _Form(ops.Select, "VALUES", lambda op, v, fb: ops.Select(
        *_take(op, v, 3), op.loc, op.hint)),
    "call": _Form(ops.Call, "OBJECT ARGS", lambda op, v, fb: ops.Call(
        op.attrs["obj"], v, op.type, op.attrs["kwnames"], op.loc, op.hint)),
    "methodcall": _Form(ops.MethodCall, "METHOD ARGS", lambda op, v, fb: ops.MethodCall(
        op.attrs["method"], v[0], v[1:], op.type, op.attrs["kwnames"], op.loc, op.hint)),
    "getattr": _Form(ops.GetAttr, ". NAME VALUES", lambda op, v, fb: ops.GetAttr(
        *_take(op, v, 1), op.attrs["name"], op.type, op.loc, op.hint)),
    "getitem": _Form(ops.GetItem, "VALUES", lambda op, v, fb: ops.GetItem(
        *_take(op, v, 2), op.type, op.loc, op.hint)),
    "setitem": _Form(ops.SetItem, "VALUES", lambda op, v, fb: ops.SetItem(
        *_take(op, v, 3), op.loc)),
    "tuplegetitem": _Form(ops.TupleGetItem, "[ INDEX ] VALUES", lambda op, v, fb:
                          ops.TupleGetItem(*_take(op, v, 1), op.attrs["index"], op.loc, op.hint)),
    "tuple": _Form(ops.BuildTuple, "VALUES", lambda op, v, fb: ops.BuildTuple(
        v, op.loc, op.hint, named=getattr(op.type, "numba_type", None))),
    "slice": _Form(ops.BuildSlice, "VALUES", _make_slice),
    "phi": _Form(ops.Phi, "INCOMING", lambda op, v, fb: ops.Phi(
        op.type, (), op.loc, op.hint)),
    "jump": _Form(ops.Jump, "LABEL", lambda op, v, fb: ops.Jump(
        fb.block(op.labels[0]), op.loc)),
    "br": _Form(ops.Branch, "VALUE , LABEL , LABEL", lambda op, v, fb: ops.Branch(
        *v, *map(fb.block, op.labels), op.loc)),
    "ret": _Form(ops.Return, "VALUES", lambda op, v, fb: ops.Return(*_take(op, v, 1), op.loc)),
    "raise": _Form(ops.Raise, "EXCEPTION VALUES", lambda op, v, fb: ops.Raise(
        op.attrs["exc"], v, op.loc)),
    "load": _Form(ops.LoadLocal, "LOCAL", lambda op, v, fb: ops.LoadLocal(
        fb.local(op.attrs["local"]), op.loc, op.hint)),
    "store": _Form(ops.StoreLocal, "LOCAL VALUES", lambda op, v, fb: ops.StoreLocal(
        fb.local(op.attrs["local"], *_take(op, v, 1)), *v, op.loc)),
    "tape.new": _Form(ops.TapeNew, "< TYPE >", lambda op, v, fb: ops.TapeNew(
        op.attrs["element"], op.loc, op.hint)),
    "tape.push": _Form(ops.TapePush, "VALUES", lambda op, v, fb: ops.TapePush(
        *_take(op, v, 2), op.loc)),
    "tape.pop": _Form(ops.TapePop, "VALUES", lambda op, v, fb: ops.TapePop(
        *_take(op, v, 1), op.loc, op.hint)),
    "tape.top": _Form(ops.TapePeek, "VALUES", lambda op, v, fb: ops.TapePeek(
        *_take(op, v, 1), op.loc, op.hint)),
    **{cls.mnemonic(): _binary_form(cls) for cls in ops.BINARY_OPS},
    **{cls.mnemonic(): _unary_form(cls) for cls in ops.UNARY_OPS},
}


# --- building the function -----------------------------------------------------------------------

class _HintRecovery:
    """Chooses hints so that the printer's namer, naming values in the order of the text, gives
    them the names of the text: `%12` had no hint, `%s.14` had the hint `s` where the namer
    would have added that suffix, any other name is its own hint."""

    def __init__(self):
        self.used: set = set()
        self.counter = 0

    def hint_for(self, name: str, allow_none: bool = True) -> Optional[str]:
        candidates = [None] if allow_none and name.isdigit() else []
        base, dot, suffix = name.rpartition(".")
        if dot and base and suffix.isdigit():
            candidates.append(base)
        chosen = name  # the namer keeps a hint nobody has used, and this name is new
        for hint in candidates:
            printed, counter = self._fresh(hint)
            if printed == name:
                chosen, self.counter = hint, counter
                break
        self.used.add(name)
        return chosen

    def _fresh(self, hint: Optional[str]) -> tuple:
        """What `printer.Namer._fresh` would give, and its counter afterwards."""
        if hint and hint not in self.used:
            return hint, self.counter
        counter = self.counter
        while True:
            name = f"{hint}.{counter}" if hint else str(counter)
            counter += 1
            if name not in self.used:
                return name, counter


class _FunctionBuilder:
    def __init__(self, text: _FunctionText):
        self.text = text
        self.op_texts = [op for _, body in text.blocks for op in body]
        self.blocks: dict = {}
        self.values: dict = {}
        self.locals: dict = {}

    def build(self) -> Function:
        t = self.text
        self._check_names()
        hints = _HintRecovery()
        args = [Argument(typ, i, hints.hint_for(ref.name, allow_none=False))
                for i, (ref, typ) in enumerate(t.args)]
        for op in self.op_texts:
            if op.result is not None:
                op.hint = hints.hint_for(op.result.name)
        fn = Function(t.name, args, t.return_type, loc=t.loc, boundscheck=t.boundscheck)
        self.values = {ref.name: arg for (ref, _), arg in zip(t.args, args)}
        for label, _ in t.blocks:
            self.blocks[label.name] = fn.add_block(Block())
        self._declare_locals()
        built = self._build_ops()
        for label, body in t.blocks:
            for op in body:
                self.blocks[label.name].append(built[id(op)])
        self._connect_phis(built)
        return fn

    def block(self, ref: _Ref) -> Block:
        return self.blocks[ref.name]

    def local(self, ref: _Ref, stored=None) -> ops.LocalVar:
        var = self.locals[ref.name]
        var.type = var.type or stored.type  # never loaded: it holds what is stored into it
        return var

    def _check_names(self) -> None:
        """Each value and label defined once, and each one used defined somewhere."""
        defined, labels = set(), set()
        results = [op.result for op in self.op_texts if op.result is not None]
        for ref in [r for r, _ in self.text.args] + results:
            if ref.name in defined:
                raise ref.at.error(f"value %{ref.name} is defined twice")
            defined.add(ref.name)
        for ref, _ in self.text.blocks:
            if ref.name in labels:
                raise ref.at.error(f"block {ref.name} is defined twice")
            labels.add(ref.name)
        for op in self.op_texts:
            for ref in op.operands:
                if ref.name not in defined:
                    raise ref.at.error(f"unknown value %{ref.name}")
            for ref in op.labels:
                if ref.name not in labels:
                    raise ref.at.error(f"unknown block {ref.name}")

    def _declare_locals(self) -> None:
        """A local has the type its loads give (see `local` for one never loaded)."""
        for op in self.op_texts:
            ref = op.attrs.get("local")
            var = ref and self.locals.setdefault(ref.name, ops.LocalVar(None, ref.name))
            if var is None or op.form.cls is not ops.LoadLocal:
                continue
            if var.type is not None and str(var.type) != str(op.type):
                raise op.type_at.error(f"local ${ref.name} was loaded as {var.type} before")
            var.type = var.type or op.type

    def _build_ops(self) -> dict:
        """Every op, each once its operands exist; phis first, as they take their incoming
        values at the end (so loops make no cycle). Returns id(_OpText) -> Op."""
        built = {id(op): self._make(op, []) for op in self.op_texts if op.form.cls is ops.Phi}
        waiting = collections.defaultdict(list)  # value name -> ops that need it
        missing, ready = {}, collections.deque()
        for op in self.op_texts:
            if op.form.cls is not ops.Phi:
                missing[id(op)] = {ref.name for ref in op.operands} - self.values.keys()
                for name in missing[id(op)]:
                    waiting[name].append(op)
                if not missing[id(op)]:
                    ready.append(op)
        while ready:
            op = ready.popleft()
            built[id(op)] = self._make(op, [self.values[ref.name] for ref in op.operands])
            for other in waiting.pop(op.result.name if op.result else None, ()):
                missing[id(other)].discard(op.result.name)
                if not missing[id(other)]:
                    ready.append(other)
        for op in self.op_texts:
            if id(op) not in built:
                name = min(missing[id(op)])
                raise op.at.error(f"%{name} is needed to define itself (through this op)")
        return built

    def _make(self, text: _OpText, values: list) -> Op:
        try:
            op = text.form.make(text, values, self)
        except (TypeError, ValueError, IndexError) as exc:
            raise text.at.error(f"cannot build {text.mnemonic}: {exc}") from None
        if op.result is not None:
            if str(op.result.type) != str(text.type):
                raise text.type_at.error(f"{text.mnemonic} gives {op.result.type}, the text "
                                         f"says {text.type}")
            self.values[text.result.name] = op.result
        return op

    def _connect_phis(self, built: dict) -> None:
        phis = []
        for op in self.op_texts:
            if op.form.cls is ops.Phi:
                phis.append(built[id(op)])
                for label, ref in zip(op.labels, op.operands):
                    phis[-1].add_incoming(self.block(label), self.values[ref.name])
        # a phi printed `slice` has the slice type of what comes in (both print alike)
        for phi in phis:
            incoming = [v.type for v in phi.operands]
            alike = [t for t in incoming if str(t) == str(phi.result.type)]
            if phi.result.type not in incoming and alike:
                phi.result.type = alike[0]
