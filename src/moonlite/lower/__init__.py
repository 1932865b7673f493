"""Lowering: moonlite IR -> numba IR -> LLVM, as a dispatcher that keeps its IR."""

from .dispatcher import MoonliteDispatcher, lower

__all__ = ["lower", "MoonliteDispatcher"]
