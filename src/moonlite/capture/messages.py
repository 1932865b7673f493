"""The words of the importer's refusals: which construct an ill-typed op is, and what to do."""

from __future__ import annotations

from .. import _numba as nb
from ..ir.types import ArrayType, OpaqueType, is_record

nbt = nb.types


CONTAINER_HINT = ("pass a numpy array (or a tuple) instead: moonlite follows derivatives through "
                  "arrays and tuples, not through containers")


def is_container(t) -> bool:
    return isinstance(t, OpaqueType) and isinstance(
        t.numba_type, (nbt.ListType, nbt.DictType, nbt.List, nbt.Set, nbt.ListTypeIterableType,
                       nbt.DictItemsIterableType, nbt.DictKeysIterableType,
                       nbt.DictValuesIterableType))


def container_construct(t) -> str:
    if isinstance(t.numba_type, (nbt.List, nbt.Set)):
        return f"Python lists and sets ({t.numba_type}; a list argument, list() or set())"
    return f"numba typed containers (numba.typed.List and numba.typed.Dict; {t.numba_type})"


def is_string(t) -> bool:
    return isinstance(t, OpaqueType) and isinstance(
        t.numba_type, (nbt.UnicodeType, nbt.UnicodeCharSeq, nbt.CharSeq, nbt.Bytes))


def user_type(t):
    return t.numba_type if isinstance(t, OpaqueType) else t


def holds_records(t) -> bool:
    return is_record(t) or (isinstance(t, ArrayType) and is_record(t.dtype))


def construct_of(op) -> str:
    if any(holds_records(v.type) for v in op.operands):
        return ("writing fields of records, or a whole field of a structured array (p['a'] "
                "of an array p)")
    if any(is_string(v.type) for v in op.operands):
        return "operations on strings"
    return "this operation on these types"


def hint_of(op) -> str:
    if any(holds_records(v.type) for v in op.operands):
        return ("read fields of single records (p[i]['a'] or p[i].a); pass values you write or "
                "differentiate as float arrays")
    if any(is_string(v.type) for v in op.operands):
        return ("choose between code paths outside the kernel and pass a number (an int flag) "
                "instead of a string")
    return "apply operators to numbers and arrays, and index arrays and tuples only"


def unsupported_expr(expr) -> tuple:
    known = {
        "build_set": ("set literals", "use a numpy array"),
        "build_map": ("dict literals", "use arrays or tuples"),
        "make_function": ("closures and lambdas that numba does not inline",
                          "make the inner function a separate @njit function"),
        "yield": ("generators", "return an array instead"),
    }
    return known.get(expr.op, (f"the numba IR expression {expr.op!r}",
                               "write the kernel without this construct, or report it"))
