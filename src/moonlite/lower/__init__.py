"""Lowering: moonlite IR -> numba IR -> LLVM, as a dispatcher that keeps its IR."""

from .dispatcher import DerivedDispatcher, MoonliteDispatcher, lower

__all__ = ["lower", "MoonliteDispatcher", "DerivedDispatcher"]
