"""A flag raised for the duration of a `with` block, in one thread only: how moonlite's changes
to numba's behaviour (typing a derived rule's call from its IR, the caches of array-expression
kernels and of operator signatures) stay inside moonlite's own compiles."""

from __future__ import annotations

import contextlib
import threading


class ThreadFlag:
    def __init__(self):
        self._local = threading.local()

    def __bool__(self) -> bool:
        return getattr(self._local, "on", False)

    @contextlib.contextmanager
    def raised(self):
        before = bool(self)
        self._local.on = True
        try:
            yield
        finally:
            self._local.on = before
