"""The order `ys.sort()` and `sorted(ys)` put a list's entries in (issue #20; `lists.py`).

numba sorts a list with its own quicksort (`numba.misc.quicksort`): in place for `sort()`, as
an argsort of the keys `[key(v) for v in ys]` for `sort(key=key)`, and with `>` in place of `<`
for `reverse=True`. That quicksort is not stable and compares with `<` alone (a nan is never
less than anything), so where tied keys, -0.0 and 0.0, or nans end up is the algorithm's
choice. moonlite finds the order with that same quicksort in its argsort form, whose code is
the in-place sort's with positions moved instead of entries (numba writes both from one body):
the same comparisons on the same keys, so the same permutation. The entries, and with them
their derivatives, are then gathered in that order. The order is ints and carries none.

`min()` and `max()` of a list of tuples pick one entry by Python's tuple order
(`lexicographic_picker`).
"""

from __future__ import annotations

import numpy as np

from .. import _numba as nb
from ..rules.define import njit_from_source

nbt = nb.types


def _greater(a, b):
    return a > b


_forwards = nb.quicksort.make_jit_quicksort(is_argsort=True).run_quicksort
_backwards = nb.quicksort.make_jit_quicksort(is_argsort=True, lt=_greater).run_quicksort


@nb.njit(cache=True)
def ascending_order(keys):
    """The positions of `keys` in the order numba's `list.sort()` leaves them."""
    return _forwards(keys)


@nb.njit(cache=True)
def descending_order(keys):
    """The positions of `keys` in the order numba's `list.sort(reverse=True)` leaves them."""
    return _backwards(keys)


_KEYED: dict = {}  # (key function, element type, descending) -> its njit order


def keyed_order(key, element, descending: bool):
    """njit `order(c0, c1, ...)` of a list kept as columns (one for a list of numbers): the
    positions in the order `sort(key=key, reverse=descending)` gives, or None when `key` does
    not return a number for `element` (numba's own typing of the call has compiled it)."""
    found = (key, element, descending)
    if found not in _KEYED:
        result = _key_result(key, element)
        if result is None:
            return None
        columns = len(element) if isinstance(element, nbt.BaseTuple) else 1
        names = [f"c{j}" for j in range(columns)]
        entry = (f"{names[0]}[k]" if columns == 1 and not isinstance(element, nbt.BaseTuple)
                 else "(" + "".join(f"{c}[k], " for c in names) + ")")
        named = getattr(element, "instance_class", None)  # a namedtuple's class
        if named is not None:
            entry = f"named{entry}"
        source = (f"def order({', '.join(names)}):\n"
                  f"    keys = np.empty(c0.shape[0], result)\n"
                  f"    for k in range(c0.shape[0]):\n"
                  f"        keys[k] = key({entry})\n"
                  f"    return sort(keys)\n")
        sort = descending_order if descending else ascending_order
        _KEYED[found] = njit_from_source(source, "order", f"sort key {key.__name__}", np=np,
                                         key=key, result=result, sort=sort, named=named)
    return _KEYED[found]


def _key_result(key, element):
    """The NumPy dtype of what `key` returns for `element`, if a number."""
    sig = next((s for s in key.nopython_signatures if s.args == (element,)), None)
    if sig is None:
        key.compile((element,))
        sig = next((s for s in key.nopython_signatures if s.args == (element,)), None)
    ret = sig.return_type if sig is not None else None
    if not isinstance(ret, (nbt.Float, nbt.Integer, nbt.Boolean)):
        return None
    return nb.as_dtype(ret)


_PICKERS: dict = {}  # (number of columns, "min" or "max") -> its njit picker


def lexicographic_picker(columns: int, kind: str):
    """njit `pick(length, c0, c1, ...)`: the position of the first smallest (or largest) entry
    of a list of tuples kept as columns, compared as Python compares tuples (the first entry
    that differs decides, by `<` or `>`: a nan decides nothing in its favour), ValueError for
    an empty list as min() raises it."""
    key = (columns, kind)
    if key not in _PICKERS:
        op = "<" if kind == "min" else ">"
        names = [f"c{j}" for j in range(columns)]
        tests = "".join(f"        {'if' if j == 0 else 'elif'} {c}[k] != {c}[best]:\n"
                        f"            better = {c}[k] {op} {c}[best]\n"
                        for j, c in enumerate(names))
        source = (f"def pick(length, {', '.join(names)}):\n"
                  f"    if length == 0:\n"
                  f"        raise ValueError('{kind}() arg is an empty sequence')\n"
                  f"    best = 0\n"
                  f"    for k in range(1, length):\n{tests}"
                  f"        else:\n"
                  f"            better = False\n"
                  f"        if better:\n"
                  f"            best = k\n"
                  f"    return best\n")
        _PICKERS[key] = njit_from_source(source, "pick", f"{kind} of a list of tuples")
    return _PICKERS[key]
