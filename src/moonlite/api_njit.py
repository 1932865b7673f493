"""`jvp`, `hvp` and `vjp` called inside njit code (`vjp`'s pullback is a value: api_vjp.py).

`grad`, `hessian`, `jacfwd` and `jacrev` return dispatchers, which numba calls like any njit
function. `jvp(f, primals, tangents)` and `hvp(...)` are Python functions taking `f`; inside njit
code numba types a call of them through the overloads below, where `f` is an njit function known
at compile time (`types.Dispatcher`): they call the same compiled `jvp_f(primals, tangents)` /
`hvp_f` the Python functions call (`api_calls.py`, `api_higher.py`), their argument checks
compiled in. For a kernel returning a jitclass or structref instance (or a tuple holding
one), `jvp` calls the jvp of its output-flat form and makes the instances
(`api_instance_outputs.py`); `vjp` calls the vjp of that form and returns a pullback taking
instances (`api_instance_pullback.py`).

Inside njit code numba calls a dispatcher's `njit_variant` (`api_drivers.py`), which reruns a
derivative holding a nan with zero-guarded products itself (`ad/nan_retry.py`).
"""

from __future__ import annotations

from . import _numba as nb
from .api_calls import _jvp_dispatcher, jvp
from .api_higher import _plain_hvp_dispatcher, hvp
from .api_instance_outputs import fields_kernel, njit_rebuilders, returned_instance_type_at
from .api_instance_pullback import instance_pullback_maker
from .api_vjp import _vjp_dispatcher, given_parameters_kernel, vjp

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


@nb.overload(jvp)
def _jvp_in_njit(f, primals, tangents):
    kernel = _njit_function(f, "jvp")
    returned = returned_instance_type_at(kernel, tuple(primals)) \
        if isinstance(primals, types.BaseTuple) else None
    if returned is None:
        disp = _jvp_dispatcher(kernel)

        def impl(f, primals, tangents):
            return disp(primals, tangents)
        return impl
    # a kernel returning an instance (or a tuple holding one): the jvp of its output-flat
    # form, then the instances made (api_instance_outputs.py)
    disp = _jvp_dispatcher(fields_kernel(kernel, returned))
    disp.compile((primals, tangents))
    flat_types = disp.overloads[(primals, tangents)].signature.return_type
    output, tangent = njit_rebuilders(returned, tuple(flat_types))

    def instances(f, primals, tangents):
        values, dvalues = disp(primals, tangents)
        return output(values), tangent(values, dvalues)
    return instances


_overload_calling(hvp, _plain_hvp_dispatcher)


@nb.overload(vjp)
def _vjp_in_njit(f, *primals):
    kernel = given_parameters_kernel(_njit_function(f, "vjp"), len(primals))
    returned = returned_instance_type_at(kernel, tuple(primals))
    if returned is None:
        disp = _vjp_dispatcher(kernel)

        def impl(f, *primals):
            return disp(*primals)
        return impl
    # a kernel returning an instance (or a tuple holding one): the vjp of its output-flat form,
    # the output made again, the pullback taking instances
    disp = _vjp_dispatcher(fields_kernel(kernel, returned))
    disp.compile(tuple(primals))
    values_type, pullback_type = disp.overloads[tuple(primals)].signature.return_type
    output, _ = njit_rebuilders(returned, (values_type, types.none))
    wrap = instance_pullback_maker(pullback_type, returned)

    def instances(f, *primals):
        values, pullback = disp(*primals)
        return output(values), wrap(pullback)
    return instances
