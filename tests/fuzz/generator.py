"""A seeded generator of random numba kernels for differential testing (issue #8).

`generate_kernel(seed)` returns a `KernelCase`: the Python source of a small module (one kernel
and up to two helper njit functions), the compiled kernel, an argument factory and which
arguments are differentiable. The same seed always gives the same source and, through
`case.make_args(np.random.default_rng(seed))`, the same arguments.

Kernels take scalar floats and 1-D float64 arrays (all of length n) and optionally the int n;
they return a float scalar. Their bodies use arithmetic (+ - * /, ** with exponents 2 and 3),
smooth `math`/`np` calls (sin, cos, tanh, exp of clamped or bounded arguments, log and sqrt of
positive quantities), if/else on computed floats, `for i in range(n)` loops (nested at most
twice), `while` loops with data-dependent but bounded trip counts, in-place updates of argument
arrays and of temporaries (`np.zeros`, `np.empty` filled by a loop, `.copy()`, array
expressions), calls of generated njit helpers (scalar, tuple-returning, tuple-taking,
array-reading and array-writing helpers), and flat tuples (built, unpacked, indexed, passed).

Deliberately not generated: nested tuples (the wide profile's `nested` group writes them), in-place
`//=`, `%=`, `**=` on arrays (documented), recursion (documented), list literals, anything
object-mode (refused at capture by design), non-smooth math other than `min` clamps (`abs` and
comparisons in branches are the only other kinks), integer-valued outputs.

All of the above is the "default" profile, whose kernels never change (regression tests and
the campaign record name its seeds). `generate_kernel(seed, "wide")` is the "wide" profile
(`_WideGen`): the same statements mixed with constructs the default profile does not write
(keyword and default arguments, namedtuples, jitclasses, axis sums, cumsum, arrays of tuples,
fill, matrices with trace/triu/tril, masked square roots at exact zeros, sentinels, x ** 0.0),
n x n matrix arguments (kind "matrix") and argument entries held at exactly 0.0
(`KernelCase.fixed`); see docs/fuzzing.md.

The source is written to a file in a cache directory (`MOONLITE_FUZZ_DIR`, else
`$TMPDIR/moonlite-fuzz-<uid>`) and imported from there, so numba and moonlite's error messages
can read source lines like for any kernel.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np

from .gen_lists import LIST_FEATURES, list_block
from .gen_nested import NESTED_FEATURES, nested_block
from .gen_orders import ORDER_FEATURES, order_block
from .gen_records import RECORD_FEATURES, record_block
from .gen_fields import FIELD_FEATURES, field_block
from .gen_slices import SLICE_FEATURES, slice_block

MAX_EXPR_DEPTH = 2
MAX_BLOCK_DEPTH = 2


@dataclass
class KernelCase:
    """One generated kernel, ready to check."""

    seed: int
    source: str
    name: str
    func: object  # the numba dispatcher
    arg_names: tuple
    arg_kinds: tuple  # "float", "array" or "int" per argument
    n: int  # length of every array argument (and the value of the int argument, if any)
    path: str
    features: frozenset = field(default_factory=frozenset)
    # argument index -> flat indices of entries held at exactly 0.0 (a float argument: (0,)):
    # make_args writes 0.0 there and the checker's directions are 0 there (wide profile)
    fixed: dict = field(default_factory=dict)
    profile: str = "default"

    @property
    def diff_argnums(self) -> tuple:
        """Indices of the differentiable (float, float-array and matrix) arguments."""
        return tuple(i for i, k in enumerate(self.arg_kinds) if k != "int")

    def make_args(self, rng: np.random.Generator) -> tuple:
        """Fresh arguments: floats and array entries uniform in [-1.5, 1.5] (matrices are
        n x n), then the entries in `fixed` set to exactly 0.0."""
        args = []
        for kind in self.arg_kinds:
            if kind == "float":
                args.append(float(rng.uniform(-1.5, 1.5)))
            elif kind == "array":
                args.append(rng.uniform(-1.5, 1.5, self.n))
            elif kind == "matrix":
                args.append(rng.uniform(-1.5, 1.5, (self.n, self.n)))
            else:
                args.append(self.n)
        for i, entries in self.fixed.items():
            if self.arg_kinds[i] == "float":
                args[i] = 0.0
            else:
                args[i].flat[list(entries)] = 0.0
        return tuple(args)


# --------------------------------------------------------------------------------------------
# loading generated source


def cache_dir() -> str:
    d = os.environ.get("MOONLITE_FUZZ_DIR") or os.path.join(
        tempfile.gettempdir(), f"moonlite-fuzz-{os.getuid() if hasattr(os, 'getuid') else 0}")
    os.makedirs(d, exist_ok=True)
    return d


def load_module(source: str, module_name: str):
    """Write `source` to `<cache_dir>/<module_name>.py` and import it (a fresh module object
    each call). The write is atomic, so concurrent campaigns can share the directory."""
    path = os.path.join(cache_dir(), module_name + ".py")
    try:
        with open(path) as fh:
            same = fh.read() == source
    except OSError:
        same = False
    if not same:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module, path


def case_from_source(source: str, name: str, arg_kinds: tuple, n: int, seed: int = 0,
                     module_name: str | None = None, fixed: dict | None = None,
                     profile: str = "default") -> KernelCase:
    """A KernelCase from hand-written source (regression tests with minimised kernels).
    `fixed` (argument index -> flat indices) holds entries at exactly 0.0 with zero tangent;
    `profile="wide"` makes the checker count moonlite's refusals as refusals, not failures."""
    import hashlib
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    module_name = module_name or f"moonlite_fuzz_manual_{name}_{digest}"
    module, path = load_module(source, module_name)
    func = getattr(module, name)
    import inspect
    names = tuple(inspect.signature(func.py_func).parameters)
    return KernelCase(seed, source, name, func, names, tuple(arg_kinds), n, path,
                      fixed=dict(fixed or {}), profile=profile)


# --------------------------------------------------------------------------------------------
# the generator


@dataclass
class _Helper:
    name: str
    # scalar, tuple_ret, tuple_arg, array_read, array_write, mixed_tuple; wide: kw, nt_arg
    kind: str
    nfloat: int  # number of float parameters after the structural ones
    ndefault: int = 0  # kw helpers: how many of the last float parameters have defaults


class _Scope:
    def __init__(self, floats=(), arrays=(), idx=(), n="n", tuples=(), mats=(), nts=(), objs=()):
        self.floats = list(floats)
        self.arrays = list(arrays)
        self.idx = list(idx)
        self.n = n
        self.tuples = list(tuples)  # names of 2-tuples of floats
        # the wide profile only (empty in the default one):
        self.mats = list(mats)  # names of n x n float64 matrices
        self.nts = list(nts)  # (name, fields) of namedtuples of floats
        self.objs = list(objs)  # names of jitclass instances (fields a, b; method value(q))

    def child(self) -> "_Scope":
        return _Scope(self.floats, self.arrays, self.idx, self.n, self.tuples, self.mats,
                      self.nts, self.objs)


class _Gen:
    SCALAR_KINDS = ("scalar",)  # helper kinds called inside expressions

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.counter = 0
        self.features: set = set()
        self.helpers: list = []
        self.lines: list = []

    # ---- helpers
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def const(self) -> str:
        v = self.r.choice([0.5, 0.25, 1.5, 2.0, 0.75, 1.25, -0.5, -1.5, 0.1, 0.3])
        return f"({v})" if v < 0 else repr(v)

    def mathf(self, fn: str) -> str:
        return f"{self.r.choice(['math', 'np'])}.{fn}"

    def call_text(self, h: _Helper, floats: list) -> str:
        """The call of scalar helper `h` with these float arguments (positional here; the wide
        profile also writes keyword arguments and leaves out defaulted ones)."""
        return f"{h.name}({', '.join(floats)})"

    # ---- expressions
    def leaf(self, s: _Scope) -> str:
        opts = []
        if s.floats:
            opts += ["float"] * 6
        if s.idx and s.arrays:
            opts += ["elem"] * 5
        if s.arrays:
            opts += ["elem0"]
            opts += ["reduce"]
        if s.idx:
            opts += ["index"]
        if s.tuples:
            opts += ["tuple"]
        if not opts or self.chance(0.1):
            opts += ["const"]
        kind = self.r.choice(opts)
        if kind == "float":
            return self.r.choice(s.floats)
        if kind == "elem":
            a, i = self.r.choice(s.arrays), self.r.choice(s.idx)
            form = self.r.choice([f"{i}", f"{i}", f"{i}", f"{i} - 1", f"({i} + 1) % {s.n}"])
            if form != i:
                self.features.add("shifted_index")
            return f"{a}[{form}]"
        if kind == "elem0":
            return f"{self.r.choice(s.arrays)}[0]"
        if kind == "reduce":
            self.features.add("reduction")
            a = self.r.choice(s.arrays)
            if len(s.arrays) > 1 and self.chance(0.5):
                b = self.r.choice(s.arrays)
                return f"np.dot({a}, {b})"
            return self.r.choice([f"np.sum({a})", f"{a}.sum()", f"np.mean({a})"])
        if kind == "index":
            return f"{self.r.choice(s.idx)} * 0.25"
        if kind == "tuple":
            return f"{self.r.choice(s.tuples)}[{self.r.randrange(2)}]"
        return self.const()

    def expr(self, s: _Scope, depth: int = MAX_EXPR_DEPTH) -> str:
        if depth <= 0:
            return self.leaf(s)
        kind = self.r.choices(["leaf", "binary", "unary", "pow", "call"],
                              weights=[3, 4, 3, 1, 1])[0]
        if kind == "leaf":
            return self.leaf(s)
        if kind == "binary":
            a, b = self.expr(s, depth - 1), self.expr(s, depth - 1)
            form = self.r.choice(["+", "-", "*", "*", "/", "/s"])
            if form == "/":
                self.features.add("div")
                return f"({a} / (1.5 + ({b}) ** 2))"
            if form == "/s":
                self.features.add("div")
                return f"({a} / (2.0 + {self.mathf('sin')}({b})))"
            return f"({a} {form} {b})"
        if kind == "pow":
            self.features.add("pow")
            return f"({self.expr(s, depth - 1)}) ** {self.r.choice([2, 2, 3])}"
        if kind == "call":
            scalar = [h for h in self.helpers if h.kind in self.SCALAR_KINDS]
            if scalar:
                self.features.add("helper_in_expr")
                h = self.r.choice(scalar)
                return self.call_text(h, [self.expr(s, depth - 1) for _ in range(h.nfloat)])
            return self.leaf(s)
        e = self.expr(s, depth - 1)
        fn = self.r.choice(["sin", "cos", "tanh", "exp_clamp", "exp_gauss", "exp_tanh", "log",
                            "sqrt", "sqrt2"])
        self.features.add(fn)
        if fn in ("sin", "cos", "tanh"):
            return f"{self.mathf(fn)}({e})"
        if fn == "exp_clamp":
            return f"{self.mathf('exp')}(min({e}, 2.0))"
        if fn == "exp_gauss":
            return f"{self.mathf('exp')}(-({e}) ** 2)"
        if fn == "exp_tanh":
            return f"{self.mathf('exp')}({self.mathf('tanh')}({e}))"
        if fn == "log":
            return f"{self.mathf('log')}(1.0 + ({e}) ** 2)"
        if fn == "sqrt":
            return f"{self.mathf('sqrt')}(1.0 + ({e}) ** 2)"
        return f"{self.mathf('sqrt')}(({e}) ** 2 + 0.25)"

    def cond(self, s: _Scope) -> str:
        a = self.expr(s, 1)
        op = self.r.choice([">", "<", ">=", "<="])
        b = self.expr(s, 1) if self.chance(0.5) else self.const()
        return f"{a} {op} {b}"

    # ---- statements
    def bounded(self, s: _Scope) -> str:
        """An expression; inside loops often squashed, so that feedback does not overflow."""
        e = self.expr(s)
        if s.idx and self.chance(0.6):
            return f"{self.mathf(self.r.choice(['tanh', 'sin']))}({e})"
        return e

    def update_float(self, s: _Scope, indent: int, targets: list) -> None:
        t = targets[0] if self.chance(0.4) else self.r.choice(targets)
        e = self.bounded(s)
        form = self.r.choice(["+=", "+=", "-=", "=", "half", "*="])
        if form == "half":
            self.emit(indent, f"{t} = 0.5 * {t} + {e}")
        elif form == "*=":
            self.emit(indent, f"{t} *= 1.0 + 0.25 * {self.mathf('tanh')}({e})")
        elif form == "=":
            self.emit(indent, f"{t} = {e}")
        else:
            self.emit(indent, f"{t} {form} {e}")

    def write_elem(self, s: _Scope, indent: int, i: str) -> None:
        a = self.r.choice(s.arrays)
        e = self.bounded(s)
        form = self.r.choice(["+=", "=", "*=", "-=", "rec"])
        self.features.add("array_write")
        if form == "*=":
            self.emit(indent, f"{a}[{i}] *= 1.0 + 0.25 * {self.mathf('sin')}({e})")
        elif form == "rec":
            self.features.add("recurrence")
            self.emit(indent, f"{a}[{i}] = 0.5 * {a}[{i} - 1] + {e}")
        else:
            self.emit(indent, f"{a}[{i}] {form} {e}")

    def new_float(self, s: _Scope, indent: int) -> str:
        t = self.fresh("t")
        self.emit(indent, f"{t} = {self.expr(s)}")
        s.floats.append(t)
        return t

    def stmt(self, s: _Scope, indent: int, depth: int, targets: list) -> None:
        """One statement. `targets` are the float variables this block may update (defined
        outside it, or in it); new definitions go into `s` only."""
        kinds = ["new", "update", "update"]
        if depth < MAX_BLOCK_DEPTH:
            kinds += ["if", "for", "for"]
            if depth == 0:
                kinds += ["while"]
        if s.idx and s.arrays:
            kinds += ["write", "write"]
        if self.helpers:
            kinds += ["call", "call"]
        kinds += ["tuple"]
        if depth == 0:
            kinds += ["temp_array"]
        kind = self.r.choice(kinds)
        if kind == "update" and not targets:
            kind = "new"
        if kind == "new":
            targets.append(self.new_float(s, indent))
        elif kind == "update":
            self.update_float(s, indent, targets)
        elif kind == "write":
            self.write_elem(s, indent, self.r.choice(s.idx))
        elif kind == "if":
            self.if_stmt(s, indent, depth, targets)
        elif kind == "for":
            self.for_stmt(s, indent, depth, targets)
        elif kind == "while":
            self.while_stmt(s, indent, depth, targets)
        elif kind == "call":
            self.call_stmt(s, indent, targets)
        elif kind == "tuple":
            self.tuple_stmt(s, indent, targets)
        else:
            self.temp_array(s, indent, depth)

    def block(self, s: _Scope, indent: int, depth: int, targets: list, count: int) -> None:
        inner_targets = list(targets)
        for _ in range(count):
            self.stmt(s, indent, depth, inner_targets)

    def if_stmt(self, s, indent, depth, targets) -> None:
        self.features.add("if")
        self.emit(indent, f"if {self.cond(s)}:")
        self.block(s.child(), indent + 1, depth + 1, targets or [], self.r.randint(1, 2))
        if self.chance(0.7):
            self.features.add("else")
            self.emit(indent, "else:")
            self.block(s.child(), indent + 1, depth + 1, targets or [], self.r.randint(1, 2))

    def for_stmt(self, s, indent, depth, targets) -> None:
        self.features.add("nested_for" if s.idx else "for")
        i = self.fresh("i")
        self.emit(indent, f"for {i} in range({s.n}):")
        inner = s.child()
        inner.idx.append(i)
        body = self.r.randint(1, 3)
        # make most loops do something with arrays when there are any
        if inner.arrays and self.chance(0.6):
            self.write_elem(inner, indent + 1, i)
            body -= 1
        self.block(inner, indent + 1, depth + 1, targets, max(body, 1))

    def while_stmt(self, s, indent, depth, targets) -> None:
        k, w = self.fresh("k"), self.fresh("w")
        self.emit(indent, f"{k} = 0")
        if self.chance(0.7):
            self.features.add("while_data")
            self.emit(indent, f"{w} = {self.expr(s, 1)}")
            limit = self.r.choice([1.0, 2.0, 3.0])
            self.emit(indent, f"while {w} < {limit} and {k} < {self.r.randint(3, 12)}:")
            inner = s.child()
            self.emit(indent + 1, f"{w} = {w} + 0.4 + ({self.expr(inner, 1)}) ** 2")
        else:
            self.features.add("while_fixed")
            self.emit(indent, f"{w} = {self.expr(s, 1)}")
            self.emit(indent, f"while {k} < {self.r.randint(2, 5)}:")
            inner = s.child()
            self.emit(indent + 1, f"{w} = {self.mathf('sin')}({w}) + {self.expr(inner, 1)}")
        inner.floats.append(w)
        self.block(inner, indent + 1, depth + 1, targets, self.r.randint(0, 2))
        self.emit(indent + 1, f"{k} += 1")
        s.floats.append(w)
        targets.append(w)

    def call_stmt(self, s, indent, targets) -> None:
        self.call_helper(self.r.choice(self.helpers), s, indent, targets)

    def call_helper(self, h, s, indent, targets) -> None:
        self.features.add(f"helper_{h.kind}")
        floats = ", ".join(self.expr(s, 1) for _ in range(h.nfloat))
        sep = ", " if floats else ""
        if h.kind == "scalar":
            if targets and self.chance(0.5):
                self.emit(indent, f"{self.r.choice(targets)} += {h.name}({floats})")
            else:
                t = self.fresh("t")
                self.emit(indent, f"{t} = {h.name}({floats})")
                s.floats.append(t)
                targets.append(t)
        elif h.kind == "tuple_ret":
            u, v = self.fresh("u"), self.fresh("v")
            if self.chance(0.5):
                self.emit(indent, f"{u}, {v} = {h.name}({floats})")
            else:
                p = self.fresh("p")
                self.emit(indent, f"{p} = {h.name}({floats})")
                self.emit(indent, f"{u} = {p}[0]")
                self.emit(indent, f"{v} = {p}[1] * {u}")
            s.floats += [u, v]
            targets += [u, v]
        elif h.kind == "tuple_arg":
            if s.tuples and self.chance(0.5):
                tup = self.r.choice(s.tuples)
            else:
                tup = f"({self.expr(s, 1)}, {self.expr(s, 1)})"
            t = self.fresh("t")
            self.emit(indent, f"{t} = {h.name}({tup}{sep}{floats})")
            s.floats.append(t)
            targets.append(t)
        elif h.kind in ("array_read", "mixed_tuple"):
            if not s.arrays:
                return self.new_float(s, indent) and None
            a = self.r.choice(s.arrays)
            t = self.fresh("t")
            arg = f"({a}, {self.expr(s, 1)})" if h.kind == "mixed_tuple" else a
            self.emit(indent, f"{t} = {h.name}({arg}{sep}{floats})")
            s.floats.append(t)
            targets.append(t)
        elif h.kind == "array_write":
            if not (s.arrays and s.idx):
                targets.append(self.new_float(s, indent))
                return None
            a, i = self.r.choice(s.arrays), self.r.choice(s.idx)
            if targets and self.chance(0.6):
                self.emit(indent, f"{self.r.choice(targets)} += {h.name}({a}, {i}{sep}{floats})")
            else:
                self.emit(indent, f"{h.name}({a}, {i}{sep}{floats})")
        return None

    def tuple_stmt(self, s, indent, targets) -> None:
        self.features.add("tuple")
        p = self.fresh("p")
        self.emit(indent, f"{p} = ({self.expr(s, 1)}, {self.expr(s, 1)})")
        form = self.r.choice(["unpack", "index", "keep"])
        if form == "unpack":
            u, v = self.fresh("u"), self.fresh("v")
            self.emit(indent, f"{u}, {v} = {p}")
            s.floats += [u, v]
            targets += [u, v]
        elif form == "index":
            t = self.fresh("t")
            self.emit(indent, f"{t} = {p}[0] * {p}[1] + {p}[1]")
            s.floats.append(t)
            targets.append(t)
        else:
            s.tuples.append(p)

    def temp_array(self, s, indent, depth) -> None:
        w = self.fresh("w")
        form = self.r.choice(["zeros", "empty", "copy", "expr"] if s.arrays else ["zeros", "empty"])
        self.features.add(f"temp_{form}")
        if form == "zeros":
            self.emit(indent, f"{w} = np.zeros({s.n})")
        elif form == "copy":
            self.emit(indent, f"{w} = {self.r.choice(s.arrays)}.copy()")
        elif form == "expr":
            a = self.r.choice(s.arrays)
            e = self.expr(_Scope(s.floats, (), (), s.n, s.tuples), 1)
            fn = self.r.choice(["sin", "tanh", "cos"])
            self.emit(indent, f"{w} = {a} * {e} + np.{fn}({a})")
        else:
            self.emit(indent, f"{w} = np.empty({s.n})")
            i = self.fresh("i")
            self.emit(indent, f"for {i} in range({s.n}):")
            inner = s.child()
            inner.idx.append(i)
            self.emit(indent + 1, f"{w}[{i}] = {self.expr(inner)}")
        s.arrays.append(w)

    # ---- helpers and kernel
    def helper(self, index: int) -> None:
        kind = self.r.choice(["scalar", "scalar", "tuple_ret", "tuple_arg", "array_read",
                              "array_write", "mixed_tuple"])
        self.helper_of_kind(index, kind)

    def helper_of_kind(self, index: int, kind: str) -> None:
        name = f"helper{index}"
        nfloat = self.r.randint(1, 2)
        params = [f"q{j}" for j in range(nfloat)]
        s = _Scope(floats=params, n="b.shape[0]")
        ndefault = 0
        self.emit(0, "@numba.njit")
        if kind == "kw":  # wide profile: defaulted parameters, called with keywords
            ndefault = self.r.randint(1, nfloat)
            sig = params[:nfloat - ndefault] + [f"{q}={self.const()}"
                                                for q in params[nfloat - ndefault:]]
            self.emit(0, f"def {name}({', '.join(sig)}):")
        elif kind == "nt_arg":  # wide profile: takes a namedtuple with fields a, b
            self.emit(0, f"def {name}(p, {', '.join(params)}):")
            s.floats += ["p.a", "p[1]"]
        elif kind == "tuple_arg":
            self.emit(0, f"def {name}(pair, {', '.join(params)}):")
            if self.chance(0.5):
                self.emit(1, "c0, c1 = pair")
                s.floats += ["c0", "c1"]
            else:
                s.tuples.append("pair")
        elif kind == "mixed_tuple":
            self.emit(0, f"def {name}(pack, {', '.join(params)}):")
            self.emit(1, "b, c0 = pack")
            s.floats.append("c0")
            s.arrays.append("b")
        elif kind == "array_read":
            self.emit(0, f"def {name}(b, {', '.join(params)}):")
            s.arrays.append("b")
        elif kind == "array_write":
            self.emit(0, f"def {name}(b, j, {', '.join(params)}):")
            s.arrays.append("b")
            s.idx.append("j")
        else:
            self.emit(0, f"def {name}({', '.join(params)}):")
        targets: list = []
        if kind in ("array_read", "mixed_tuple"):
            acc = self.fresh("r")
            self.emit(1, f"{acc} = 0.0")
            j = self.fresh("j")
            self.emit(1, f"for {j} in range(b.shape[0]):")
            inner = s.child()
            inner.idx.append(j)
            self.emit(2, f"{acc} += {self.expr(inner)}")
            s.floats.append(acc)
        elif kind == "array_write":
            self.write_elem(s, 1, "j")
        for _ in range(self.r.randint(0, 2)):
            if self.chance(0.5):
                targets.append(self.new_float(s, 1))
            elif self.chance(0.5) and targets:
                self.update_float(s, 1, targets)
            else:
                self.if_stmt(s, 1, MAX_BLOCK_DEPTH - 1, targets or [self.new_float(s, 1)])
        locals_ = [v for v in s.floats if v not in params][-2:]
        tail = "".join(f" + {v}" for v in locals_)
        if kind == "tuple_ret":
            self.emit(1, f"return {self.expr(s)}{tail}, {self.expr(s)}")
        else:
            self.emit(1, f"return {self.expr(s)}{tail}")
        self.emit(0, "")
        self.emit(0, "")
        self.helpers.append(_Helper(name, kind, nfloat, ndefault))

    def kernel(self) -> tuple:
        nf = self.r.choice([0, 1, 1, 2, 2])
        na = self.r.choice([0, 1, 1, 2]) if nf else self.r.choice([1, 1, 2])
        with_n = na > 0 and self.chance(0.5)
        names, kinds = [], []
        for j in range(nf):
            names.append(f"x{j}")
            kinds.append("float")
        for j in range(na):
            names.append(f"a{j}")
            kinds.append("array")
        if with_n:
            names.append("n")
            kinds.append("int")
        order = list(range(len(names)))
        self.r.shuffle(order)
        names = [names[j] for j in order]
        kinds = [kinds[j] for j in order]
        self.emit(0, "@numba.njit")
        self.emit(0, f"def kernel({', '.join(names)}):")
        arrays = [nm for nm, k in zip(names, kinds) if k == "array"]
        floats = [nm for nm, k in zip(names, kinds) if k == "float"]
        if not with_n:
            if arrays:
                self.emit(1, "n = " + self.r.choice([f"len({arrays[0]})",
                                                     f"{arrays[0]}.shape[0]"]))
            else:
                self.emit(1, f"n = {self.r.randint(2, 4)}")
        s = _Scope(floats=floats, arrays=arrays)
        acc = self.fresh("s")
        self.emit(1, f"{acc} = {'0.0' if self.chance(0.3) else self.expr(s, 1)}")
        s.floats.append(acc)
        targets = [acc] + floats
        for _ in range(self.r.randint(2, 4)):
            self.stmt(s, 1, 0, targets)
        parts = [acc] + [v for v in s.floats if v not in floats][-4:]
        if s.arrays and self.chance(0.85):
            a = self.r.choice(s.arrays)
            parts.append(self.r.choice([f"np.sum({a})", f"np.sum({a} * {a})",
                                        f"np.dot({a}, {self.r.choice(s.arrays)})"]))
        self.emit(1, f"return {' + '.join(dict.fromkeys(parts))}")
        return tuple(names), tuple(kinds), with_n


# --------------------------------------------------------------------------------------------
# the wide profile

SENTINEL = "1.7976931348623157e308"  # the largest float64, a running minimum's initial value

# every construct the wide profile writes, as recorded in `features` (the tests check that a
# small range of seeds covers them all)
WIDE_FEATURES = frozenset({
    # njit helpers with defaults, called with keyword arguments or without the defaulted ones
    "helper_kw", "kwarg_call", "default_arg",
    # floats kept in namedtuples and jitclass instances
    "namedtuple", "namedtuple_kw_build", "namedtuple_attr", "namedtuple_index",
    "namedtuple_unpack", "namedtuple_rebind", "namedtuple_helper", "jitclass", "jitclass_field",
    "jitclass_method", "jitclass_rebuild",
    # reductions along an axis, cumulative sums
    "sum_axis_1d", "sum_axis_2d", "sum_method_axis", "cumsum", "cumsum_axis",
    # arrays and reductions made from tuples of floats
    "array_of_tuple", "asarray_of_tuple", "sum_of_tuple", "mean_of_tuple_array",
    # fill
    "fill", "fill_inplace",
    # 2-D arrays
    "matrix_arg", "matrix_elem", "matrix_write", "matrix_temp", "matrix_recurrence",
    "transpose", "trace", "trace_offset", "triu", "tril",
    # exact zeros: inputs held at 0.0, masked square roots and logs, clamps
    "fixed_zero_input", "mask_where_sqrt", "mask_where_log", "mask_sqrt_loop", "mask_clamp",
    # sentinels and soft minima
    "sentinel_min", "sentinel_array", "softmin_exp", "softmin_log", "softmin_tuple",
    # powers: x ** 0.0 and x ** float(i) with x possibly exactly 0; smooth x ** y
    "pow_zero", "pow_loop_exponent", "pow_var",
}) | LIST_FEATURES | RECORD_FEATURES | SLICE_FEATURES | FIELD_FEATURES | ORDER_FEATURES \
    | NESTED_FEATURES


# groups of constructs; each wide kernel writes those of a random subset ("swarm testing": a
# kernel without namedtuples still checks its axis sums when moonlite refuses namedtuples)
WIDE_GROUPS = ("kw", "namedtuple", "jitclass", "axis", "tuple_array", "fill", "matrix", "mask",
               "sentinel", "pow")
WIDE_GROUP_CHANCE = 0.35
FIELDS_GROUP_CHANCE = 0.2  # each such kernel compiles a jitclass's methods in every mode
# groups drawing from random streams of their own
_OWN_STREAMS = ("lists", "records", "slices", "fields", "orders", "nested")


class _WideGen(_Gen):
    """The wide profile: the default profile's statements (loops, branches, in-place updates,
    helpers, tuples) mixed with constructs the default profile never writes, chosen because a
    reverse pass that does not know them gives silently wrong derivatives:

    - helpers with defaulted parameters, called with keyword arguments or leaving defaults out;
    - floats kept in `collections.namedtuple`s (built in the kernel, read back by field and by
      index, unpacked, rebuilt in loops, passed to helpers) and in `@jitclass` instances (a
      field computed in `__init__`, fields read back, a method computing from them, an instance
      rebuilt in a loop from the last one);
    - `np.sum(v, axis=0/-1)`, `np.sum(A, axis=0/1/-1)`, `a.sum(axis=...)`, `np.cumsum` with and
      without an axis, on 1-D arrays and n x n matrices;
    - `np.array((a, b, c))`, `np.asarray((a, b))` of computed floats, the builtin
      `sum((a, b, c))`, `np.mean`/`np.sum`/`np.dot` of such arrays (numba itself refuses
      `np.sum((a, b))` and `np.mean((a, b))` of a bare tuple, so they are not written);
    - `arr.fill(value)` with a computed value, on temporaries and on arguments;
    - matrix arguments and temporaries: indexing `A[i, j]`, writes in nested loops (also
      reading the transposed entry), `A.T`, `np.trace(A, offset=k)`, `np.triu(A, k)`,
      `np.tril(A, k)`;
    - exact zeros: argument entries held at exactly 0.0 (`FIXED_ZEROS`; the checker never
      moves them), clamps `max(e, 0.0)`/`np.maximum(a, 0.0)`, and square roots or `d log d`
      of such arrays masked by `np.where(d > 0.0, ..., 0.0)` or by a branch in a loop;
    - sentinels: a running minimum that starts at 1.7976931348623157e308 and soft minima
      `exp(-m / t)` (scalar, array, log-sum-exp, array of a tuple) over values that may still
      hold it, with a computed temperature t;
    - `x ** 0.0` and `x ** float(i)` where x may be exactly 0 (fixed entries, clamps, tanh of
      those), and smooth `(1 + e**2) ** (0.5 * tanh(e))`.

    Each kernel draws the groups of constructs it may write (`WIDE_GROUPS`, each with chance
    `WIDE_GROUP_CHANCE`, at least one; named in the source's second line), so that a construct
    moonlite refuses leaves most kernels checkable.

    Where a derivative is not defined at an exact zero (a square root at 0), the kernel makes
    the point smooth along every direction the checker uses: the zero is either a fixed entry
    (its direction is 0) or a clamp of a value away from 0 (locally constant), and its square
    root is masked out. x ** y is written with y exactly 0 only when y does not depend on the
    inputs (a constant or a loop index), and bases that may be 0 get integer exponents only.
    """

    SCALAR_KINDS = ("scalar", "kw")

    def __init__(self, seed: int):
        super().__init__(seed)
        self.seed = seed
        self.r = random.Random(f"moonlite-fuzz-wide-{seed}")
        self.prelude: list = []  # module-level namedtuple and jitclass definitions
        self.nt_classes: list = []  # (name, fields)
        self.jc_classes: list = []  # names
        self.fixed: dict = {}  # argument name -> flat indices held at exactly 0.0
        self.n = 2
        self.groups: frozenset = frozenset(WIDE_GROUPS)
        # the lists group draws from its own stream (gen_lists.py): kernels without it are
        # the text they were before it existed
        self.lists_rng = random.Random(f"moonlite-fuzz-wide-lists-{seed}")
        self.records_rng = random.Random(f"moonlite-fuzz-wide-records-{seed}")  # likewise
        self.slices_rng = random.Random(f"moonlite-fuzz-wide-slices-{seed}")  # likewise
        self.fields_rng = random.Random(f"moonlite-fuzz-wide-fields-{seed}")  # likewise
        self.orders_rng = random.Random(f"moonlite-fuzz-wide-orders-{seed}")  # likewise
        self.nested_rng = random.Random(f"moonlite-fuzz-wide-nested-{seed}")  # likewise

    # ---- the module
    def source(self) -> tuple:
        groups = [g for g in WIDE_GROUPS if self.chance(WIDE_GROUP_CHANCE)]
        self.groups = frozenset(groups or [self.r.choice(WIDE_GROUPS)])
        if self.lists_rng.random() < WIDE_GROUP_CHANCE:
            self.groups |= {"lists"}
        if self.records_rng.random() < WIDE_GROUP_CHANCE:
            self.groups |= {"records"}
        if self.slices_rng.random() < WIDE_GROUP_CHANCE:
            self.groups |= {"slices"}
        if self.fields_rng.random() < FIELDS_GROUP_CHANCE:
            self.groups |= {"fields"}
        if self.orders_rng.random() < WIDE_GROUP_CHANCE:
            self.groups |= {"orders"}
        if self.nested_rng.random() < WIDE_GROUP_CHANCE:
            self.groups |= {"nested"}
        self.n = self.r.randint(2, 5)
        for index in range(self.r.choice([1, 1, 2])):
            self.helper(index)
        names, kinds, _ = self.kernel()
        if self.fixed:
            self.features.add("fixed_zero_input")
        fixed = {k: tuple(v) for k, v in self.fixed.items()}
        text = (f"# moonlite fuzz kernel, wide profile, seed {self.seed}\n"
                f"# construct groups: "
                f"{', '.join(g for g in WIDE_GROUPS + _OWN_STREAMS if g in self.groups)}\n"
                + WIDE_HEADER
                + "# argument entries (flat indices) the checker sets to exactly 0.0 and never "
                  "moves\n" + f"FIXED_ZEROS = {fixed!r}\n\n\n")
        if self.prelude:
            text += "\n".join(self.prelude) + "\n"
        text += "\n".join(self.lines) + "\n"
        return text, names, kinds, self.n, frozenset(self.features)

    def helper(self, index: int) -> None:
        kinds = ["scalar", "tuple_ret", "tuple_arg", "array_read", "array_write", "mixed_tuple"]
        if "kw" in self.groups:
            kinds += ["kw"] * 6
        if "namedtuple" in self.groups:
            kinds += ["nt_arg"] * 2
        self.helper_of_kind(index, self.r.choice(kinds))

    def nt_class(self) -> tuple:
        if self.nt_classes and self.chance(0.6):
            return self.r.choice(self.nt_classes)
        name = f"Pair{len(self.nt_classes)}"
        fields = ("a", "b") if self.chance(0.6) else ("a", "b", "c")
        self.prelude += [f"{name} = collections.namedtuple({name!r}, {list(fields)!r})", "", ""]
        self.nt_classes.append((name, fields))
        return name, fields

    def jc_class(self) -> str:
        if self.jc_classes and self.chance(0.5):
            return self.r.choice(self.jc_classes)
        name = f"Box{len(self.jc_classes)}"
        init = self.expr(_Scope(floats=["a", "b"]), 1)
        value = self.expr(_Scope(floats=["self.a", "self.b", "q"]), 2)
        self.prelude += ['@jitclass([("a", numba.float64), ("b", numba.float64)])',
                         f"class {name}:", "    def __init__(self, a, b):", "        self.a = a",
                         f"        self.b = {init}", "", "    def value(self, q):",
                         f"        return {value}", "", ""]
        self.jc_classes.append(name)
        return name

    # ---- helper calls
    def call_text(self, h, floats) -> str:
        if h.kind != "kw":
            return super().call_text(h, floats)
        params = [f"q{j}" for j in range(h.nfloat)]
        required = h.nfloat - h.ndefault
        form = self.r.choice(["positional", "keyword", "keyword", "default", "all_keywords"])
        if form == "positional":
            parts = list(floats)
        elif form == "default":
            self.features.add("default_arg")
            parts = list(floats[:required])
        elif form == "keyword":
            self.features.add("kwarg_call")
            parts = list(floats[:required]) + [f"{q}={e}" for q, e in
                                               zip(params[required:], floats[required:])]
        else:
            self.features.add("kwarg_call")
            parts = [f"{q}={e}" for q, e in zip(params, floats)]
            self.r.shuffle(parts)
        return f"{h.name}({', '.join(parts)})"

    def call_helper(self, h, s, indent, targets) -> None:
        if h.kind == "kw":
            self.features.add("helper_kw")
            call = self.call_text(h, [self.expr(s, 1) for _ in range(h.nfloat)])
            if targets and self.chance(0.5):
                self.emit(indent, f"{self.r.choice(targets)} += {call}")
            else:
                self.new_named(s, indent, call, targets)
        elif h.kind == "nt_arg":
            self.features.add("namedtuple_helper")
            if s.nts and self.chance(0.6):
                pair = self.r.choice(s.nts)[0]
            else:
                self.features.add("namedtuple")
                cls, fields = self.nt_class()
                pair = f"{cls}({', '.join(self.expr(s, 1) for _ in fields)})"
            floats = ", ".join(self.expr(s, 1) for _ in range(h.nfloat))
            self.new_named(s, indent, f"{h.name}({pair}, {floats})", targets)
        else:
            super().call_helper(h, s, indent, targets)

    def new_named(self, s, indent, value, targets) -> str:
        t = self.fresh("t")
        self.emit(indent, f"{t} = {value}")
        s.floats.append(t)
        targets.append(t)
        return t

    # ---- expressions
    def leaf(self, s: _Scope) -> str:
        if self.chance(0.2):
            e = self.wide_leaf(s)
            if e is not None:
                return e
        return super().leaf(s)

    def sub(self, s: _Scope) -> str:
        """A small operand inside a wide leaf (a default-profile leaf: no recursion)."""
        return _Gen.leaf(self, s)

    def some_index(self, s: _Scope) -> str:
        if s.idx and self.chance(0.6):
            return self.r.choice(s.idx)
        return str(self.r.randrange(2))

    def wide_leaf(self, s: _Scope):
        opts = []
        if s.floats and "tuple_array" in self.groups:
            opts += ["tuple_reduce"]
        if s.mats:
            opts += ["mat_elem"] * 3 + ["mat_reduce"] * 3
        if s.arrays and "axis" in self.groups:
            opts += ["vec_axis"] * 2
        if s.nts:
            opts += ["nt_field"] * 3
        if s.objs:
            opts += ["obj_field"] * 3
        if not opts:
            return None
        kind = self.r.choice(opts)
        if kind == "tuple_reduce":
            e = [self.sub(s) for _ in range(3)]
            form = self.r.choice(["sum3", "sum2", "array", "mean"])
            if form == "sum3":
                self.features.add("sum_of_tuple")
                return f"sum(({e[0]}, {e[1]}, {e[2]}))"
            if form == "sum2":
                self.features.add("sum_of_tuple")
                return f"sum(({e[0]}, {e[1]}))"
            if form == "array":
                self.features.add("array_of_tuple")
                return f"np.array(({e[0]}, {e[1]}, {e[2]}))[{self.r.randrange(3)}]"
            self.features.add("mean_of_tuple_array")
            self.features.add("asarray_of_tuple")
            return f"np.mean(np.asarray(({e[0]}, {e[1]})))"
        if kind == "mat_elem":
            self.features.add("matrix_elem")
            A, n = self.r.choice(s.mats), s.n
            if len(s.idx) >= 2:
                i, j = self.r.sample(s.idx, 2)
                return self.r.choice([f"{A}[{i}, {j}]", f"{A}[{j}, {i}]", f"{A}[{i}, {j} - 1]",
                                      f"{A}[({i} + 1) % {n}, {j}]"])
            if s.idx:
                i = s.idx[0]
                return self.r.choice([f"{A}[{i}, {i}]", f"{A}[{i}, 0]", f"{A}[0, {i}]",
                                      f"{A}[({i} + 1) % {n}, {i}]", f"{A}[{i}, {i} - 1]"])
            return self.r.choice([f"{A}[0, 1]", f"{A}[1, 0]", f"{A}[1, 1]", f"{A}[{n} - 1, 0]"])
        if kind == "mat_reduce":
            A = self.r.choice(s.mats)
            B = self.r.choice(s.mats)
            k = self.r.choice([1, -1, 1, -1, 2, 0])
            forms = ["trace", "trace_off", "trace_off", "triu", "tril", "transpose"]
            if "axis" in self.groups:
                forms += ["axis", "axis", "axis_dot"]
            form = self.r.choice(forms)
            if form == "trace":
                self.features.add("trace")
                return f"np.trace({A})"
            if form == "trace_off":
                self.features.add("trace_offset")
                k = k or 1
                return self.r.choice([f"np.trace({A}, offset={k})", f"np.trace({A}, {k})"])
            if form in ("triu", "tril"):
                self.features.add(form)
                kk = self.r.choice([f"{k}", f"k={k}"])
                return self.r.choice([f"np.sum(np.{form}({A}, {kk}))",
                                      f"np.sum(np.{form}({A}, {kk}) * {B})"])
            if form == "axis":
                ax = self.r.choice([0, 1, -1])
                if self.chance(0.5):
                    self.features.add("sum_axis_2d")
                    return f"np.sum({A}, axis={ax})[{self.some_index(s)}]"
                self.features.add("sum_method_axis")
                return f"{A}.sum(axis={ax})[{self.some_index(s)}]"
            if form == "axis_dot" and s.arrays:
                self.features.add("sum_axis_2d")
                return f"np.dot(np.sum({A}, axis={self.r.choice([0, 1, -1])}), " \
                       f"{self.r.choice(s.arrays)})"
            self.features.add("transpose")
            return f"np.sum({A}.T * {B})"
        if kind == "vec_axis":
            v = self.r.choice(s.arrays)
            w = self.r.choice(s.arrays)
            form = self.r.choice(["sum", "sum", "method", "cumsum", "cumsum_axis", "cumsum_dot"])
            if form == "sum":
                self.features.add("sum_axis_1d")
                return f"np.sum({v}, axis={self.r.choice([0, -1])})"
            if form == "method":
                self.features.add("sum_method_axis")
                return f"{v}.sum(axis={self.r.choice([0, -1])})"
            if form == "cumsum":
                self.features.add("cumsum")
                return self.r.choice([f"np.cumsum({v})[{self.some_index(s)}]",
                                      f"{v}.cumsum()[{s.n} - 1]"])
            self.features.add("cumsum_axis")
            if form == "cumsum_axis":
                return f"np.cumsum({v}, axis={self.r.choice([0, -1])})[{self.some_index(s)}]"
            return f"np.dot(np.cumsum({v}, axis=0), {w})"
        if kind == "nt_field":
            p, fields = self.r.choice(s.nts)
            if self.chance(0.5):
                self.features.add("namedtuple_attr")
                return f"{p}.{self.r.choice(fields)}"
            self.features.add("namedtuple_index")
            return f"{p}[{self.r.randrange(len(fields))}]"
        o = self.r.choice(s.objs)
        if self.chance(0.5):
            self.features.add("jitclass_field")
            return f"{o}.{self.r.choice(['a', 'b'])}"
        self.features.add("jitclass_method")
        return f"{o}.value({self.sub(s)})"

    # ---- statements
    def has_n(self, s: _Scope) -> bool:
        """Whether `s.n` names a length here (a scalar helper has no array to take it from)."""
        return s.n == "n" or bool(s.arrays)

    def stmt(self, s: _Scope, indent: int, depth: int, targets: list) -> None:
        if not self.chance(0.35):
            return super().stmt(s, indent, depth, targets)
        loops = depth < MAX_BLOCK_DEPTH and self.has_n(s)
        g = self.groups
        kinds = []
        if "namedtuple" in g:
            kinds += ["namedtuple", "namedtuple"]
        if "tuple_array" in g:
            kinds += ["tuple_array"]
        if "jitclass" in g:
            kinds += ["jitclass"]
        if "pow" in g:
            kinds += ["pow", "pow"]
        if self.has_n(s) and "mask" in g:
            kinds += ["mask", "mask"]
        if self.has_n(s) and "fill" in g:
            kinds += ["fill"]
        if loops and depth == 0 and "sentinel" in g:
            kinds += ["sentinel", "sentinel"]
        if (s.arrays or s.mats) and "axis" in g:
            kinds += ["axis_temp"]
        if "matrix" in g and (s.mats or (loops and depth == 0 and s.n == "n")):
            kinds += ["mat_temp"]
        if s.mats and loops and depth == 0:
            kinds += ["mat_loop", "mat_loop"]
        if not kinds:
            return super().stmt(s, indent, depth, targets)
        getattr(self, "w_" + self.r.choice(kinds))(s, indent, depth, targets)
        return None

    def w_namedtuple(self, s, indent, depth, targets) -> None:
        cls, fields = self.nt_class()
        self.features.add("namedtuple")
        p = self.fresh("p")
        vals = [self.expr(s, 1) for _ in fields]
        if self.chance(0.3):
            self.features.add("namedtuple_kw_build")
            self.emit(indent, f"{p} = {cls}({', '.join(f'{f}={v}' for f, v in zip(fields, vals))})")
        else:
            self.emit(indent, f"{p} = {cls}({', '.join(vals)})")
        forms = ["attr", "index", "unpack", "keep"]
        if depth < MAX_BLOCK_DEPTH and self.has_n(s):
            forms += ["rebind"]
        form = self.r.choice(forms)
        if form == "unpack":
            self.features.add("namedtuple_unpack")
            names = [self.fresh("u") for _ in fields]
            self.emit(indent, f"{', '.join(names)} = {p}")
            s.floats += names
            targets += names
        elif form == "attr":
            self.features.add("namedtuple_attr")
            self.new_named(s, indent, f"{p}.a * {p}.b + {p}.{fields[-1]}", targets)
        elif form == "index":
            self.features.add("namedtuple_index")
            self.new_named(s, indent, f"{p}[0] + {p}[1] * {p}[{len(fields) - 1}]", targets)
        elif form == "rebind":
            self.features.add("namedtuple_rebind")
            rest = [f"{p}[{j}]" for j in range(1, len(fields))]
            self.rebuild_in_loop(s, indent, p, lambda first: f"{cls}({', '.join([first] + rest)})")
            self.new_named(s, indent, f"{p}.a + {p}[1]", targets)
        s.nts.append((p, fields))

    def rebuild_in_loop(self, s, indent, name: str, build) -> None:
        """A loop rebinding `name` to `build(first)` at every iteration, `first` a new value
        of its field `a` computed from the last one (a fixed count of times in a scalar helper,
        which has no length to loop over)."""
        i = self.fresh("i")
        self.emit(indent, f"for {i} in range({s.n if self.has_n(s) else 3}):")
        inner = s.child()
        inner.idx.append(i)
        first = f"0.5 * {name}.a + {self.mathf('tanh')}({self.expr(inner, 1)})"
        self.emit(indent + 1, f"{name} = {build(first)}")

    def w_jitclass(self, s, indent, depth, targets) -> None:
        cls = self.jc_class()
        self.features.add("jitclass")
        o = self.fresh("o")
        self.emit(indent, f"{o} = {cls}({self.expr(s, 1)}, {self.expr(s, 1)})")
        s.objs.append(o)
        form = self.r.choice(["fields", "method", "both", "rebuild"])
        if form == "rebuild":  # a new instance each iteration, from the last one's fields
            self.features.add("jitclass_rebuild")
            self.rebuild_in_loop(s, indent, o, lambda first: f"{cls}({first}, {o}.value({o}.b))")
            self.new_named(s, indent, f"{o}.a * {o}.b", targets)
        elif form == "fields":
            self.features.add("jitclass_field")
            self.new_named(s, indent, f"{o}.a * {o}.b", targets)
        elif form == "method":
            self.features.add("jitclass_method")
            self.new_named(s, indent, f"{o}.value({self.expr(s, 1)})", targets)
        else:
            self.features.update(("jitclass_field", "jitclass_method"))
            self.new_named(s, indent, f"{o}.b + {o}.value({o}.a)", targets)

    def w_tuple_array(self, s, indent, depth, targets) -> None:
        e = [self.expr(s, 1) for _ in range(3)]
        form = self.r.choice(["array3", "asarray2", "sum3", "mean2", "array_sum"])
        if form == "array3":
            self.features.add("array_of_tuple")
            w = self.fresh("w")
            self.emit(indent, f"{w} = np.array(({e[0]}, {e[1]}, {e[2]}))")
            if self.chance(0.5):
                self.emit(indent, f"{w}[{self.r.randrange(3)}] += {self.expr(s, 1)}")
            fn = self.r.choice(["sin", "tanh", "cos"])
            self.new_named(s, indent, f"np.sum({w} * np.{fn}({w})) + {w}[{self.r.randrange(3)}]",
                           targets)
        elif form == "asarray2":
            self.features.add("asarray_of_tuple")
            w = self.fresh("w")
            self.emit(indent, f"{w} = np.asarray(({e[0]}, {e[1]}))")
            self.new_named(s, indent, f"np.dot({w}, {w}) + {w}[1] * {e[2]}", targets)
        elif form == "sum3":
            self.features.add("sum_of_tuple")
            self.new_named(s, indent, f"sum(({e[0]}, {e[1]}, {e[2]}))", targets)
        elif form == "mean2":
            self.features.update(("mean_of_tuple_array", "asarray_of_tuple"))
            self.new_named(s, indent, f"np.mean(np.asarray(({e[0]}, {e[1]}))) * {e[2]}", targets)
        else:
            self.features.update(("array_of_tuple", "mean_of_tuple_array"))
            self.new_named(s, indent, f"np.sum(np.array(({e[0]}, {e[1]}))) + "
                                      f"np.mean(np.array(({e[1]}, {e[2]}, {e[0]})))", targets)

    def w_fill(self, s, indent, depth, targets) -> None:
        forms = ["empty", "copy"] if s.arrays else ["empty"]
        if s.arrays:
            forms += ["inplace"]
        if s.n == "n" and depth == 0 and "matrix" in self.groups:
            forms += ["matrix"]
        form = self.r.choice(forms)
        self.features.add("fill")
        e = self.expr(s, 1)
        w = self.fresh("w")
        if form == "inplace":
            self.features.add("fill_inplace")
            self.emit(indent, f"{self.r.choice(s.arrays)}.fill({e})")
            return
        if form == "matrix":
            self.features.add("matrix_temp")
            self.emit(indent, f"{w} = np.empty(({s.n}, {s.n}))")
            self.emit(indent, f"{w}.fill({e})")
            self.emit(indent, f"{w}[0, 1] += {self.expr(s, 1)}")
            s.mats.append(w)
            return
        if form == "empty":
            self.emit(indent, f"{w} = np.empty({s.n})")
        else:
            self.emit(indent, f"{w} = {self.r.choice(s.arrays)}.copy()")
        self.emit(indent, f"{w}.fill({e})")
        if self.chance(0.6):
            self.emit(indent, f"{w}[{self.some_index(s)}] += {self.expr(s, 1)}")
        s.arrays.append(w)

    def w_mask(self, s, indent, depth, targets) -> None:
        loops = depth < MAX_BLOCK_DEPTH
        sources = []
        if s.arrays:
            sources += ["array", "array", "scaled", "maximum"]
        if s.mats:
            sources += ["matrix", "matrix_maximum"]
        if loops:
            sources += ["clamp"]
        if not sources:
            return super().stmt(s, indent, depth, targets)
        src = self.r.choice(sources)
        is_mat = src.startswith("matrix")
        if src == "array":
            d = self.r.choice(s.arrays)
        elif src == "matrix":
            d = self.r.choice(s.mats)
        else:
            d = self.fresh("d")
            if src == "scaled":
                self.emit(indent, f"{d} = {self.r.choice(s.arrays)} * {self.expr(s, 1)}")
            elif src in ("maximum", "matrix_maximum"):
                self.features.add("mask_clamp")
                a = self.r.choice(s.mats if is_mat else s.arrays)
                self.emit(indent, f"{d} = np.maximum({a}, 0.0)")
            else:
                self.features.add("mask_clamp")
                self.emit(indent, f"{d} = np.empty({s.n})")
                i = self.fresh("i")
                self.emit(indent, f"for {i} in range({s.n}):")
                inner = s.child()
                inner.idx.append(i)
                self.emit(indent + 1, f"{d}[{i}] = max({self.expr(inner, 1)}, 0.0)")
        forms = ["where", "where", "where_expr", "where_log"]
        if loops and not is_mat:
            forms += ["loop", "loop"]
        form = self.r.choice(forms)
        if form == "where":
            self.features.add("mask_where_sqrt")
            r = self.fresh("w")
            self.emit(indent, f"{r} = np.where({d} > 0.0, np.sqrt({d}), 0.0)")
            (s.mats if is_mat else s.arrays).append(r)
            self.new_named(s, indent, f"np.sum({r} * {r}) + np.sum({r})" if self.chance(0.5)
                           else f"np.sum({r})", targets)
        elif form == "where_expr":
            self.features.add("mask_where_sqrt")
            self.new_named(s, indent, f"np.sum(np.where({d} > 0.0, np.sqrt({d}) * "
                                      f"{self.expr(s, 1)}, 0.0))", targets)
        elif form == "where_log":
            self.features.add("mask_where_log")
            self.new_named(s, indent, f"np.sum(np.where({d} > 0.0, {d} * np.log({d}), 0.0))",
                           targets)
        else:
            self.features.add("mask_sqrt_loop")
            r, acc, i = self.fresh("r"), self.fresh("t"), self.fresh("i")
            self.emit(indent, f"{r} = np.sqrt({d})")
            self.emit(indent, f"{acc} = 0.0")
            self.emit(indent, f"for {i} in range({s.n}):")
            inner = s.child()
            inner.idx.append(i)
            self.emit(indent + 1, f"if {d}[{i}] > 0.0:")
            self.emit(indent + 2, f"{acc} += {r}[{i}] * {self.expr(inner, 1)}")
            s.floats.append(acc)
            targets.append(acc)
        return None

    def zero_base(self, s, i=None) -> str:
        """A base that may be exactly 0.0: a fixed argument entry, a clamp, or tanh of those."""
        opts = ["clamp", "clamp_tanh"]
        fixed_arrays = [a for a in s.arrays if a in self.fixed]
        fixed_floats = [x for x in s.floats if x in self.fixed]
        if fixed_arrays:
            opts += ["fixed_elem"] * 3
        if fixed_floats:
            opts += ["fixed_float"] * 2
        form = self.r.choice(opts)
        if form == "fixed_elem":
            a = self.r.choice(fixed_arrays)
            k = i if i is not None and self.chance(0.5) else self.fixed[a][0]
            return f"{a}[{k}]" if self.chance(0.6) else f"{self.mathf('tanh')}({a}[{k}])"
        if form == "fixed_float":
            return self.r.choice(fixed_floats)
        e = self.expr(s, 1)
        if form == "clamp":
            return f"max({self.mathf('tanh')}({e}), 0.0)"
        return f"{self.mathf('tanh')}(min({e}, 0.0))"

    def w_pow(self, s, indent, depth, targets) -> None:
        forms = ["zero", "zero", "var"]
        if s.idx:
            forms += ["index"]
        if depth < MAX_BLOCK_DEPTH and self.has_n(s):
            forms += ["loop", "loop"]
        form = self.r.choice(forms)
        if form == "var":
            self.features.add("pow_var")
            self.new_named(s, indent, f"(1.0 + ({self.expr(s, 1)}) ** 2) ** "
                                      f"(0.5 * {self.mathf('tanh')}({self.expr(s, 1)}))", targets)
        elif form == "zero":
            self.features.add("pow_zero")
            b1, b2 = self.zero_base(s), self.zero_base(s)
            p2 = self.r.choice(["1.0", "2.0", "3.0"])
            self.new_named(s, indent, f"{b1} ** 0.0 + {b2} ** {p2} * {self.expr(s, 1)}", targets)
        elif form == "index":
            self.features.update(("pow_zero", "pow_loop_exponent"))
            i = self.r.choice(s.idx)
            expo = self.r.choice([f"float({i})", f"({i} * 1.0)"])
            self.new_named(s, indent, f"{self.zero_base(s, i)} ** {expo}", targets)
        else:
            self.features.update(("pow_zero", "pow_loop_exponent"))
            acc, i = self.fresh("t"), self.fresh("i")
            self.emit(indent, f"{acc} = 0.0")
            self.emit(indent, f"for {i} in range({s.n}):")
            inner = s.child()
            inner.idx.append(i)
            expo = self.r.choice([f"float({i})", f"({i} * 1.0)"])
            self.emit(indent + 1, f"{acc} += {self.zero_base(inner, i)} ** {expo}")
            s.floats.append(acc)
            targets.append(acc)

    def w_sentinel(self, s, indent, depth, targets) -> None:
        n = s.n
        tt = self.fresh("tt")
        if self.chance(0.8):
            self.emit(indent, f"{tt} = 0.5 + 0.25 * {self.mathf('tanh')}({self.expr(s, 1)})")
        else:
            self.emit(indent, f"{tt} = 0.5")
        form = self.r.choice(["scalar", "array", "logsumexp", "tuple"])
        i = self.fresh("i")
        inner = s.child()
        inner.idx.append(i)
        exp = self.mathf("exp")
        if form == "array":
            self.features.update(("sentinel_array", "sentinel_min"))
            b = self.fresh("b")
            self.emit(indent, f"{b} = np.full({n}, {SENTINEL})")
            self.emit(indent, f"for {i} in range({n} - 1):  # the last entry keeps the sentinel")
            if self.chance(0.5):
                self.emit(indent + 1, f"if {self.cond(inner)}:")
                self.emit(indent + 2, f"{b}[{i}] = min({b}[{i}], ({self.expr(inner, 1)}) ** 2)")
            else:
                self.emit(indent + 1, f"{b}[{i}] = min({b}[{i}], ({self.expr(inner, 1)}) ** 2)")
            self.features.add("softmin_exp")
            value = self.r.choice([f"np.sum(np.exp(-{b} / {tt}))",
                                   f"np.sum({b} * np.exp(-{b} / {tt}))"])
            self.new_named(s, indent, value, targets)
            return
        self.features.add("sentinel_min")
        m, dd = self.fresh("m"), self.fresh("dd")
        self.emit(indent, f"{m} = {SENTINEL}")
        self.emit(indent, f"for {i} in range({n}):")
        self.emit(indent + 1, f"{dd} = ({self.expr(inner, 1)}) ** 2")
        if self.chance(0.5):
            self.emit(indent + 1, f"if {self.cond(inner)}:")
            self.emit(indent + 2, f"{m} = min({m}, {dd})")
        else:
            self.emit(indent + 1, f"if {dd} < {m} and {dd} < {self.r.choice(['0.05', '0.2'])}:")
            self.emit(indent + 2, f"{m} = {dd}")
        if form == "scalar":
            self.features.add("softmin_exp")
            self.new_named(s, indent, f"{exp}(-{m} / {tt})", targets)
        elif form == "logsumexp":
            self.features.add("softmin_log")
            self.new_named(s, indent, f"-{tt} * {self.mathf('log')}({exp}(-{m} / {tt}) + "
                                      f"{exp}(-({self.expr(s, 1)}) ** 2 / {tt}) + 1e-300)",
                           targets)
        else:
            self.features.add("softmin_tuple")
            v = self.fresh("w")
            self.emit(indent, f"{v} = np.array(({m}, ({self.expr(s, 1)}) ** 2, "
                              f"({self.expr(s, 1)}) ** 2))")
            self.new_named(s, indent, f"np.sum(np.exp(-{v} / {tt}))", targets)

    def w_axis_temp(self, s, indent, depth, targets) -> None:
        forms = []
        if s.mats and "axis" in self.groups:
            forms += ["mat_axis", "mat_axis", "mat_method"]
        if s.arrays:
            forms += ["cumsum", "scalar"]
        form = self.r.choice(forms)
        w = self.fresh("w")
        if form == "scalar":
            self.features.add("sum_axis_1d")
            v = self.r.choice(s.arrays)
            self.new_named(s, indent, f"np.sum({v}, axis={self.r.choice([0, -1])}) * "
                                      f"{self.expr(s, 1)}", targets)
            return
        if form == "cumsum":
            v = self.r.choice(s.arrays)
            choice = self.r.choice([f"np.cumsum({v})", f"{v}.cumsum()",
                                    f"np.cumsum({v}, axis=0)", f"np.cumsum({v}, axis=-1)"])
            self.features.add("cumsum_axis" if "axis" in choice else "cumsum")
            self.emit(indent, f"{w} = {choice}")
        else:
            A, ax = self.r.choice(s.mats), self.r.choice([0, 1, -1])
            if form == "mat_axis":
                self.features.add("sum_axis_2d")
                self.emit(indent, f"{w} = np.sum({A}, axis={ax})")
            else:
                self.features.add("sum_method_axis")
                self.emit(indent, f"{w} = {A}.sum(axis={ax})")
        s.arrays.append(w)

    def w_mat_temp(self, s, indent, depth, targets) -> None:
        M = self.fresh("M")
        self.features.add("matrix_temp")
        if not s.mats:
            self.emit(indent, f"{M} = np.zeros(({s.n}, {s.n}))")
            i, j = self.fresh("i"), self.fresh("j")
            self.emit(indent, f"for {i} in range({s.n}):")
            self.emit(indent + 1, f"for {j} in range({s.n}):")
            inner = s.child()
            inner.idx += [i, j]
            self.features.add("matrix_write")
            self.emit(indent + 2, f"{M}[{i}, {j}] = {self.expr(inner, 1)}")
            s.mats.append(M)
            return
        A = self.r.choice(s.mats)
        form = self.r.choice(["triu", "tril", "copy", "cumsum", "expr", "transpose"])
        if form in ("triu", "tril"):
            self.features.add(form)
            k = self.r.choice([1, -1, 1, -1, 2, 0])
            self.emit(indent, f"{M} = np.{form}({A}, {self.r.choice([f'{k}', f'k={k}'])})")
        elif form == "copy":
            self.emit(indent, f"{M} = {A}.copy()")
        elif form == "cumsum":
            self.features.add("cumsum_axis")
            self.emit(indent, f"{M} = np.cumsum({A}, axis={self.r.choice([0, 1, -1])})")
        elif form == "expr":
            e = self.expr(_Scope(s.floats, (), (), s.n, s.tuples), 1)
            self.emit(indent, f"{M} = {A} * {e} + np.{self.r.choice(['sin', 'tanh'])}({A})")
        else:
            self.features.add("transpose")
            e = self.expr(_Scope(s.floats, (), (), s.n, s.tuples), 1)
            self.emit(indent, f"{M} = {A}.T * {e} + {self.r.choice(s.mats)}")
        s.mats.append(M)

    def w_mat_loop(self, s, indent, depth, targets) -> None:
        M = self.r.choice(s.mats)
        i, j = self.fresh("i"), self.fresh("j")
        self.emit(indent, f"for {i} in range({s.n}):")
        self.emit(indent + 1, f"for {j} in range({s.n}):")
        inner = s.child()
        inner.idx += [i, j]
        self.features.add("matrix_write")
        self.write_matrix(inner, indent + 2, M, f"{i}, {j}", j)
        if self.chance(0.4):
            self.stmt(inner, indent + 2, MAX_BLOCK_DEPTH, list(targets))

    def write_matrix(self, s, indent, M, at, j) -> None:
        e = self.bounded(s)
        form = self.r.choice(["+=", "=", "*=", "-=", "rec", "transposed"])
        if form == "*=":
            self.emit(indent, f"{M}[{at}] *= 1.0 + 0.25 * {self.mathf('sin')}({e})")
        elif form == "rec":
            self.features.add("matrix_recurrence")
            row = at.split(",")[0]
            self.emit(indent, f"{M}[{at}] = 0.5 * {M}[{row}, {j} - 1] + {e}")
        elif form == "transposed":
            self.features.add("transpose")
            r, c = (x.strip() for x in at.split(","))
            self.emit(indent, f"{M}[{at}] += 0.5 * {M}[{c}, {r}] + {e}")
        else:
            self.emit(indent, f"{M}[{at}] {form} {e}")

    def write_elem(self, s, indent, i) -> None:
        if s.mats and self.chance(0.35):
            self.features.add("matrix_write")
            M = self.r.choice(s.mats)
            others = [x for x in s.idx if x != i]
            if others and self.chance(0.6):
                at = f"{self.r.choice(others)}, {i}"
            else:
                at = self.r.choice([f"{i}, {i}", f"{i}, 0", f"0, {i}"])
            return self.write_matrix(s, indent, M, at, i)
        return super().write_elem(s, indent, i)

    def kernel(self) -> tuple:
        nf = self.r.choice([0, 1, 1, 2])
        na = self.r.choice([0, 1, 1, 2])
        nm = self.r.choice([0, 1, 1]) if "matrix" in self.groups else 0
        if nf + na + nm == 0:
            na = 1
        with_n = na + nm > 0 and self.chance(0.4)
        names, kinds = [], []
        for prefix, count, kind in (("x", nf, "float"), ("a", na, "array"), ("A", nm, "matrix")):
            for j in range(count):
                names.append(f"{prefix}{j}")
                kinds.append(kind)
        if with_n:
            names.append("n")
            kinds.append("int")
        order = list(range(len(names)))
        self.r.shuffle(order)
        names = [names[j] for j in order]
        kinds = [kinds[j] for j in order]
        floats = [nm_ for nm_, k in zip(names, kinds) if k == "float"]
        arrays = [nm_ for nm_, k in zip(names, kinds) if k == "array"]
        mats = [nm_ for nm_, k in zip(names, kinds) if k == "matrix"]
        if mats:
            self.features.add("matrix_arg")
        # entries held at exactly 0.0 (make_args writes them, the checker never moves them)
        for a in arrays:
            if self.chance(0.5):
                self.fixed[a] = sorted(self.r.sample(range(self.n), self.r.randint(1, 2)))
        for A in mats:
            if self.chance(0.5):
                self.fixed[A] = sorted(self.r.sample(range(self.n * self.n),
                                                     self.r.randint(1, 3)))
        if floats and (arrays or mats or len(floats) > 1) and self.chance(0.25):
            self.fixed[self.r.choice(floats)] = [0]
        self.emit(0, "@numba.njit")
        self.emit(0, f"def kernel({', '.join(names)}):")
        if not with_n:
            if arrays:
                self.emit(1, "n = " + self.r.choice([f"len({arrays[0]})",
                                                     f"{arrays[0]}.shape[0]"]))
            elif mats:
                self.emit(1, "n = " + self.r.choice([f"len({mats[0]})", f"{mats[0]}.shape[0]"]))
            else:
                self.emit(1, f"n = {self.r.randint(2, 4)}")
        s = _Scope(floats=floats, arrays=arrays, mats=mats)
        acc = self.fresh("s")
        self.emit(1, f"{acc} = {'0.0' if self.chance(0.3) else self.expr(s, 1)}")
        s.floats.append(acc)
        targets = [acc] + floats
        for _ in range(self.r.randint(3, 5)):
            self.stmt(s, 1, 0, targets)
        if "slices" in self.groups and (s.arrays or s.mats):
            made = slice_block(self.slices_rng, s, self.fresh, self.emit, self.features)
            self.emit(1, f"{acc} += {made}")
        if "lists" in self.groups:
            made = list_block(self.lists_rng, s, self.fresh, self.emit, self.features,
                                  self.prelude)
            self.emit(1, f"{acc} += {made}")
        if "fields" in self.groups:
            made = field_block(self.fields_rng, s, self.fresh, self.emit, self.features,
                               self.prelude)
            self.emit(1, f"{acc} += {made}")
        if "records" in self.groups:
            made = record_block(self.records_rng, s, self.fresh, self.emit, self.features,
                                self.prelude)
            self.emit(1, f"{acc} += {made}")
        if "orders" in self.groups:
            made = order_block(self.orders_rng, s, self.fresh, self.emit, self.features)
            self.emit(1, f"{acc} += {made}")
        if "nested" in self.groups:
            made = nested_block(self.nested_rng, s, self.fresh, self.emit, self.features,
                                self.prelude)
            self.emit(1, f"{acc} += {made}")
        parts = [acc] + [v for v in s.floats if v not in floats][-4:]
        if s.arrays and self.chance(0.7):
            a = self.r.choice(s.arrays)
            parts.append(self.r.choice([f"np.sum({a})", f"np.sum({a} * {a})",
                                        f"np.dot({a}, {self.r.choice(s.arrays)})"]))
        if s.mats and self.chance(0.7):
            M = self.r.choice(s.mats)
            parts.append(self.r.choice([f"np.sum({M})", f"np.sum({M} * {M})", f"np.trace({M})"]))
        self.emit(1, f"return {' + '.join(dict.fromkeys(parts))}")
        return tuple(names), tuple(kinds), with_n


HEADER = "import math\n\nimport numba\nimport numpy as np\n\n\n"
WIDE_HEADER = ("import collections\nimport math\n\nimport numba\nimport numpy as np\n"
               "from numba.experimental import jitclass\n\n")
PROFILES = ("default", "wide")


def generate_source(seed: int, profile: str = "default") -> tuple:
    """(source, arg_names, arg_kinds, n, features) for `seed`; nothing is compiled.

    profile "default": the kernels of the 10,000-kernel campaign (never change them: regression
    tests name seeds); "wide": constructs the default profile does not write (see `_WideGen`).
    A wide kernel's module holds `FIXED_ZEROS` (argument name -> flat indices of entries that
    `make_args` sets to exactly 0.0 and the checker never moves)."""
    if profile == "wide":
        return _WideGen(seed).source()
    if profile != "default":
        raise ValueError(f"unknown fuzz profile {profile!r}; known: {PROFILES}")
    g = _Gen(seed)
    for index in range(g.r.choice([0, 1, 1, 2])):
        g.helper(index)
    names, kinds, _ = g.kernel()
    n = g.r.randint(2, 5)
    source = f"# moonlite fuzz kernel, seed {seed}\n" + HEADER + "\n".join(g.lines) + "\n"
    return source, names, kinds, n, frozenset(g.features)


def module_name(seed: int, profile: str = "default") -> str:
    return f"moonlite_fuzz_{seed}" if profile == "default" else f"moonlite_fuzz_{profile}_{seed}"


def generate_kernel(seed: int, profile: str = "default") -> KernelCase:
    """The kernel for `seed` in `profile`, written to the cache directory, imported and
    njit-wrapped (numba compiles it on first call)."""
    source, names, kinds, n, features = generate_source(seed, profile)
    module, path = load_module(source, module_name(seed, profile))
    fixed = {names.index(k): tuple(v) for k, v in getattr(module, "FIXED_ZEROS", {}).items()}
    return KernelCase(seed, source, "kernel", module.kernel, names, kinds, n, path, features,
                      fixed=fixed, profile=profile)


if __name__ == "__main__":
    # print kernels: python -m tests.fuzz.generator SEED [COUNT] [--profile wide]
    argv = [a for a in sys.argv[1:]]
    prof = "default"
    if "--profile" in argv:
        k = argv.index("--profile")
        prof = argv[k + 1]
        del argv[k:k + 2]
    start = int(argv[0]) if len(argv) > 0 else 0
    count = int(argv[1]) if len(argv) > 1 else 1
    for sd in range(start, start + count):
        print(generate_source(sd, prof)[0])
