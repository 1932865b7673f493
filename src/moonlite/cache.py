"""Where derived functions are cached on disk, and switching it on.

The cache is on for a derivative of `f` when
- `moonlite.set_cache_dir(path)` named a directory (`set_cache_dir(None)`: off for all), else
- the environment variable `MOONLITE_CACHE_DIR` names one, else
- `f` was compiled with `@numba.njit(cache=True)`: then beside numba's own cache of `f`, in a
  `moonlite` folder of it.

What is cached, the key and its faults: `lower/disk_cache.py` and `fingerprint.py`.
"""

from __future__ import annotations

import os
import re

from . import _numba as nb
from .fingerprint import derivation_key
from .lower.disk_cache import DiskCache

_UNSET = object()
_directory = _UNSET


def set_cache_dir(path) -> None:
    """Cache derived functions in directory `path` (made when first needed); None: never cache,
    even for functions compiled with `cache=True`. Applies to derivatives taken afterwards."""
    global _directory
    _directory = None if path is None else os.fspath(path)


def cache_directory(f):
    """The directory derivatives of `f` are cached in, or None."""
    if _directory is not _UNSET:
        return _directory
    env = os.environ.get("MOONLITE_CACHE_DIR", "").strip()
    if env:
        return env
    numba_cache = getattr(f, "_cache", None)
    if numba_cache is not None and not isinstance(numba_cache, nb.caching.NullCache):
        path = getattr(numba_cache, "cache_path", None)
        if path:
            return os.path.join(path, "moonlite")
    return None


def attach_disk_cache(disp, f, recipe: tuple) -> None:
    """Give derived dispatcher `disp` (what `recipe` derives from `f`) the disk cache, if on."""
    directory = cache_directory(f)
    if directory is None:
        return
    name = re.sub(r"[^A-Za-z0-9_]+", "_", f"{recipe[0]}_{f.py_func.__qualname__}")[:80]
    disp._cache = DiskCache(directory, name, lambda sig: derivation_key(f, recipe))
