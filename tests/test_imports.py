"""Imports run one way (docs/architecture.md, "Layers").

The graph: one node per module of `src/moonlite/` (a package is its `__init__.py`), one edge per
import statement found anywhere in a module by `ast` (top level, inside functions, under
`if TYPE_CHECKING:`), relative imports resolved against the importing module's package.

- `import a.b.c` imports `a.b.c` only: the parent packages Python runs first are not edges
  (every module would otherwise depend on `moonlite/__init__`, which imports the API).
- `from pkg import name` imports `pkg.name` when that is a module, and `pkg` (its `__init__`)
  when `name` is something `pkg/__init__` defines. So `from . import ops` inside `ir/` is an
  edge to the sibling `ir.ops`, not to `ir/__init__`, and no false cycle appears.
- A submodule importing a name from its own package's `__init__` IS an edge, and with the
  `__init__` importing that submodule it is a real cycle (it works only while the `__init__`
  defines the name above its import of the submodule). Such cycles allowed would be
  listed in `ALLOWED_PACKAGE_EDGES` with their reasons (there are none); any other fails.

Checked: (a) no cycle among moonlite's modules (the message names one cycle's modules);
(b) every import goes to the importer's own layer or one it may use (`MAY_IMPORT`); every module
has a layer; (c) only `_numba.py` imports numba (or llvmlite).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# module-name prefix -> layer; the longest matching prefix wins
LAYER_OF = {
    "moonlite.errors": "base",
    "moonlite._numba": "base",
    "moonlite.timing": "base",  # phase timers every layer may open
    "moonlite.ir": "ir",
    "moonlite.debug": "debug",
    "moonlite.rules": "rules",
    "moonlite.ad": "ad",
    "moonlite.capture": "capture",
    "moonlite.lower": "lower",
    "moonlite.driver": "driver",
    "moonlite.fingerprint": "driver",  # keys of the disk cache: reads capture's globals scan
    "moonlite.cache": "driver",  # the disk cache's switch, attached by the API
    "moonlite.api": "api",
    "moonlite.api_reverse": "api",
    "moonlite.api_higher": "api",
    "moonlite.api_jacobians": "api",
    "moonlite.api_drivers": "api",
    "moonlite.api_calls": "api",
    "moonlite.api_njit": "api",
    "moonlite.api_vjp": "api",
    "moonlite.api_instances": "api",
    "moonlite.api_instance_outputs": "api",
    "moonlite.api_instance_pullback": "api",
    "moonlite.testing": "api",
    "moonlite.demo": "top",
    "moonlite": "top",  # the package's __init__: the public names
}

# layer -> the layers it may import besides itself. ad, capture and lower are siblings: none
# imports another; the driver (capture, transform, verify, lower, cache) sits above all three.
_BELOW_PASSES = {"base", "ir", "debug", "rules"}
MAY_IMPORT = {
    "base": set(),
    "ir": {"base"},
    "debug": {"base", "ir"},
    "rules": {"base", "ir"},
    "ad": _BELOW_PASSES,
    "capture": _BELOW_PASSES,
    "lower": _BELOW_PASSES,
    "driver": _BELOW_PASSES | {"ad", "capture", "lower"},
    "api": _BELOW_PASSES | {"ad", "capture", "lower", "driver"},
    "top": _BELOW_PASSES | {"ad", "capture", "lower", "driver", "api"},
}

# (importer prefix, imported package): submodule -> own package edges allowed. None: the rule
# files import the registry and the helpers from `rules/registry.py` and `rules/define.py`.
ALLOWED_PACKAGE_EDGES: set = set()

# modules allowed to import numba: the one home of numba internals, and the demo, which is a
# user's program (it defines its kernels with @numba.njit, as users do; nothing imports it)
NUMBA_IMPORTERS = {"moonlite._numba", "moonlite.demo"}


# --- the graph ---------------------------------------------------------------------------------

def module_files(root: Path, package: str) -> dict:
    """{module name: path} for every module of `package` under `root`."""
    modules = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def import_statements(module: str, path: Path) -> list:
    """Every import statement of `module`, relative ones resolved: [(base, names, line)], with
    `base` None for `import a, b` (then `names` are full module names) and the package or
    module imported from for `from base import names`."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.append((None, [alias.name for alias in node.names], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(package, node.module, node.level)
            found.append((base, [alias.name for alias in node.names], node.lineno))
    return found


def imported_module_names(module: str, path: Path) -> list:
    """[(name, line)]: what each statement names as a module (for `from a import b`: `a`)."""
    return [(name, line) for base, names, line in import_statements(module, path)
            for name in ([base] if base is not None else names)]


def _resolve(package: str, name, level: int) -> str:
    if level == 0:
        return name
    parts = package.split(".")
    anchor = parts[:len(parts) - (level - 1)]
    return ".".join(anchor + ([name] if name else []))


def import_graph(root: Path, package: str) -> dict:
    """{module: {imported module of `package`: first line}}."""
    modules = module_files(root, package)
    graph = {}
    for module, path in modules.items():
        edges = {}
        for base, names, line in import_statements(module, path):
            for target in _targets(base, names, modules):
                if target != module:
                    edges.setdefault(target, line)
        graph[module] = edges
    return graph


def _targets(base, names: list, modules: dict) -> list:
    """The modules one statement imports: for `from pkg import name`, `pkg.name` if that is a
    module, else `pkg` (name is something pkg/__init__ defines); for `import a.b`, `a.b` (or
    the longest prefix of it that is one of our modules)."""
    if base is None:
        return [t for t in map(lambda n: _longest_module_prefix(n, modules), names) if t]
    targets = []
    for name in names:
        if f"{base}.{name}" in modules:
            targets.append(f"{base}.{name}")
        else:
            targets.append(_longest_module_prefix(base, modules))
    return [t for t in targets if t]


def _longest_module_prefix(name: str, modules: dict):
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def first_cycle(graph: dict):
    """One cycle as a list of modules (first == last), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == "open":
                return stack[stack.index(succ):] + [succ]
            if succ not in state:
                cycle = visit(succ)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def without_allowed_package_edges(graph: dict) -> dict:
    return {m: {t: line for t, line in edges.items()
                if not any(m.startswith(prefix) and t == package
                           for prefix, package in ALLOWED_PACKAGE_EDGES)}
            for m, edges in graph.items()}


def layer(module: str):
    matches = [p for p in LAYER_OF if module == p or module.startswith(p + ".")]
    return LAYER_OF[max(matches, key=len)] if matches else None


@pytest.fixture(scope="module")
def graph():
    return import_graph(SRC, "moonlite")


# --- the checks ----------------------------------------------------------------------------

def test_no_import_cycle(graph):
    cycle = first_cycle(without_allowed_package_edges(graph))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_every_module_has_a_layer(graph):
    assert [m for m in graph if layer(m) is None] == []


def test_imports_go_down_the_layers(graph):
    wrong = [f"{m} (line {line}) imports {t}: {layer(m)} may not import {layer(t)}"
             for m, edges in graph.items() for t, line in edges.items()
             if layer(t) != layer(m) and layer(t) not in MAY_IMPORT[layer(m)]]
    assert wrong == [], "\n".join(wrong)


def test_only_numba_py_imports_numba():
    wrong = [f"{m} (line {line}) imports {name}"
             for m, path in module_files(SRC, "moonlite").items() if m not in NUMBA_IMPORTERS
             for name, line in imported_module_names(m, path)
             if name.split(".")[0] in ("numba", "llvmlite")]
    assert wrong == [], "\n".join(wrong)


def test_the_graph_sees_what_matters(graph):
    """The checks above are only as good as the graph: spot-check edges it must have."""
    assert "moonlite.capture" in graph["moonlite.driver"]  # a plain relative import
    assert "moonlite.ir.ops" in graph["moonlite.ir.builder"]  # `from . import ops`
    assert "moonlite.ir" not in graph["moonlite.ir.builder"]
    assert "moonlite.ir" in graph["moonlite.api_reverse"]  # Builder: a name of ir/__init__
    assert len(graph) > 50 and sum(map(len, graph.values())) > 200


# --- the graph builder itself, on a small package ---------------------------------------------

def _write_package(root: Path, files: dict) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    _write_package(tmp_path, {
        "pkg/__init__.py": "from .a import f\n",
        "pkg/a.py": "from . import b\n\ndef f():\n    return b.g()\n",
        "pkg/b.py": "def g():\n    from .a import f\n    return f\n",
    })
    cycle = first_cycle(import_graph(tmp_path, "pkg"))
    assert cycle is not None and set(cycle) == {"pkg.a", "pkg.b"}


def test_package_imports_resolve_to_modules_or_the_init(tmp_path):
    _write_package(tmp_path, {
        "pkg/__init__.py": "REGISTRY = {}\nfrom . import sub\n",
        "pkg/sub.py": "from . import sibling\n",
        "pkg/sibling.py": "import os\n",
        "pkg/user.py": "from . import REGISTRY\nfrom .sub import *\nimport pkg.sibling\n",
    })
    g = import_graph(tmp_path, "pkg")
    assert set(g["pkg.sub"]) == {"pkg.sibling"}  # the sibling module, not the package
    assert set(g["pkg.user"]) == {"pkg", "pkg.sub", "pkg.sibling"}  # REGISTRY: the __init__
    assert set(g["pkg"]) == {"pkg.sub"}
    assert first_cycle(g) is None
    _write_package(tmp_path, {"pkg/sub.py": "from . import REGISTRY\n"})
    assert first_cycle(import_graph(tmp_path, "pkg")) == ["pkg", "pkg.sub", "pkg"]
