"""What a list of arrays (`array_lists.py`) calls at run time: njit functions that make room in
its buffers, copy entries' numbers, and keep the entries' places.

A list of arrays is `flat` (the entries' numbers, one after another), `places` (row k: where
entry k starts in `flat`, then its shape), `used` (how much of `flat` has been written) and its
length. A place in `flat` is written once: what an append, an insert or `ys[i] = v` writes goes
after `used`, and nothing else writes `flat`, so an entry read before (a view of `flat`) keeps
its numbers whatever the list does afterwards, as the array a Python list held would. When
`flat` is full, `room_for_numbers` makes a new one holding the live entries (packed, which
drops what pops, clears and replacements left behind); the old one is never written again.

The functions that move numbers (`room_for_numbers`, `copy_entries`, `gathered_numbers`) are
captured and differentiated like any njit helper: array copies. The others only read and write
the integers of `places`: registered as piecewise constant (`rules/define.py`), they are called
as they are in every mode, and reverse mode neither inlines them nor saves what they overwrite
(the pullback never reads those integers: an entry's shadow is taken in the sweep). One array of
places, not one of starts and one of shapes, so that an append passes and keeps one array fewer
(each an atomic incref and decref in derived code).
"""

import numpy as np

from .. import _numba as nb
from ..rules.define import piecewise_constant


def _entry_size_py(places, k):
    size = 1
    for d in range(1, places.shape[1]):
        size *= places[k, d]
    return size


def _live_size_py(places, length):
    live = 0
    for k in range(length):
        live += entry_size(places, k)
    return live


def _packs_py(flat, places, used, length, extra):
    return used + extra > flat.shape[0] and live_size(places, length) != used


def _number_positions_py(places, entries, total):
    """Where the `total` numbers of the entries `entries` (positions in the list) are in
    `flat`, one entry after another: what the functions moving numbers gather, in one read
    that every mode differentiates without a loop (a loop of slice copies put each entry's
    position and size on tapes in reverse mode: 108 tapes in a kernel extending and copying
    lists of arrays)."""
    out = np.empty(total, np.int64)
    at = 0
    for j in range(entries.shape[0]):
        k = entries[j]
        start = places[k, 0]
        for i in range(entry_size(places, k)):
            out[at + i] = start + i
        at += entry_size(places, k)
    return out


def _room_for_numbers_py(flat, places, used, length, extra):
    if used + extra <= flat.shape[0]:
        return flat
    live = live_size(places, length)
    bigger = np.empty(2 * (live + extra) + 4, flat.dtype)
    if live == used:  # (each place is written once: the live entries tile flat[:used])
        bigger[:used] = flat[:used]
        return bigger
    bigger[:live] = flat[number_positions(places, np.arange(length), live)]
    return bigger


def _used_after_room_py(flat, places, used, length, extra):
    if used + extra <= flat.shape[0] or not packs(flat, places, used, length, extra):
        return used
    return live_size(places, length)


def _moved_places_py(flat, places, used, length, extra, entries):
    """`places` with rows for `entries` more (itself while it has them), its starts packed as
    `room_for_numbers` packed the numbers."""
    if length + entries > places.shape[0]:
        more = np.empty((max(2 * places.shape[0], length + entries, 4), places.shape[1]),
                        np.int64)
        for k in range(length):
            copy_place(more, k, places, k)
        places = more
    if used + extra > flat.shape[0] and packs(flat, places, used, length, extra):
        at = 0
        for k in range(length):
            places[k, 0] = at
            at += entry_size(places, k)
    return places


def _copy_place_py(places, k, source, j):
    for d in range(places.shape[1]):
        places[k, d] = source[j, d]
    return None


def _placed_py(flat, places, used, length, extra, entries, position, at, shape, shifts):
    places = moved_places(flat, places, used, length, extra, entries)
    if shifts:  # (insert: the entries from `position` on move one place up)
        for k in range(length, position, -1):
            copy_place(places, k, places, k - 1)
    places[position, 0] = at
    for d, n in enumerate(shape):
        places[position, d + 1] = n
    return places


def _closed_gap_py(places, position, length):
    for k in range(position, length - 1):
        copy_place(places, k, places, k + 1)
    return None


def _reversed_entries_py(places, length):
    for k in range(length // 2):
        other = length - 1 - k
        for d in range(places.shape[1]):
            n = places[k, d]
            places[k, d] = places[other, d]
            places[other, d] = n
    return None


def _copy_entries_py(flat, at, source, source_places, count):
    extra = live_size(source_places, count)
    flat[at:at + extra] = source[number_positions(source_places, np.arange(count), extra)]
    return None


def _places_of_copies_py(flat, places, used, length, extra, at, source_places, count):
    places = moved_places(flat, places, used, length, extra, count)
    for k in range(count):
        copy_place(places, length + k, source_places, k)
        places[length + k, 0] = at
        at += entry_size(source_places, k)
    return places


def _places_of_rows_py(flat, places, used, length, extra, at, shape):
    places = moved_places(flat, places, used, length, extra, shape[0])
    size = 1
    for d in range(1, len(shape)):
        size *= shape[d]
    for k in range(shape[0]):
        places[length + k, 0] = at + k * size
        for d in range(1, len(shape)):
            places[length + k, d] = shape[d]
    return places


def _gathered_places_py(places, positions):
    out = np.empty((positions.shape[0], places.shape[1]), np.int64)
    at = 0
    for j in range(positions.shape[0]):
        copy_place(out, j, places, positions[j])
        out[j, 0] = at
        at += entry_size(places, positions[j])
    return out


def _gathered_numbers_py(flat, places, positions, total):
    return flat[number_positions(places, positions, total)]


# How many numbers entry k holds (the product of its shape), and the first `length` together.
entry_size = nb.njit(cache=True)(_entry_size_py)
live_size = nb.njit(cache=True)(_live_size_py)
number_positions = nb.njit(cache=True)(_number_positions_py)
# Whether making room for `extra` more numbers packs the live entries into a new `flat`.
packs = nb.njit(cache=True)(_packs_py)
# `flat` with room for `extra` more numbers after `used`: itself while it has it, else a new one
# holding the live entries (where they were when nothing is dead, else packed in list order).
room_for_numbers = nb.njit(cache=True)(_room_for_numbers_py)
# Where the next numbers go once room_for_numbers has made its room.
used_after_room = nb.njit(cache=True)(_used_after_room_py)
moved_places = nb.njit(cache=True)(_moved_places_py)
# Row k of `places` set to row j of `source`.
copy_place = nb.njit(cache=True)(_copy_place_py)
# The places once an array is put at `position` (appended, inserted: `shifts`, or replacing the
# entry there): rows made, starts packed as the numbers were, then its start and shape.
placed = nb.njit(cache=True)(_placed_py)
# `pop(i)`: the places of the entries after `position` moved one down.
closed_gap = nb.njit(cache=True)(_closed_gap_py)
# `ys.reverse()`: the entries' places in the other order (their numbers stay where they are).
reversed_entries = nb.njit(cache=True)(_reversed_entries_py)
# `ys.extend(zs)` (zs a list of arrays, ys itself too): zs's numbers written from `at` on (before
# ys's places move), then their places recorded after ys's entries.
copy_entries = nb.njit(cache=True)(_copy_entries_py)
places_of_copies = nb.njit(cache=True)(_places_of_copies_py)
# `ys.extend(M)`: M's rows (numbers written from `at` on, in C order) recorded after ys's
# entries, each of M's shape less its first dimension.
places_of_rows = nb.njit(cache=True)(_places_of_rows_py)
# A new list of the entries at `positions` (`ys.copy()`, `ys[a:b]`): places, then numbers.
gathered_places = nb.njit(cache=True)(_gathered_places_py)
gathered_numbers = nb.njit(cache=True)(_gathered_numbers_py)

for _helper in (entry_size, live_size, number_positions, packs, used_after_room, moved_places, copy_place, placed,
                closed_gap, reversed_entries, places_of_copies, places_of_rows,
                gathered_places):
    piecewise_constant(_helper)
