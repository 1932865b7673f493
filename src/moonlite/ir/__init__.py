"""moonlite IR: typed SSA in basic blocks with phi nodes (see docs/architecture.md)."""

from . import core, ops, printer, types
from .builder import Builder
from .cfg import Dominators, Loop, natural_loops, predecessors, reverse_post_order
from .core import Argument, Block, Function, Op, OpResult, Value
from .printer import format_function
from .verifier import verify

# core sits below ops and printer (they import it): it reaches them through what is installed here
core.install(phi_class=ops.Phi, format_op=printer.format_op,
             format_function=printer.format_function)

__all__ = ["ops", "types", "Builder", "Dominators", "Loop", "natural_loops", "predecessors",
           "reverse_post_order", "Argument", "Block", "Function", "Op", "OpResult", "Value",
           "format_function", "verify"]
