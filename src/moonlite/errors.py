"""moonlite's exceptions.

Every error a user can meet is a `MoonliteError`. Errors about user code name the construct, the
function, its argument types and the source line, and say what to do, so nobody has to read a numba
traceback to find out why moonlite refused their kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class SourceLoc:
    """Where an IR instruction came from: file name and line (line 0 when unknown)."""

    filename: str = "<unknown>"
    line: int = 0

    def __str__(self) -> str:
        short = self.filename.rsplit("/", 1)[-1]
        return f"{short}:{self.line}"


UNKNOWN_LOC = SourceLoc()


class MoonliteError(Exception):
    """Base class of every error moonlite raises on purpose."""


class UnsupportedError(MoonliteError):
    """User code uses a construct moonlite cannot capture or differentiate.

    The message is assembled from its parts so that every such error has the same shape:
    what was met, in which function (with argument types), where, and what to do about it.
    """

    def __init__(
        self,
        construct: str,
        *,
        function: str = "<unknown>",
        argtypes: Optional[tuple] = None,
        loc: SourceLoc = UNKNOWN_LOC,
        hint: str = "",
        source_line: str = "",
    ):
        self.construct = construct
        self.function = function
        self.argtypes = argtypes
        self.loc = loc
        self.hint = hint
        super().__init__(self._format(source_line))

    def _format(self, source_line: str) -> str:
        sig = ""
        if self.argtypes is not None:
            sig = "(" + ", ".join(str(t) for t in self.argtypes) + ")"
        lines = [f"moonlite does not support {self.construct}",
                 f"  in function {self.function}{sig}"]
        if self.loc != UNKNOWN_LOC:  # (a numpy ufunc, say, has no source to point at)
            lines.append(f"  at {self.loc.filename}:{self.loc.line}")
        if source_line:
            lines.append(f"  > {source_line.strip()}")
        if self.hint:
            lines.append(f"  what to do: {self.hint}")
        return "\n".join(lines)


class UnsupportedInputError(UnsupportedError):
    """A derivative met, at run time, an input its rule does not cover: the kernel was accepted
    when it was compiled, and only the shapes or values show the problem
    (`np.linalg.svd` of a non-square matrix with `full_matrices=True`, `np.linalg.pinv` of a
    matrix of lower rank). Raised from a rule's njit code, which numba allows with positional
    constant arguments only: hence `(construct, hint)`, and no function or source line."""

    def __init__(self, construct: str, hint: str = ""):
        super().__init__(construct, hint=hint)

    def _format(self, source_line: str) -> str:
        lines = [f"moonlite does not support {self.construct}"]
        if self.hint:
            lines.append(f"  what to do: {self.hint}")
        return "\n".join(lines)


class ArgumentError(MoonliteError, ValueError):
    """Arguments given to a moonlite API function do not fit the function being differentiated."""


class OverlappingWriteError(MoonliteError, ValueError):
    """At run time, a derivative met an in-place operation whose operand overlaps its target
    (`x[1:] += x[:-1]`), which numba computes as a recurrence no derivative rule follows
    (`rules/overlap.py`). The message names the function and the source line."""


class CaptureError(MoonliteError):
    """numba could not compile the function for the given arguments (typing failed)."""


class VerificationError(MoonliteError):
    """The IR broke one of its invariants; the message shows the offending instruction."""


class LoweringError(MoonliteError):
    """moonlite IR could not be compiled back through numba."""
