"""`jvp` and `hvp` called inside njit code (`vjp`, whose pullback is a value: api_vjp.py).

`grad`, `hessian`, `jacfwd` and `jacrev` return dispatchers, which numba calls like any njit
function. `jvp(f, primals, tangents)` and `hvp(...)` are Python functions taking `f`; inside njit
code numba types a call of them through the overloads below, where `f` is an njit function known
at compile time (`types.Dispatcher`): they call the same compiled `jvp_f(primals, tangents)` /
`hvp_f` the Python functions call (`api_calls.py`, `api_higher.py`), their argument checks
compiled in.

Inside njit code numba calls a dispatcher's `njit_variant` (`api_drivers.py`), which reruns a
derivative holding a nan with zero-guarded products itself (`ad/nan_retry.py`).
"""

from __future__ import annotations

from . import _numba as nb
from .api_calls import _jvp_dispatcher, jvp
from .api_higher import _plain_hvp_dispatcher, hvp

types = nb.types


def _njit_function(f, api: str):
    """The Python dispatcher of `f` when numba types it as an njit function, else a clear
    typing error (numba reports it with the call's source line)."""
    if isinstance(f, types.Dispatcher):  # (a derived dispatcher's njit variant stands for it)
        return getattr(f.dispatcher, "origin", f.dispatcher)
    raise nb.numba_errors.TypingError(
        f"moonlite.{api} inside njit code takes an @njit function as its first argument, "
        f"got {f}")


def _overload_calling(api, dispatcher_of) -> None:
    """`api(f, primals, tangents)` inside njit code: a call of `dispatcher_of(f)`."""
    @nb.overload(api)
    def in_njit(f, primals, tangents):
        disp = dispatcher_of(_njit_function(f, api.__name__))

        def impl(f, primals, tangents):
            return disp(primals, tangents)
        return impl


_overload_calling(jvp, _jvp_dispatcher)
_overload_calling(hvp, _plain_hvp_dispatcher)
