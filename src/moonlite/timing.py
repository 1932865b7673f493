"""Where a first call's compile time goes: `with moonlite.compile_timings() as t: ...`.

While a recorder is open, moonlite's phases (`phase("capture")`, ...) and numba's compiler
passes (through numba's event system) are timed on the thread that opened it, each phase's time
exclusive of the phases nested in it: `t.seconds` maps a phase to its seconds, and they add up
to the time spent compiling. numba's passes are grouped: "numba typing" (type inference of the
IR moonlite emits), "numba lowering" (LLVM IR from typed IR), "LLVM" (optimisation and machine
code, the time numba holds LLVM's lock), "numba other". numba's typing of the user's own kernel,
which capture runs, counts as "capture".

Closed (the normal state) a phase costs one attribute look-up.
"""

from __future__ import annotations

import contextlib
import threading
import time

from . import _numba as nb

_local = threading.local()
_open = 0  # recorders open in any thread: phases cost nothing while 0


class CompileTimings:
    def __init__(self):
        self.seconds: dict = {}
        self.wall = 0.0

    def __repr__(self) -> str:
        rows = sorted(self.seconds.items(), key=lambda kv: -kv[1])
        return "CompileTimings(" + ", ".join(f"{k}: {v:.3f} s" for k, v in rows) + \
            f"; wall {self.wall:.3f} s)"


def _stack():
    return getattr(_local, "stack", None)


@contextlib.contextmanager
def phase(name: str):
    """Time the enclosed code as `name` in the open recorder of this thread, if any."""
    stack = _stack() if _open else None
    if stack is None:
        yield
        return
    _enter(stack, name)
    try:
        yield
    finally:
        _leave(stack)


def _enter(stack: list, name: str) -> None:
    stack.append([name, time.perf_counter(), 0.0])


def _leave(stack: list) -> None:
    name, start, nested = stack.pop()
    total = time.perf_counter() - start
    seconds = _local.recorder.seconds
    seconds[name] = seconds.get(name, 0.0) + total - nested
    if stack:
        stack[-1][2] += total


_TYPING_PASSES = ("nopython_type_inference", "partial_type_inference", "nopython_rewrites",
                  "moonlite_type_inference",
                  "inline_overloads", "annotate_types")


def _numba_phase(pass_name: str) -> str:
    stack = _stack()
    if any(entry[0] == "capture" for entry in stack):
        return "capture"
    name = pass_name.split(" [")[0]
    if name in ("native_lowering", "native_parfor_lowering", "nopython_backend",
                "moonlite_native_lowering"):
        return "numba lowering"
    if name in _TYPING_PASSES:
        return "numba typing"
    return "numba other"


class _NumbaListener(nb.event.Listener):
    """numba's compiler passes and LLVM lock as phases of this thread's open recorder."""

    def on_start(self, event):
        stack = _stack() if _open else None
        if stack is None:
            return
        if event.kind == "numba:llvm_lock":
            name = "capture" if any(e[0] == "capture" for e in stack) else "LLVM"
        else:
            name = _numba_phase(event.data["name"])
        _enter(stack, name)

    def on_end(self, event):
        stack = _stack() if _open else None
        if stack:
            _leave(stack)


_listener = _NumbaListener()
_registration = threading.Lock()
# registered only while a recorder is open: numba broadcasts an llvm_lock event around every
# call into LLVM (about 280,000 in compiling seven corpus kernels' derivatives), and a listener
# registered for good made every compile in the process, the user's own included, pay for it
_EVENTS = ("numba:run_pass", "numba:llvm_lock")


@contextlib.contextmanager
def compile_timings():
    """Record where compile time goes in the enclosed code (this thread only)."""
    global _open
    if _stack() is not None:
        raise RuntimeError("compile_timings() is already open in this thread")
    recorder = CompileTimings()
    _local.recorder, _local.stack = recorder, []
    with _registration:
        if _open == 0:
            for kind in _EVENTS:
                nb.event.register(kind, _listener)
        _open += 1
    start = time.perf_counter()
    try:
        yield recorder
    finally:
        recorder.wall = time.perf_counter() - start
        with _registration:
            _open -= 1
            if _open == 0:
                for kind in _EVENTS:
                    nb.event.unregister(kind, _listener)
        _local.stack = None
