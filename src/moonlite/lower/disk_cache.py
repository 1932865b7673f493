"""Derived functions compiled once, for every process: an on-disk cache of numba compile results.

A `DerivedDispatcher` with a `DiskCache` (numba's own hook: `Dispatcher.compile` asks its
`_cache` before compiling and gives it what it compiled) loads the machine code of a signature
from a file instead of deriving, typing and compiling it. One file per entry, named by the
SHA-256 of its key; the key (computed by `fingerprint.py`) covers everything that changes the
code, and is stored in the file too and compared on load. Writes go to a temporary file renamed
into place, so two processes writing one entry leave one whole file; a file that cannot be read
back (truncated, corrupted, from another numba) is reported once and compiled again; a
directory that cannot be written is reported once and the cache then stays off for this
process.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import uuid
import warnings

from .. import _numba as nb

_FORMAT = 1
_warned: set = set()


class MoonliteCacheWarning(UserWarning):
    """The disk cache could not be used for an entry (it is compiled instead)."""


def _warn_once(kind: str, message: str) -> None:
    if kind not in _warned:
        _warned.add(kind)
        warnings.warn(message, MoonliteCacheWarning, stacklevel=4)


class DiskCache(nb.caching.NullCache):
    """`key_for(sig)` -> a picklable key for numba signature `sig`, or None (never cached: the
    function reads something the key cannot describe)."""

    def __init__(self, directory: str, name: str, key_for):
        self.directory = directory
        self.name = name
        self.key_for = key_for
        self.hits = 0
        self.saves = 0

    @property
    def cache_path(self):
        return self.directory

    def _path(self, key) -> str:
        digest = hashlib.sha256(pickle.dumps(key, protocol=4)).hexdigest()[:40]
        return os.path.join(self.directory, f"{self.name}-{digest}.mlc")

    def _full_key(self, sig, codegen):
        key = self.key_for(tuple(sig))
        if key is None:
            return None
        return (_FORMAT, str(tuple(sig)), codegen.magic_tuple(), key)

    def load_overload(self, sig, target_context):
        target_context.refresh()
        key = self._full_key(sig, target_context.codegen())
        if key is None:
            return None
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                stored_key, payload = pickle.load(f)
        except FileNotFoundError:
            return None
        except Exception as exc:  # truncated, corrupted, written by another version
            _warn_once("unreadable", f"moonlite: could not read the cached derivative {path} "
                       f"({type(exc).__name__}: {exc}); compiling it again")
            return None
        if stored_key != key:
            return None  # a hash collision, or a file from elsewhere: compile
        try:
            cres = nb.compiler.CompileResult._rebuild(target_context, *payload)
        except Exception as exc:
            _warn_once("unreadable", f"moonlite: could not load the cached derivative {path} "
                       f"({type(exc).__name__}: {exc}); compiling it again")
            return None
        self.hits += 1
        return cres

    def save_overload(self, sig, cres):
        if cres.library.has_dynamic_globals or any(not x.can_cache for x in cres.lifted):
            return  # addresses of this process baked into the code
        key = self._full_key(sig, cres.codegen if hasattr(cres, "codegen") else
                             cres.library.codegen)
        if key is None:
            return
        try:
            data = pickle.dumps((key, cres._reduce()), protocol=4)
        except Exception as exc:  # something in the environment does not pickle
            _warn_once("unpicklable", f"moonlite: cannot cache a derivative of {self.name} "
                       f"({type(exc).__name__}: {exc})")
            return
        path = self._path(key)
        tmp = f"{path}.tmp.{uuid.uuid4().hex[:12]}"
        try:
            os.makedirs(self.directory, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)  # atomic: readers see the old file or the whole new one
            self.saves += 1
        except OSError as exc:
            _warn_once(f"unwritable {self.directory}",
                       f"moonlite: cannot write the derivative cache in {self.directory} "
                       f"({exc.strerror or exc}); derivatives are compiled in each process")
            try:
                os.unlink(tmp)
            except OSError:
                pass
