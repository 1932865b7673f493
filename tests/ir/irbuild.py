"""Small IR functions and CFG shapes shared by the IR tests.

Every builder here returns well-formed IR (the verifier tests check that they verify); the tests
then break one invariant at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from moonlite.errors import VerificationError
from moonlite.ir import Builder, Function, ops, verify
from moonlite.ir import types as T


# --- whole functions ---------------------------------------------------------------------------

def straight_line() -> Function:
    """f(x: float64, n: int64) -> float64:  y = x * x;  z = y + n;  return z"""
    b = Builder.new_function("straight", [T.float64, T.int64], ["x", "n"], T.float64)
    b.position_at_end(b.new_block("entry"))
    x, n = b.function.args
    y = b.mul(x, x, hint="y")
    z = b.add(y, n, hint="z")
    b.ret(z)
    return b.function


@dataclass
class Diamond:
    """entry: br c, then, else;  then: a = x + x;  else: m = x * x;  join: y = phi; ret y"""

    fn: Function
    entry: object
    then: object
    else_: object
    join: object
    a: object  # value defined in `then`
    m: object  # value defined in `else`
    phi: object


def diamond() -> Diamond:
    b = Builder.new_function("diamond", [T.boolean, T.float64], ["c", "x"], T.float64)
    c, x = b.function.args
    entry, then, else_, join = (b.new_block(h) for h in ("entry", "then", "else", "join"))
    b.position_at_end(entry)
    b.branch(c, then, else_)
    b.position_at_end(then)
    a = b.add(x, x, hint="a")
    b.jump(join)
    b.position_at_end(else_)
    m = b.mul(x, x, hint="m")
    b.jump(join)
    b.position_at_end(join)
    phi = b.phi(T.float64, hint="y")
    phi.add_incoming(then, a)
    phi.add_incoming(else_, m)
    b.ret(phi.result)
    return Diamond(b.function, entry, then, else_, join, a, m, phi)


@dataclass
class CountedLoop:
    """s = 0.0; for i in range(n): s = s + x;  return s  (phis for i and s in the header)"""

    fn: Function
    entry: object
    header: object
    body: object
    exit: object
    i: object  # the header's phi op for i
    s: object  # the header's phi op for s


def counted_loop() -> CountedLoop:
    b = Builder.new_function("loop", [T.float64, T.int64], ["x", "n"], T.float64)
    x, n = b.function.args
    entry, header, body, exit_ = (b.new_block(h) for h in ("entry", "header", "body", "exit"))
    b.position_at_end(entry)
    zero = b.const(0, T.int64, hint="zero")
    one = b.const(1, T.int64, hint="one")
    s0 = b.const(0.0, T.float64, hint="s0")
    b.jump(header)
    b.position_at_end(header)
    i = b.phi(T.int64, hint="i")
    s = b.phi(T.float64, hint="s")
    more = b.binary(ops.Lt, i.result, n, hint="more")
    b.branch(more, body, exit_)
    b.position_at_end(body)
    s_next = b.add(s.result, x, hint="s_next")
    i_next = b.add(i.result, one, hint="i_next")
    b.jump(header)
    b.position_at_end(exit_)
    b.ret(s.result)
    i.add_incoming(entry, zero)
    i.add_incoming(body, i_next)
    s.add_incoming(entry, s0)
    s.add_incoming(body, s_next)
    return CountedLoop(b.function, entry, header, body, exit_, i, s)


# --- bare CFG shapes ---------------------------------------------------------------------------

def make_cfg(spec: dict) -> tuple:
    """A function whose blocks are named by `spec`'s keys, in order (the first is the entry).

    `spec[name]` lists the block's successors: none -> `ret`, one -> `jump`, two -> `br %c`.
    Returns (function, {name: block}).
    """
    b = Builder.new_function("cfg", [T.boolean], ["c"], T.none)
    (c,) = b.function.args
    blocks = {name: b.new_block(name) for name in spec}
    for name, succs in spec.items():
        b.position_at_end(blocks[name])
        if not succs:
            b.ret(b.const(None, T.none))
        elif len(succs) == 1:
            b.jump(blocks[succs[0]])
        else:
            (t, f) = succs
            b.branch(c, blocks[t], blocks[f])
    return b.function, blocks


# --- verifier error helpers --------------------------------------------------------------------

def rejection(fn: Function) -> str:
    """The message of the VerificationError `verify(fn)` must raise."""
    with pytest.raises(VerificationError) as info:
        verify(fn)
    return str(info.value)


def problems(message: str) -> list:
    """The '  - ...' problem lines of a verifier message, without the bullet."""
    return [line[4:] for line in message.splitlines() if line.startswith("  - ")]


def marked_lines(message: str) -> list:
    """The instruction lines the message flags, as printed (without '> ' and '<-- here')."""
    marked = [line for line in message.splitlines() if line.startswith("> ")]
    for line in marked:
        assert line.endswith("<-- here"), line
    return [line[2:-len("<-- here")].rstrip() for line in marked]


def marked_line(message: str) -> str:
    """The one instruction line the message flags."""
    lines = marked_lines(message)
    assert len(lines) == 1, message
    return lines[0]
