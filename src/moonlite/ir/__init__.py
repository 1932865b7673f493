"""moonlite IR: typed SSA in basic blocks with phi nodes (see docs/architecture.md)."""

from . import ops, types
from .builder import Builder
from .cfg import Dominators, Loop, natural_loops, predecessors, reverse_post_order
from .core import Argument, Block, Function, Op, OpResult, Value
from .printer import format_function
from .verifier import verify

__all__ = ["ops", "types", "Builder", "Dominators", "Loop", "natural_loops", "predecessors",
           "reverse_post_order", "Argument", "Block", "Function", "Op", "OpResult", "Value",
           "format_function", "verify"]
