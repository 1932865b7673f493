"""What the importer's list code (`lists.py`) calls at run time: small njit functions that grow
a list's buffers, check and normalise its indices, and search or repeat its entries. The AD
passes capture them like any njit helper (numbers, positions and copies of the buffers)."""

import numpy as np

from .. import _numba as nb


def _grown_py(buffer, length):
    if length < buffer.shape[0]:
        return buffer
    bigger = np.empty(2 * length + 4, buffer.dtype)
    bigger[:length] = buffer[:length]
    return bigger


def _reserved_py(buffer, length, extra):
    if length + extra <= buffer.shape[0]:
        return buffer
    bigger = np.empty(max(length + extra, 2 * buffer.shape[0]), buffer.dtype)  # amortised
    bigger[:length] = buffer[:length]
    return bigger


def _check_room_py(buffer, length):
    if length >= buffer.shape[0]:
        raise RuntimeError("moonlite: a list outgrew the room reserved for it before its loop "
                           "(a moonlite bug: please report the kernel)")
    return None


def _last_position_py(length):
    if length == 0:
        raise IndexError("pop from empty list")
    return length - 1


def _list_position_py(index, length):
    if index < 0:
        index += length
    if index < 0 or index >= length:
        raise IndexError("list index out of range")
    return index


def _insert_position_py(index, length):
    if index < 0:
        index = max(index + length, 0)
    return min(index, length)


def _repeated_py(entries, n):
    k = entries.shape[0]
    out = np.empty(k * n, entries.dtype)
    for r in range(n):
        out[r * k:(r + 1) * k] = entries
    return out


def _first_equal_py(entries, value):
    for k in range(entries.shape[0]):
        if entries[k] == value:
            return k
    return -1


def _position_of_py(entries, value):
    k = first_equal(entries, value)
    if k < 0:
        raise ValueError("list.remove(x): x not in list")
    return k


def _index_of_py(entries, value):
    k = first_equal(entries, value)
    if k < 0:
        raise ValueError("list.index(x): x not in list")
    return k


def _count_of_py(entries, value):
    n = 0
    for k in range(entries.shape[0]):
        if entries[k] == value:
            n += 1
    return n


# The buffer with room for one more entry (itself while there is room).
grown = nb.njit(cache=True)(_grown_py)
# The buffer with room for `extra` more entries, reserved before the loop that appends them.
reserved = nb.njit(cache=True)(_reserved_py)
# An append inside that loop only checks the room is there (it always is: see list_plans.py).
check_room = nb.njit(cache=True)(_check_room_py)
# Where ys.pop() reads (IndexError as a list raises it when there is nothing to pop).
last_position = nb.njit(cache=True)(_last_position_py)
# A list index made non-negative and checked as a list checks it (always, not only under
# boundscheck: the buffer's spare capacity must never be read).
list_position = nb.njit(cache=True)(_list_position_py)
# Where ys.insert(i, v) puts v: i counted from the end if negative, clamped to the list.
insert_position = nb.njit(cache=True)(_insert_position_py)
# `ys * n`: the entries of a buffer n times over, one after another.
repeated = nb.njit(cache=True)(_repeated_py)
# The position of the first entry equal to a value, -1 if there is none.
first_equal = nb.njit(cache=True)(_first_equal_py)
# Where ys.remove(v) removes: the first entry equal to v (ValueError if there is none).
position_of = nb.njit(cache=True)(_position_of_py)
# ys.index(v) and ys.count(v) of a list of numbers: ints, which carry no derivative.
index_of = nb.njit(cache=True)(_index_of_py)
count_of = nb.njit(cache=True)(_count_of_py)
