"""FileCheck-style checks on printed IR, for pass tests written as IR text in, IR text out.

    check_lines(str(fn), [
        "func f_rev(%x: float64, %dout: float64) -> tuple(float64, tuple(float64,)) {",
        "%[[TAPE:\\d+]] = tape.new <float64>",   # [[NAME:regex]] captures, [[NAME]] reuses
        "tape.push %[[TAPE]], {{%\\S+}}",        # {{regex}} stands for what the regex matches
        "NEXT: jump",                            # on the line right after the previous match
        "NOT: tape.pop",                         # on no line between the matches around it
        "ret %",
    ])

Each pattern is looked for in the output, in order, each below the line the previous one
matched; a pattern matches a line that contains it. Runs of blanks count as one blank, and the
trailing `# file.py:N` comments of the output are dropped, so patterns need neither.
"""

from __future__ import annotations

import re

_PIECE = re.compile(r"\{\{(.*?)\}\}|\[\[(\w+)(?::(.*?))?\]\]")
_COMMENT = re.compile(r"\s+#.*$")


def check_lines(output: str, patterns: list) -> dict:
    """Assert that `patterns` match lines of `output` in order; return the captured names."""
    lines = [_normal(_COMMENT.sub("", line)) for line in output.splitlines()]
    captured: dict = {}
    forbidden: list = []   # NOT: patterns waiting for the next match to bound them
    start, previous = 0, None
    for pattern in patterns:
        kind, body = _directive(pattern)
        if kind == "NOT":
            forbidden.append(body)
            continue
        candidates = [previous + 1] if kind == "NEXT" and previous is not None \
            else range(start, len(lines))
        regex = _regex(body, captured)
        found = next((i for i in candidates if i < len(lines) and regex.search(lines[i])), None)
        if found is None:
            where = f"after line {start}" if start else "in the output"
            _fail(f"no line {where} matches {pattern!r}", output, start)
        _check_forbidden(forbidden, lines, start, found, captured, output)
        forbidden = []
        captured.update(regex.search(lines[found]).groupdict())
        start, previous = found + 1, found
    _check_forbidden(forbidden, lines, start, len(lines), captured, output)
    return captured


def _directive(pattern: str) -> tuple:
    for kind in ("NEXT", "NOT"):
        if pattern.startswith(kind + ":"):
            return kind, pattern[len(kind) + 1:].strip()
    return "", pattern.strip()


def _normal(text: str) -> str:
    return " ".join(text.split())


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _regex(body: str, captured: dict) -> re.Pattern:
    """The pattern as a regex: literal text escaped, {{regex}} kept, [[NAME:regex]] a named
    group, [[NAME]] the text captured before (or a back reference within the same pattern)."""
    parts, defined, at = [], set(), 0
    for m in _PIECE.finditer(body):
        parts.append(re.escape(_squeeze(body[at:m.start()])))
        regex, name, definition = m.groups()
        if regex is not None:
            parts.append(f"(?:{regex})")
        elif definition is not None:
            parts.append(f"(?P<{name}>{definition})")
            defined.add(name)
        elif name in defined:
            parts.append(f"(?P={name})")
        elif name in captured:
            parts.append(re.escape(captured[name]))
        else:
            raise AssertionError(f"[[{name}]] is used before a pattern captures it: {body!r}")
        at = m.end()
    parts.append(re.escape(_squeeze(body[at:])))
    return re.compile("".join(parts))


def _check_forbidden(forbidden, lines, start, end, captured, output) -> None:
    for body in forbidden:
        regex = _regex(body, captured)
        for i in range(start, end):
            if regex.search(lines[i]):
                _fail(f"line {i + 1} matches 'NOT: {body}'", output, i)


def _fail(message: str, output: str, at: int) -> None:
    numbered = [f"{'>' if i == at else ' '}{i + 1:4} {line}"
                for i, line in enumerate(output.splitlines())]
    raise AssertionError(message + "\n" + "\n".join(numbered))


# sum of x[i] ** 2 over a vector: the loop the parser and pass tests share
SUM_OF_SQUARES = """
func sum_squares(%x: array(float64, 1d, C)) -> float64 {
entry:
  %zero = const 0 : int64
  %one = const 1 : int64
  %s0 = const 0.0 : float64
  %n = call len(%x) : int64
  jump header
header:
  %i = phi [entry: %zero], [body: %i.next] : int64
  %s = phi [entry: %s0], [body: %s.next] : float64
  %more = lt %i, %n : bool
  br %more, body, exit
body:
  %xi = getitem %x, %i : float64
  %sq = mul %xi, %xi : float64
  %s.next = add %s, %sq : float64
  %i.next = add %i, %one : int64
  jump header
exit:
  ret %s
}
"""
