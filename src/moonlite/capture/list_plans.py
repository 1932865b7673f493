"""What the importer needs to know about a kernel's lists before it imports any statement
(`lists.py`): which numba variables hold a list the kernel appends to, and, for each such list,
the for loop whose iterations do its appending, if there is one.

A list is appended to in a loop in nearly every kernel that builds one (`[g(v) for v in x if
...]`, `for v in x: ys.append(...)`). If every append inside loops runs at most once per
iteration of one for loop L (none in a loop nested in L, none in a loop around L other than
those around the list), one run of L appends at most (appends in L's body) x (its iterations)
entries: the importer reserves that room each time L starts, and the buffer stays the same array
through L. Growing it inside L instead would make the buffer a loop-carried array, which the
reverse pass keeps on its tape at every iteration (with L inside another loop, the buffer is
loop-carried only there: taped once per outer iteration).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from .. import _numba as nb
from .list_helpers import RESIZERS, list_methods_called

ir = nb.ir

_LIST_MUTATORS = ("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse")


def _holds_arrays(t) -> bool:
    """An array, or a tuple of arrays (and numbers) with an array among them."""
    if isinstance(t, nb.types.Array):
        return True
    return isinstance(t, nb.types.BaseTuple) and any(_holds_arrays(e) for e in t) and all(
        _holds_arrays(e) or isinstance(e, nb.types.Number) for e in t)


@dataclass(frozen=True)
class LoopPlan:
    """The for loop that appends to a list: its iterator (the alias class of numba's iterator
    variable), the labels of its body outside nested loops, and its appends per iteration."""

    iterator: str
    body: frozenset
    appends_per_iteration: int


class ListAnalysis:
    """Alias classes of numba variables (a variable, its copies and numba's phis of it), the
    lists among them that are mutated, and their loop plans."""

    def __init__(self, blocks: dict, typemap: dict, returns_list: bool = False):
        self.parent: dict = {}
        # a helper's form returning its list (`list_helpers.py`): what it returns is a list
        # kept as a growing list, a literal too
        self._returns_list = returns_list
        self._helper_results: list = []  # variables bound to what an njit function returns
        builds, mutated, appends, iternexts, self._getiters = {}, set(), [], [], []
        self._extended: set = set()  # lists that grow by more than appends: no plan
        self._resizes: list = []  # (label, variable) of every call that changes a length
        self._globals: dict = {}  # variable -> the global or free variable it holds
        self._wrapped: dict = {}  # result of enumerate(...) or zip(...) -> its arguments
        self._iadds: list = []  # (label, target, lhs) of every `a += b`
        self._given: list = []  # variables given to njit functions
        self._build_items: dict = {}  # build_list target -> its item variables
        for label, block in blocks.items():
            for stmt in block.body:
                self._scan(label, stmt, builds, mutated, appends, iternexts)
        self._lists_extended_by_plus(typemap, mutated)
        # a list an njit helper returns (`list_helpers.list_returning_form`) arrives with
        # entries no plan of appends counts
        for name in self._helper_results:
            if isinstance(typemap.get(name), nb.types.List):
                mutated.add(name)
                self._extended.add(name)
        # a list given to an njit helper (even one never appended to, `f([a, b])`) is kept
        # as a growing list is: the helper is given its entries (`list_helpers.py`); but a
        # literal of arrays nothing changes is given as the tuple of its arrays, references
        # the helper may write through (a growing list of arrays holds copies: constructs.py)
        changed = {self.root(m) for m in mutated}
        self.tuples_for_helpers = {
            self.root(v) for v in self._given
            if self._array_literal(v, builds, typemap) and self.root(v) not in changed}
        mutated.update(v for v in self._given if isinstance(typemap.get(v), nb.types.List)
                       and self.root(v) not in self.tuples_for_helpers)
        roots = {self.root(m) for m in mutated}
        self.growing = {name for name in set(self.parent) | set(builds)
                        if self.root(name) in roots}
        self.cfg = nb.compute_cfg_from_blocks(blocks)  # the importer's list states use it too
        loops = self.cfg.loops()
        self.plans = self._plans(blocks, loops, builds, appends, iternexts)
        self.resized_while_walked = self._walked_and_resized(loops, iternexts)

    def _array_literal(self, name: str, builds: dict, typemap: dict) -> bool:
        """True if `name` is a list literal of arrays (or of tuples of arrays, `[(W1, b1),
        (W2, b2)]`) of exactly the list's entry type."""
        t = typemap.get(name)
        if not (isinstance(t, nb.types.List) and _holds_arrays(t.dtype)):
            return False
        literals = [b for b in builds if self.root(b) == self.root(name)]
        return len(literals) == 1 and bool(self._build_items.get(literals[0])) and all(
            typemap.get(item) == t.dtype for item in self._build_items[literals[0]])

    def root(self, name: str) -> str:
        while self.parent.setdefault(name, name) != name:
            name = self.parent[name]
        return name

    def _union(self, a: str, b: str) -> None:
        self.parent[self.root(a)] = self.root(b)

    def _scan(self, label, stmt, builds, mutated, appends, iternexts) -> None:
        if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
            mutated.add(stmt.target.name)
        if not isinstance(stmt, ir.Assign):
            return
        value, name = stmt.value, stmt.target.name
        if isinstance(value, (ir.Global, ir.FreeVar)):
            self._globals[name] = value.value
        if isinstance(value, ir.Var):
            self._union(name, value.name)
        elif not isinstance(value, ir.Expr):
            return
        elif value.op == "phi":
            for v in value.incoming_values:
                if isinstance(v, ir.Var):
                    self._union(name, v.name)
        elif value.op == "build_list":
            builds[name] = label
            self._build_items[name] = [v.name for v in value.items if isinstance(v, ir.Var)]
        elif value.op == "getattr" and value.attr in _LIST_MUTATORS:
            mutated.add(value.value.name)
            if value.attr in ("append", "extend"):
                appends.append((label, value.value.name))
            if value.attr in ("extend", "insert"):  # entries no plan of appends counts
                self._extended.add(value.value.name)
            if value.attr in RESIZERS:
                self._resizes.append((label, value.value.name))
        elif value.op == "inplace_binop" and value.fn is operator.iadd:
            self._iadds.append((label, name, value.lhs.name))
        elif value.op == "call" and self._globals.get(value.func.name) in (enumerate, zip):
            self._wrapped[name] = [a.name for a in value.args if isinstance(a, ir.Var)]
        elif value.op == "call" and nb.is_njit_dispatcher(self._globals.get(value.func.name)):
            self._given.extend(a.name for a in [*value.args, *(v for _, v in value.kws)]
                               if isinstance(a, ir.Var))
            self._helper_results.append(name)
            self._changed_by_helper(label, self._globals[value.func.name], value.args, mutated)
        elif value.op == "cast" and self._returns_list:  # (numba's cast before its return)
            self._union(name, value.value.name)
            mutated.add(value.value.name)
        elif value.op == "iternext":
            iternexts.append((label, value.value.name))
        elif value.op == "getiter":
            self._getiters.append((name, value.value.name))

    def _changed_by_helper(self, label, helper, args, mutated) -> None:
        """A helper calling list methods on a parameter changes the list given for it
        (`list_helpers.list_changing_form`); appends there are no plan's."""
        for position, arg in enumerate(args):
            methods = list_methods_called(helper.py_func, position) \
                if isinstance(arg, ir.Var) else ()
            if methods:
                mutated.add(arg.name)
            if RESIZERS & set(methods):
                self._extended.add(arg.name)
                self._resizes.append((label, arg.name))

    def _lists_extended_by_plus(self, typemap, mutated) -> None:
        """`a += b` of a list extends it in place: the result is the list (numba binds it to
        `a` again), changed and grown by more than appends."""
        for label, target, lhs in self._iadds:
            if isinstance(typemap.get(lhs), nb.types.List):
                self._union(target, lhs)
                mutated.add(lhs)
                self._extended.add(lhs)
                self._resizes.append((label, lhs))

    def _walked_and_resized(self, loops, iternexts) -> set:
        """Alias roots of what for loops walk (a list, or enumerate or zip of one) while their
        bodies change that list's length (Python's loop, and numba's, would see the new length;
        moonlite's walks the entries the list had when the loop started: refused)."""
        found = set()
        wrapped = {self.root(name): args for name, args in self._wrapped.items()}
        for iterator, walked in self._getiters:
            lists = self._walked_through(walked, wrapped)
            for header, loop in loops.items():
                # the loop the iterator drives (its header steps it), not one around it: a
                # list cleared and refilled in each epoch may be walked in the epoch
                if not any(label == header and self.root(var) == self.root(iterator)
                           for label, var in iternexts):
                    continue
                if any(label in loop.body and self.root(var) in lists
                       for label, var in self._resizes):
                    found.add(self.root(walked))
        return found

    def _walked_through(self, walked: str, wrapped: dict) -> set:
        """Alias roots of `walked` and, for enumerate(...) or zip(...) (`wrapped`: by alias
        root, their arguments), of what they walk, nested ones too."""
        roots, todo = set(), [walked]
        while todo:
            root = self.root(todo.pop())
            if root not in roots:
                roots.add(root)
                todo += wrapped.get(root, ())
        return roots

    def _plans(self, blocks, loops, builds, appends, iternexts) -> dict:
        enclosing = {label: frozenset(h for h, loop in loops.items() if label in loop.body)
                     for label in blocks}
        plans = {}
        for name, build_label in builds.items():
            if name not in self.growing:
                continue
            sites = [label for label, var in appends if self.root(var) == self.root(name)]
            if any(self.root(e) == self.root(name) for e in self._extended):
                continue
            nests = {enclosing[label] for label in sites} - {enclosing[build_label]}
            if len(nests) != 1 or not enclosing[build_label] < next(iter(nests)):
                continue  # no loop, or appends in several loops
            (nest,) = nests
            header = next((h for h in nest if enclosing[h] == nest), None)  # the innermost
            if header is None:
                continue
            body = frozenset(label for label in loops[header].body if enclosing[label] == nest)
            iterators = {self.root(var) for label, var in iternexts if label in body}
            if len(iterators) == 1:  # a for loop (a while loop has no iterator)
                count = sum(1 for label in sites if enclosing[label] == nest)
                plans[name] = LoopPlan(iterators.pop(), body, count)
        return plans
