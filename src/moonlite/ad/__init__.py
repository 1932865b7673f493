"""AD passes: moonlite IR to moonlite IR (forward mode so far)."""

from .forward import forward_transform
from .tangents import ZERO, tangent_type

__all__ = ["forward_transform", "tangent_type", "ZERO"]
