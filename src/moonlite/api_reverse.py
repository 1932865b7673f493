"""The public reverse-mode API: `grad`, `value_and_grad`, `build_rrule` (`vjp`: api_vjp.py).

`grad(f)` and `value_and_grad(f)` return numba dispatchers (`DerivedDispatcher`): like `@njit`
functions they specialise on the argument types of each new call, from Python or while numba
types a call inside other njit code, and for each signature the pipeline captures `f`, builds its
reverse rule (forward sweep and pullback in one function, so tapes never leave compiled code) and
compiles a small wrapper that seeds the output's adjoint with 1 and picks the gradients asked for.
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
import numbers
import operator

import numpy as np

from .ad.guards import emit_guards
from .ad.inline import inline_njit_calls
from .ad.nan_retry import emit_nan_notes
from .ad.reverse.types import is_float_array
from .ad.tangents import mentions_complex
from .api_drivers import api_dispatcher
from .api_instances import (around_flat, differentiable_fields, differentiates_instance,
                            flat_kernel, flat_types, flat_values, instance_name, instance_of)
from .api import (ArgumentError, _check_arguments, _check_njit, _def_loc, compile_lock,
                  copy_arguments as _copy)
from .driver import (PASS_CONTEXT, api_cached, api_entry, derived_reverse_rule,
                     derived_reverse_split)
from .errors import UnsupportedError
from .ir import Builder
from .ir.types import (FloatType, from_numba, is_differentiable, is_float_record,
                       is_record_array)


def grad(f, argnums=0):
    """A compiled function returning the gradient of scalar-valued `f` with respect to argument
    `argnums` (a tuple of gradients for a tuple), shaped like that argument. The same function
    for the same `f` and `argnums`: `grad(f)(x)` written inline costs a look-up."""
    if plain_argnums(argnums):  # the fast path: no checks for what was checked before
        known = api_entry(f, ("grad", argnums, False))
        if known is not None:
            return known
    return _gradient_dispatcher(f, argnums, with_value=False)


def value_and_grad(f, argnums=0):
    """Like `grad`, returning `(f(*args), gradient)` from the same evaluation."""
    if plain_argnums(argnums):
        known = api_entry(f, ("value_and_grad", argnums, False))
        if known is not None:
            return known
    return _gradient_dispatcher(f, argnums, with_value=True)


def plain_argnums(argnums) -> bool:
    """An int or a tuple of ints, bools excluded (True == 1 would find argnums=1's entry)."""
    return type(argnums) is int or (type(argnums) is tuple
                                    and all(type(n) is int for n in argnums))


def check_argnums_form(f, argnums, api: str):
    """`argnums` as Python ints (numpy's integers too: what `operator.index` takes);
    ArgumentError unless it is an int or a tuple of ints (bools refused)."""
    def one(n):
        if not isinstance(n, (bool, np.bool_)):
            with contextlib.suppress(TypeError):
                return operator.index(n)
        raise ArgumentError(f"{api}({f.py_func.__qualname__}): argnums must be an int or a "
                            f"tuple of ints, got {n!r}")
    return tuple(map(one, argnums)) if isinstance(argnums, tuple) else one(argnums)


def build_rrule(f, *args):
    """The derived reverse rule of `f` for the types of `args`: a compiled callable
    `rule(*args, dout) -> (out, grads)` whose `.ir` is its moonlite IR (forward sweep and
    pullback), with one gradient per argument (None for arguments without one)."""
    _check_njit(f, "build_rrule")
    _check_arguments(f, args, "build_rrule")
    return reverse_rule(f, tuple(f.typeof_pyval(a) for a in args))


def reverse_rule(f, argtypes: tuple, active=None, strong_zeros: bool = False):
    """`derived_reverse_rule`, refusing complex numbers (the reverse pass has no adjoints for
    them, and would silently drop their contribution)."""
    with compile_lock():
        rule = derived_reverse_rule(f, tuple(argtypes), active, strong_zeros)
    refuse_complex(f, argtypes, rule.ir)
    return rule


def refuse_complex(f, argtypes: tuple, fn) -> None:
    """Raise UnsupportedError at the first op of `fn` (a reverse rule or its forward sweep) that
    takes or makes a complex number."""
    if getattr(fn, "_moonlite_no_complex", False):
        return
    for op in fn.ops():
        values = list(op.operands) + ([op.result] if op.result is not None else [])
        if any(mentions_complex(v.type) for v in values):
            loc = op.loc
            raise UnsupportedError(
                "differentiating complex numbers in reverse mode",
                function=f.py_func.__qualname__, argtypes=tuple(str(t) for t in argtypes),
                loc=loc, source_line=linecache.getline(loc.filename, loc.line) if loc.line else "",
                hint="split the computation into real and imaginary parts")
    fn._moonlite_no_complex = True


def _gradient_dispatcher(f, argnums, with_value: bool, strong_zeros: bool = False):
    api = "value_and_grad" if with_value else "grad"
    _check_njit(f, api)
    argnums = check_argnums_form(f, argnums, api)
    names = list(inspect.signature(f.py_func).parameters)

    def derive(argtypes: tuple):
        return _gradient_ir(f, argtypes, argnums, with_value, api, strong_zeros)

    def build():
        # a gradient with a nan is computed again with zero-guarded products (nan_retry.py)
        retry = None if strong_zeros else \
            (lambda: _gradient_dispatcher(f, argnums, with_value, strong_zeros=True))
        return api_dispatcher(f, api, names, derive, (argnums, strong_zeros),
                              (_gradient_dispatcher, (f, argnums, with_value, strong_zeros)),
                              retry)

    # the same dispatcher for the same function and options: `grad(f)(x)` written inline, in
    # a loop, compiles once (forgotten, like every derived rule, when a custom rule is added)
    return api_cached(f, (api, argnums, strong_zeros), build)


def _gradient_ir(f, argtypes: tuple, argnums, with_value: bool, api: str,
                 strong_zeros: bool = False):
    if differentiates_instance(argtypes, argnums):  # through the flat kernel
        flat = flat_kernel(f, tuple(argtypes))
        return _instance_gradient_ir(f, flat, argtypes, argnums, with_value, api, strong_zeros)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    types = [from_numba(t) for t in argtypes]
    name = f.py_func.__qualname__
    for n in nums:
        if not -len(types) <= n < len(types):
            raise ArgumentError(f"{api}({name}): argnums {n} is out of range for "
                                f"{len(types)} arguments")
        t = types[n]
        if not is_differentiable(t):
            raise ArgumentError(f"{api}({name}): argument {n} has type {t}; gradients exist "
                                f"for floats, float arrays, records and structured arrays with "
                                f"scalar float fields, and tuples holding them only")
    rule = reverse_rule(f, tuple(argtypes), _active(types, nums), strong_zeros)
    out_type = rule.ir.return_type.elements[0]
    if not isinstance(out_type, FloatType):
        raise UnsupportedError(f"{api} of a function returning {out_type}", function=name,
                               argtypes=tuple(types), loc=_def_loc(f),
                               hint="grad needs a scalar float output; "
                               "use jacfwd for vector outputs")
    b = Builder.new_function(f"{api}_{f.py_func.__name__}", types,
                             list(inspect.signature(f.py_func).parameters), out_type)
    b.position_at_end(b.new_block("entry"))
    args = emit_guards(b, list(b.function.args), rule.written, name)  # guards.py
    result = b.call(rule, [*args, b.const(1.0, out_type)], type=rule.ir.return_type)
    grads = b.tuple_getitem(result, 1)
    picked = [b.tuple_getitem(grads, n % len(types)) for n in nums]
    value = picked[0] if not isinstance(argnums, tuple) else b.build_tuple(picked)
    if not strong_zeros:
        emit_nan_notes(b, value)  # the Python call then reruns the strong-zeros variant
    if with_value:
        value = b.build_tuple([b.tuple_getitem(result, 0), value])
    b.function.return_type = value.type
    b.ret(value)
    return inline_rule(b.function, rule)


def _instance_gradient_ir(f, flat, argtypes: tuple, argnums, with_value: bool, api: str,
                          strong_zeros: bool):
    """`_gradient_ir` of a kernel taking jitclass instances: the same API's gradient of its
    flat form, with the gradient of an instance argument an instance of its class
    (`api_instances.py`)."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    n, name = len(argtypes), f.py_func.__qualname__
    flat_nums = []
    for num in nums:
        if not -n <= num < n:
            raise ArgumentError(f"{api}({name}): argnums {num} is out of range for {n} "
                                f"arguments")
        i = num % n
        if i not in flat.instance_types:
            flat_nums.append(flat.groups[i])
            continue
        fields = differentiable_fields(flat, i)
        if not fields:
            raise ArgumentError(f"{api}({name}): argument {num} is a "
                                f"{instance_name(flat.instance_types[i])} instance without "
                                f"float fields: nothing to differentiate")
        flat_nums += fields
    inner = _gradient_dispatcher(flat.fn, tuple(flat_nums), with_value, strong_zeros)
    inner_ir = inner.ir_for(flat_types(flat, argtypes))
    b = Builder.new_function(f"{api}_{f.py_func.__name__}", [from_numba(t) for t in argtypes],
                             parameter_names(f), inner_ir.return_type)
    b.position_at_end(b.new_block("entry"))
    args = list(b.function.args)
    result = b.call(inner, flat_values(b, flat, args), type=inner_ir.return_type)
    grads = b.tuple_getitem(result, 1) if with_value else result
    by_flat = {k: b.tuple_getitem(grads, j) for j, k in enumerate(flat_nums)}
    picked = [instance_of(b, flat, num % n, by_flat, args[num % n])
              if num % n in flat.instance_types else by_flat[flat.groups[num % n]]
              for num in nums]
    value = picked[0] if not isinstance(argnums, tuple) else b.build_tuple(picked)
    if with_value:
        value = b.build_tuple([b.tuple_getitem(result, 0), value])
    b.function.return_type = value.type
    b.ret(value)
    return around_flat(b, inner)


def inline_rule(fn, rule):
    """`fn` with its call of the derived `rule` replaced by the rule's body: one compiled
    function, not a call between two. numba leaks a reference to an array argument when a
    callee raises (numba issues #1549, #10783), so a wrapper around a kernel that raises leaked
    one per call; and the rule itself is never compiled on its own."""
    return inline_njit_calls(fn, keep=lambda callee: callee is not rule, context=PASS_CONTEXT)


def _active(types: list, nums: tuple):
    """The argument indices whose gradients are wanted, or None (all) when that makes no
    difference to the reverse pass (every float array is wanted): one rule then serves grad,
    hvp and vjp alike instead of two being compiled."""
    active = frozenset(n % len(types) for n in nums)
    # (records too: a record argument outside `active` gets no shadow, nor its field updates)
    arrays = {i for i, t in enumerate(types)
              if is_float_array(t) or is_record_array(t) or is_float_record(t)}
    return None if arrays <= active else active


def _split_rule(f, primals: tuple) -> tuple:
    """The sweep and pullback of `f`'s reverse rule for the types of `primals`."""
    argtypes = tuple(f.typeof_pyval(p) for p in primals)
    with compile_lock():
        sweep, pull = derived_reverse_split(f, argtypes)
    refuse_complex(f, argtypes, sweep.ir)
    return sweep, pull


def _strong_zeros_gradients(f, argtypes: tuple, args: tuple, dout) -> tuple:
    """The gradients of the strong-zeros reverse rule at `args` (which the plain pullback has
    restored; the rule runs on copies of them)."""
    rule = reverse_rule(f, argtypes, strong_zeros=True)
    _, grads = rule(*_copy(args), dout)
    return grads


def parameter_names(f) -> list:
    return list(inspect.signature(f.py_func).parameters)


def _check_cotangent(dout, out, where: str) -> None:
    if isinstance(out, tuple):  # a tuple output: a tuple of cotangents, entry by entry
        if not isinstance(dout, tuple) or len(dout) != len(out):
            raise ArgumentError(f"{where}: the output is a tuple of {len(out)} entries: its "
                                f"cotangent must be a tuple of {len(out)} entries, got "
                                f"{type(dout).__name__}")
        for k, (d, o) in enumerate(zip(dout, out)):
            if _no_derivative(o):
                if not (d is None or _is_real(d)):
                    raise ArgumentError(f"{where}, entry {k}: the output entry is an int, a "
                                        f"bool or a string: its cotangent is unused (pass None "
                                        f"or 0), got "
                                        f"{type(d).__name__}")
                continue
            _check_cotangent(d, o, f"{where}, entry {k}")
        return
    if isinstance(out, np.ndarray):
        if not isinstance(dout, np.ndarray) or dout.shape != out.shape \
                or dout.dtype != out.dtype:
            got = (f"shape {dout.shape} and dtype {dout.dtype}" if isinstance(dout, np.ndarray)
                   else type(dout).__name__)
            raise ArgumentError(f"{where}: the cotangent must have shape {out.shape} and dtype "
                                f"{out.dtype} like the output, got {got}")
    elif np.ndim(dout) != 0:
        raise ArgumentError(f"{where}: the output is a scalar: its cotangent must be a scalar, "
                            f"got an "
                            f"array of shape {np.shape(dout)}")
    elif not _is_real(dout):
        raise ArgumentError(f"{where}: the output is a float: its cotangent must be a real "
                            f"number, got "
                            f"{type(dout).__name__}")


def _as_cotangent(dout, out):
    if isinstance(out, tuple):  # (a namedtuple's cotangent: a plain tuple, as its tangent)
        return tuple((o if isinstance(o, str) else type(o)(0)) if _no_derivative(o)
                     else _as_cotangent(d, o) for d, o in zip(dout, out))
    if isinstance(out, np.ndarray):
        return np.ascontiguousarray(dout)  # (the rule's cotangent is C-contiguous, as its output)
    return type(out)(dout) if isinstance(out, np.floating) else float(dout)


def _no_derivative(value) -> bool:
    """An int, bool or string output entry (numba boxes them as Python ints, bools and
    strings)."""
    return isinstance(value, (bool, int, np.integer, np.bool_, str))


def _is_real(value) -> bool:
    """A real number, or a 0-d array holding one."""
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and (np.issubdtype(value.dtype, np.floating)
                                    or np.issubdtype(value.dtype, np.integer))
    return isinstance(value, numbers.Real)
