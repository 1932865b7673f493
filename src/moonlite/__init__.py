"""moonlite: automatic differentiation for numba kernels, after Julia's Mooncake.jl."""

from .capture import capture
from .errors import (CaptureError, LoweringError, MoonliteError, UnsupportedError,
                     VerificationError)
from . import ir
from .ir import verify
from .lower import MoonliteDispatcher, lower
from .api import ArgumentError, build_frule
from .api_calls import jvp
from .api_reverse import build_rrule, grad, value_and_grad
from .api_vjp import vjp
from .api_jacobians import jacfwd, jacrev
from .api_higher import hessian, hvp
from .rules.custom import custom_jvp, custom_vjp, nondifferentiable
from .debug import debug_enabled, debug_mode, set_debug
from .timing import compile_timings
from .cache import set_cache_dir
from . import api_njit  # noqa: E402,F401  (jvp, hvp inside njit code)
from . import testing  # noqa: E402  (the public rule checker: moonlite.testing.check_jvp)

__version__ = "0.1.0"

__all__ = ["compile_timings", "set_cache_dir", "jvp", "jacfwd", "build_frule", "grad", "value_and_grad", "vjp", "jacrev", "hvp", "hessian",
           "custom_jvp", "custom_vjp", "nondifferentiable", "set_debug", "debug_mode", "debug_enabled",
           "build_rrule", "capture",
           "lower", "MoonliteDispatcher", "verify", "testing", "ir", "MoonliteError",
           "UnsupportedError", "CaptureError", "VerificationError", "LoweringError", "ArgumentError"]
