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

Deliberately not generated: nested tuples (a documented reverse-mode limitation), in-place
`//=`, `%=`, `**=` on arrays (documented), recursion (documented), list literals, anything
object-mode (refused at capture by design), non-smooth math other than `min` clamps (`abs` and
comparisons in branches are the only other kinks), integer-valued outputs.

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

    @property
    def diff_argnums(self) -> tuple:
        """Indices of the differentiable (float and float-array) arguments."""
        return tuple(i for i, k in enumerate(self.arg_kinds) if k != "int")

    def make_args(self, rng: np.random.Generator) -> tuple:
        """Fresh arguments: floats and array entries uniform in [-1.5, 1.5]."""
        args = []
        for kind in self.arg_kinds:
            if kind == "float":
                args.append(float(rng.uniform(-1.5, 1.5)))
            elif kind == "array":
                args.append(rng.uniform(-1.5, 1.5, self.n))
            else:
                args.append(self.n)
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
                     module_name: str | None = None) -> KernelCase:
    """A KernelCase from hand-written source (regression tests with minimised kernels)."""
    import hashlib
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    module_name = module_name or f"moonlite_fuzz_manual_{name}_{digest}"
    module, path = load_module(source, module_name)
    func = getattr(module, name)
    import inspect
    names = tuple(inspect.signature(func.py_func).parameters)
    return KernelCase(seed, source, name, func, names, tuple(arg_kinds), n, path)


# --------------------------------------------------------------------------------------------
# the generator


@dataclass
class _Helper:
    name: str
    kind: str  # scalar, tuple_ret, tuple_arg, array_read, array_write, mixed_tuple
    nfloat: int  # number of float parameters after the structural ones


class _Scope:
    def __init__(self, floats=(), arrays=(), idx=(), n="n", tuples=()):
        self.floats = list(floats)
        self.arrays = list(arrays)
        self.idx = list(idx)
        self.n = n
        self.tuples = list(tuples)  # names of 2-tuples of floats

    def child(self) -> "_Scope":
        return _Scope(self.floats, self.arrays, self.idx, self.n, self.tuples)


class _Gen:
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
            scalar = [h for h in self.helpers if h.kind == "scalar"]
            if scalar:
                self.features.add("helper_in_expr")
                h = self.r.choice(scalar)
                return f"{h.name}({', '.join(self.expr(s, depth - 1) for _ in range(h.nfloat))})"
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
        h = self.r.choice(self.helpers)
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
        name = f"helper{index}"
        kind = self.r.choice(["scalar", "scalar", "tuple_ret", "tuple_arg", "array_read",
                              "array_write", "mixed_tuple"])
        nfloat = self.r.randint(1, 2)
        params = [f"q{j}" for j in range(nfloat)]
        s = _Scope(floats=params, n="b.shape[0]")
        self.emit(0, "@numba.njit")
        if kind == "tuple_arg":
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
        self.helpers.append(_Helper(name, kind, nfloat))

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


HEADER = "import math\n\nimport numba\nimport numpy as np\n\n\n"


def generate_source(seed: int) -> tuple:
    """(source, arg_names, arg_kinds, n, features) for `seed`; nothing is compiled."""
    g = _Gen(seed)
    for index in range(g.r.choice([0, 1, 1, 2])):
        g.helper(index)
    names, kinds, _ = g.kernel()
    n = g.r.randint(2, 5)
    source = f"# moonlite fuzz kernel, seed {seed}\n" + HEADER + "\n".join(g.lines) + "\n"
    return source, names, kinds, n, frozenset(g.features)


def generate_kernel(seed: int) -> KernelCase:
    """The kernel for `seed`, written to the cache directory, imported and njit-wrapped
    (numba compiles it on first call)."""
    source, names, kinds, n, features = generate_source(seed)
    module, path = load_module(source, f"moonlite_fuzz_{seed}")
    return KernelCase(seed, source, "kernel", module.kernel, names, kinds, n, path, features)


if __name__ == "__main__":  # print the kernels for some seeds: python -m tests.fuzz.generator 0 5
    start = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    for sd in range(start, start + count):
        print(generate_source(sd)[0])
