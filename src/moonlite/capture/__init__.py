"""Capture: numba-typed functions into moonlite IR (`capture(f, *args)`)."""

from __future__ import annotations

import linecache
import re

from .. import _numba as nb
from ..errors import CaptureError, SourceLoc, UnsupportedError
from ..ir.core import Function
from ..timing import phase
from . import array_lists, list_helpers
from .frozen_globals import check_frozen_globals
from .importer import Importer
from .pipeline import TypedIR, run_capture_pipeline

__all__ = ["capture", "capture_types", "TypedIR"]


def capture(f, *args) -> Function:
    """Capture the `@njit` function `f`, typed for the example arguments `args`, as moonlite IR."""
    _require_njit(f)
    argtypes = tuple(f.typeof_pyval(a) for a in args)
    return capture_types(f, argtypes)


def capture_types(f, argtypes: tuple) -> Function:
    """Capture `f` for numba argument types (the form AD passes use for nested calls)."""
    with phase("capture"):
        return _capture_types(f, argtypes)


def _capture_types(f, argtypes: tuple) -> Function:
    _require_njit(f)
    derived = getattr(f, "ir_for", None)
    if derived is not None:  # grad(g), hessian(g), ...: their IR is derived per signature
        return derived(tuple(argtypes))
    kept = getattr(f, "moonlite_ir", None)
    if kept is not None and tuple(a.to_numba() for a in kept.argtypes) == tuple(argtypes):
        return kept
    check_frozen_globals(f, tuple(argtypes))
    _, folded = f._compiler.fold_argument_types(tuple(argtypes), {})
    typed = _type(f, tuple(folded))
    options = f.targetoptions
    return Importer(f.py_func, typed, options.get("error_model", "python"),
                    bool(options.get("boundscheck"))).run()


def capture_with_list_columns(f, argtypes: tuple, returns_list: bool = False,
                              changes_lists: bool = False) -> Function:
    """The column form of njit `f` for numba argument types holding lists: each list
    parameter given as its buffers and its length; with `returns_list`, the form of `f`
    returning the buffers and length of the list it builds; with `changes_lists`, the form
    returning also its list parameters' buffers and lengths (`list_helpers.py`)."""
    with phase("capture"):
        check_frozen_globals(f, tuple(argtypes))
        _, folded = f._compiler.fold_argument_types(tuple(argtypes), {})
        typed = _type(f, tuple(folded))
        options = f.targetoptions
        return Importer(f.py_func, typed, options.get("error_model", "python"),
                        bool(options.get("boundscheck")), list_params=not returns_list,
                        returns_list=returns_list, changes_lists=changes_lists).run()


def _type(f, argtypes: tuple) -> TypedIR:
    try:
        return _run_pipeline(f, argtypes)
    except nb.numba_errors.UnsupportedError as exc:
        raise UnsupportedError(_first_line(exc), function=f.py_func.__qualname__,
                               argtypes=tuple(str(t) for t in argtypes), loc=_func_loc(f),
                               hint="numba itself cannot compile this construct in nopython "
                                    "mode; rewrite it") from None
    except nb.numba_errors.NumbaError as exc:
        if "Cannot modify readonly array" in str(exc):
            loc = getattr(exc, "loc", None)
            where = (SourceLoc(loc.filename, loc.line or 0) if loc is not None
                     and getattr(loc, "filename", None) else _func_loc(f))
            raise UnsupportedError(
                "writing into a read-only array (a global or closure array, which numba "
                "freezes into a constant, or a read-only argument)",
                function=f.py_func.__qualname__, argtypes=tuple(str(t) for t in argtypes),
                loc=where, source_line=linecache.getline(where.filename, where.line),
                hint="pass the array as an argument (a writeable one) and write into that"
                ) from None
        sig = ", ".join(str(t) for t in argtypes)
        raise CaptureError(f"numba could not compile {f.py_func.__qualname__}({sig}) "
                           f"for moonlite to capture it:\n{_plain(str(exc))}") from None


def _run_pipeline(f, argtypes: tuple) -> TypedIR:
    try:
        return run_capture_pipeline(f, argtypes)
    except nb.numba_errors.NumbaError:
        # A recursive function types its own calls through its dispatcher, which needs a
        # finished compilation of itself: compile it the ordinary way (this also gives numba's
        # own error for code numba rejects), then type it again.
        f.compile(argtypes)
        return run_capture_pipeline(f, argtypes)


def _plain(text: str) -> str:
    """numba's messages carry terminal colour codes; error messages should not."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _require_njit(f) -> None:
    if not isinstance(f, nb.Dispatcher):
        name = getattr(f, "__qualname__", repr(f))
        raise UnsupportedError(
            "a function that is not compiled with @numba.njit", function=name,
            loc=_py_loc(f), hint="decorate the function with @numba.njit")
    if not nb.is_njit_dispatcher(f) or f.targetoptions.get("forceobj"):
        raise UnsupportedError(
            "object-mode functions (@jit(forceobj=True) or nopython=False)",
            function=f.py_func.__qualname__, loc=_func_loc(f),
            hint="compile the function with @numba.njit")


def _func_loc(f) -> SourceLoc:
    return _py_loc(f.py_func)


def _py_loc(fn) -> SourceLoc:
    code = getattr(fn, "__code__", None)
    if code is None:
        return SourceLoc()
    return SourceLoc(code.co_filename, code.co_firstlineno)


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


array_lists.capture_callee = capture_types  # what the check of lists of arrays asks callees
list_helpers.capture_columns = capture_with_list_columns
