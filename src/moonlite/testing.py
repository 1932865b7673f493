"""The rule checker (after Mooncake's `test_rule` and JAX's `check_grads`): public API.

`check_rule(f, *args)` runs every check that applies to `f` at `args`: `check_jvp`, then (for a
float or float-array output) `check_vjp`, then (float output) `check_grad`, then with
`second_order=True` (float output) `check_hvp`. `vjp=False` leaves `check_vjp` out for a float
output (`check_grad` checks the same gradient, through grad's whole reverse rule rather than
vjp's sweep and pullback): about a third less to compile, for a test suite that checks vjp's
split on other kernels of the same construct. Use it on a kernel that calls a function you gave
a custom rule, or on the function itself. Each check is described below; a failure raises
`AssertionError` naming the check, the argument and the size of the error.

`check_vjp(f, *args)` checks reverse mode through `moonlite.vjp` (the forward sweep and the
pullback as two compiled calls, their state handed over as arrays): the primal output, the
dot-product identity
<dout, J t> = <J^T dout, t> with random nonzero `dout` and `t`, where J t comes from central
finite differences (a rule that overwrites an adjoint instead of adding to it fails this), and
that every input array holds what it held before the call once the pullback has run.

`check_jvp(f, *args)` differentiates the njit function `f` in forward mode at `args` along a
random tangent direction and checks:

1. the primal output equals `f(*args)`;
2. the output tangent agrees with central finite differences of `f` along the same direction,
   taking the best of several step sizes (so neither truncation nor rounding error decides);
3. for every array argument `f` writes into, the tangent array after the call agrees with
   finite differences of the array's final value (the tangent of a mutated input describes its
   new value).

Records, structured arrays and `@jitclass` instances are perturbed through their float fields
(an instance's tangent is an instance of its class, `api_instances.py`).

A failure raises `AssertionError` saying which check failed, for which output or argument, and
by how much. Every evaluation gets fresh copies of the arguments, so kernels that mutate their
inputs are checked correctly.
"""

from __future__ import annotations

import numpy as np

from .api import (_kind, copy_arguments as _copy, instance_type_of, rebuild_tuple,
                  zero_tangent_like)
from .api_calls import jvp
from .api_instances import flattenable, python_fields
from .rules.jitclasses import fields_of, maker_for

_DIFFERENTIABLE = ("float", "array", "tuple", "record", "records", "instance")
STEP_SIZES = (1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 1e-6, 1e-7)


def check_jvp(f, *args, rtol: float = 1e-5, atol: float = 1e-7, seed: int = 0,
              tangents=None) -> None:
    """Check moonlite's forward derivative of `f` at `args` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    if tangents is None:
        tangents = tuple(_random_tangent(a, rng) for a in args)
    ours_args, ours_tangents = _copy(args), _copy(tangents)
    out, dout = jvp(f, ours_args, ours_tangents)
    _check_primal(f, args, out)
    estimates = [_central_difference(f, args, tangents, h) for h in STEP_SIZES]
    _check_against(_flatten(dout, out), [e[0] for e in estimates], rtol, atol,
                   "derivative of the output")
    for i, a in enumerate(args):
        if _written(ours_args[i], a):
            _check_against(_flatten(ours_tangents[i], a), [e[1][i] for e in estimates], rtol,
                           atol, f"derivative of argument {i} (written by the function)")


def _written(after, before) -> bool:
    """Whether the function changed argument `before` (a float array, or the float fields of
    a structured array or record: int and bool fields carry no derivative), `after` being
    what the call left of its copy."""
    kind = _kind(before)
    if kind == "array":
        return not _same_contents(after, before)
    if kind in ("record", "records"):
        return not np.array_equal(_record_floats(after, before), _record_floats(before, before),
                                  equal_nan=True)
    return False


def _random_tangent(a, rng):
    kind = _kind(a)
    if kind == "float":
        return type(a)(rng.standard_normal()) if isinstance(a, np.floating) \
            else float(rng.standard_normal())
    if kind == "array":  # (asarray: a 0-d draw is a Python float)
        return np.asarray(rng.standard_normal(a.shape)).astype(a.dtype)
    if kind == "tuple":  # (an instance in a tuple argument is held fixed: None)
        return tuple(None if _kind(e) == "instance" else _random_tangent(e, rng) for e in a)
    if kind in ("record", "records"):  # random float fields, zero others
        t = zero_tangent_like(a)
        for *outer, name in _float_fields(a.dtype):  # an array field: its shape too
            _at(t, tuple(outer))[name] = rng.standard_normal(np.shape(_at(t, (*outer, name))))
        return t
    floats = _instance_floats(a) if kind == "instance" else []
    if floats:  # an instance of its class
        return _instance_like(a, lambda name, v: _random_tangent(v, rng) if name in floats else v)
    return None


def _instance_floats(a) -> list:
    """The fields of jitclass or structref instance `a` that carry derivatives (floats, float
    arrays, tuples of them), when moonlite differentiates with respect to `a` at all
    (api_instances.py)."""
    t = instance_type_of(a)
    if not flattenable(t):
        return []
    return [name for name, value in zip(fields_of(t), python_fields(a, t))
            if _kind(value) in ("float", "array", "tuple")]


def _instance_like(a, field):
    """A new instance of `a`'s class whose field `name` is `field(name, a.name)`."""
    t = instance_type_of(a)
    return maker_for(t).make(tuple(field(name, value)
                                   for name, value in zip(fields_of(t), python_fields(a, t))))


def _fields(instance) -> dict:
    """{name: value} of a jitclass instance's or structref proxy's fields, read once (a proxy
    may have no properties: its fields are read in compiled code)."""
    t = instance_type_of(instance)
    return dict(zip(fields_of(t), python_fields(instance, t)))


def _float_fields(dtype, prefix: tuple = ()) -> list:
    """The paths (tuples of field names) to the float fields of a structured dtype, through
    fields holding records."""
    paths = []
    for name in dtype.names:
        base = dtype.fields[name][0].base
        if base.names is not None:
            paths += _float_fields(base, prefix + (name,))
        elif base.kind == "f":
            paths.append(prefix + (name,))
    return paths


def _at(value, path: tuple):
    """The field of a record or structured array at `path` (a view)."""
    for name in path:
        value = value[name]
    return value


def _record_floats(value, like) -> np.ndarray:
    """The float fields of a record or structured array `value` (a record's gradient is a
    structured array of one entry) as one float vector, field by field."""
    return np.concatenate([np.ravel(np.asarray(_at(value, path), dtype=float))
                           for path in _float_fields(like.dtype)])


def inner(g, t) -> float:
    """<g, t> for a gradient and a tangent of one argument: floats, arrays, tuples of those,
    records and structured arrays (over their float fields); None (no gradient, or no
    tangent) counts as zero."""
    if g is None or t is None:
        return 0.0
    if isinstance(g, tuple):
        return sum(inner(ge, te) for ge, te in zip(g, t))
    if _kind(t) in ("record", "records"):
        return float(np.sum(_record_floats(g, t) * _record_floats(t, t)))
    if _kind(t) == "instance":
        gs, ts = _fields(g), _fields(t)
        return sum(inner(gs[n], ts[n]) for n in _instance_floats(t))
    return float(np.sum(np.asarray(g, dtype=float) * np.asarray(t, dtype=float)))


def _shift(a, t, h):
    if t is None:  # no tangent: the argument stays where it is (a copy: the kernel may write
        return _copy((a,))[0]  # into it, or into fields of an instance)
    kind = _kind(a)
    if kind == "float":
        return type(a)(a + h * t)
    if kind == "array":  # (asarray: a 0-d array plus a number is a numpy scalar)
        return np.asarray(a + h * t).astype(a.dtype)
    if kind == "tuple":
        return rebuild_tuple(a, (_shift(e, te, h) for e, te in zip(a, t)))
    if kind in ("record", "records"):
        # a copy (a record's: a structured array of one entry; np.array(record) is a view)
        shifted = a.copy() if kind == "records" else np.array([a], dtype=a.dtype)
        for *outer, name in _float_fields(a.dtype):
            _at(shifted, tuple(outer))[name] += h * np.asarray(_at(t, (*outer, name)))
        return shifted if kind == "records" else shifted[0]
    if kind == "instance":  # a new instance (its arrays copied)
        floats = _instance_floats(a)
        ts = _fields(t)
        return _instance_like(a, lambda name, v: _shift(v, ts[name], h)
                              if name in floats else _shift(v, None, h))
    return a.copy() if isinstance(a, np.ndarray) else a


def _same_contents(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal arrays, nan matching nan (numpy's equal_nan takes float and complex arrays only:
    not ints, nor records)."""
    return np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _central_difference(f, args, tangents, h):
    """(d output, [d final value of each argument]) estimated with step h."""
    plus_args = tuple(_shift(a, t, h) for a, t in zip(args, tangents))
    minus_args = tuple(_shift(a, t, -h) for a, t in zip(args, tangents))
    plus, minus = f(*plus_args), f(*minus_args)
    d_out = (_flatten(plus, plus) - _flatten(minus, minus)) / (2 * h)
    d_args = [(_flatten(p, p) - _flatten(m, m)) / (2 * h)
              if _kind(p) in ("array", "record", "records") else None
              for p, m in zip(plus_args, minus_args)]
    return d_out, d_args


def _flatten(value, like) -> np.ndarray:
    """Differentiable parts of an output as one float vector (ints and bools are dropped)."""
    if isinstance(like, tuple):
        parts = [_flatten(v, l) for v, l in zip(value if value is not None else [None] * len(like),
                                                like)]
        return np.concatenate(parts) if parts else np.zeros(0)
    if _kind(like) in ("float", "array"):
        return np.ravel(np.asarray(value, dtype=float))
    if _kind(like) in ("record", "records"):
        return _record_floats(value, like)
    if _kind(like) == "instance" and _instance_floats(like) and value is not None:
        # (None: an instance held fixed, inside a tuple argument)
        values, likes = _fields(value), _fields(like)
        return np.concatenate([_flatten(values[n], likes[n]) for n in _instance_floats(like)])
    return np.zeros(0)


def _check_primal(f, args, out) -> None:
    expected = f(*_copy(args))
    a, e = _flatten(out, out), _flatten(expected, expected)
    if a.shape != e.shape or not np.allclose(a, e, rtol=1e-12, atol=0, equal_nan=True):
        raise AssertionError(f"primal output differs from the function's: moonlite gives {out!r}, "
                             f"the function {expected!r}")


def _check_against(ad: np.ndarray, estimates: list, rtol: float, atol: float, what: str,
                   kind: str = "central finite differences", steps=STEP_SIZES) -> None:
    ad = np.asarray(ad, dtype=float)
    if not np.all(np.isfinite(ad)) and all(np.all(np.isfinite(e)) for e in estimates):
        raise AssertionError(f"moonlite's {what} is not finite where {kind} are: moonlite "
                             f"gives {ad}, {kind} {estimates[len(estimates) // 2]}")
    errors = [np.max(np.abs(ad - e), initial=0.0) for e in estimates]
    best = int(np.argmin(errors))
    scale = np.max(np.abs(ad), initial=0.0)
    if not errors[best] <= atol + rtol * scale:
        raise AssertionError(
            f"the {what} disagrees with {kind}: "
            f"max abs error {errors[best]:.3e} at the best step size {steps[best]:g} "
            f"(tolerance {atol + rtol * scale:.3e});\n  moonlite: {ad}\n  finite differences: "
            f"{estimates[best]}")


def check_vjp(f, *args, rtol: float = 1e-6, atol: float = 1e-8, seed: int = 0,
              fixed: tuple = ()) -> None:
    """Check moonlite's reverse derivative of `f` at `args` (see the module docstring).
    Arguments whose index is in `fixed` are not perturbed (tolerances of iterative kernels)."""
    from .api_vjp import vjp
    rng = np.random.default_rng(seed)
    expected = f(*_copy(args))
    if not _reverse_output(expected):
        raise AssertionError(f"check_vjp needs a float, float-array or structured-array "
                             f"output, or a tuple of floats and float arrays, got {expected!r}")
    dout = _random_cotangent(expected, rng)
    ours = _copy(args)
    out, pullback = vjp(f, *ours)  # the sweep and the pullback run as two compiled calls
    grads = pullback(dout)
    _check_primal(f, args, out)
    left_by_f = _copy(args)
    f(*left_by_f)
    for i, (before, left, mine, private) in enumerate(zip(args, left_by_f, ours,
                                                          pullback.arguments)):
        if not isinstance(before, np.ndarray):
            continue
        if not _same_contents(mine, left):
            raise AssertionError(f"argument {i} after vjp holds {mine}, not what the function "
                                 f"leaves in it: {left}")
        if not _same_contents(private, before):
            raise AssertionError(f"argument {i} was not restored by the pullback: it holds "
                                 f"{private} instead of {before}"
                                 f"{_max_difference(private, before)}")
    tangents = [zero_tangent_like(a) if i in fixed else _random_tangent(a, rng)
                for i, a in enumerate(args)]
    lhs = sum(inner(g, t) for g, t in zip(grads, tangents))
    estimates = _dout_differences(f, args, tangents, dout)
    if not _identity_holds(lhs, estimates, rtol, atol):
        culprits = [i for i in range(len(args)) if i not in fixed and not _identity_holds(
            inner(grads[i], tangents[i]), _dout_differences(f, args, _only(tangents, i), dout),
            rtol, atol)]
        errors = [abs(lhs - e) for e in estimates]
        best = int(np.argmin(errors))
        raise AssertionError(
            f"reverse derivative fails the dot-product identity: <grads, t> = {lhs!r}, "
            f"<dout, finite differences> = {estimates[best]!r} at the best step size "
            f"{STEP_SIZES[best]:g} (error {errors[best]:.3e}); the gradient of argument(s) "
            f"{culprits} is wrong")


def _max_difference(a, b) -> str:
    """' (max difference ...)' of two float arrays; '' for structured arrays (no subtraction)."""
    if a.dtype.names is not None or a.shape != b.shape:
        return ""
    return f" (max difference {np.nanmax(np.abs(a - b), initial=0.0):.3e})"


def check_grad(f, *args, rtol: float = 1e-6, atol: float = 1e-8, seed: int = 0,
               fixed: tuple = ()) -> None:
    """Check `moonlite.grad` of scalar-valued `f` at `args` (its own compiled path: the reverse
    rule inlined into a wrapper that works on copies of the arrays `f` writes): the
    dot-product identity <grad, t> = d/dh f(args + h t) against central finite differences
    along a random direction `t`, and every argument left as it was."""
    from .api_reverse import grad
    rng = np.random.default_rng(seed + 1)
    active = tuple(i for i, a in enumerate(args)
                   if i not in fixed and _kind(a) in _DIFFERENTIABLE)
    if not active:
        raise AssertionError("check_grad needs an argument to differentiate")
    ours = _copy(args)
    grads = grad(f, argnums=active)(*ours)
    for i, (before, after) in enumerate(zip(args, ours)):
        if isinstance(before, np.ndarray) and not _same_contents(before, after):
            raise AssertionError(f"grad changed argument {i}: it holds {after} instead of "
                                 f"{before}")
    tangents = [_random_tangent(a, rng) if i in active else None for i, a in enumerate(args)]
    lhs = sum(inner(g, tangents[i]) for g, i in zip(grads, active))
    estimates = _dout_differences(f, args, tangents, 1.0)
    if not _identity_holds(lhs, estimates, rtol, atol):
        errors = [abs(lhs - e) for e in estimates]
        best = int(np.argmin(errors))
        raise AssertionError(f"the gradient fails the dot-product identity: <grad, t> = "
                             f"{lhs!r}, finite differences give {estimates[best]!r} at the best "
                             f"step size {STEP_SIZES[best]:g} (error {errors[best]:.3e})")


def _identity_holds(lhs: float, estimates: list, rtol: float, atol: float) -> bool:
    return min(abs(lhs - e) for e in estimates) <= atol + rtol * max(abs(lhs), 1.0)


def _only(tangents, i: int) -> list:
    """The tangents with every argument but i left unperturbed."""
    return [t if k == i else None for k, t in enumerate(tangents)]


def _reverse_output(value) -> bool:
    """An output reverse mode takes: a float, a float array, a tuple of those, a structured
    array with float fields, or a jitclass or structref instance with float fields."""
    if isinstance(value, tuple):  # (ints and bools beside: their cotangents are unused)
        leaves = list(_leaves(value))
        kinds = [_kind(v) for v in leaves]
        return any(k in ("float", "array") for k in kinds) and all(
            k in ("float", "array") or isinstance(v, (bool, int, np.integer, np.bool_))
            for k, v in zip(kinds, leaves))
    return _kind(value) in ("float", "array", "records") \
        or _kind(value) == "instance" and bool(_instance_floats(value))


def _leaves(value):
    """The entries of a tuple that are not tuples, at any depth."""
    for v in value:
        if isinstance(v, tuple):
            yield from _leaves(v)
        else:
            yield v


def _random_cotangent(out, rng):
    if isinstance(out, tuple):  # a namedtuple's cotangent is a plain tuple
        return tuple(None if _kind(o) == "none" else _random_cotangent(o, rng) for o in out)
    if _kind(out) in ("array", "records", "instance"):
        return _random_tangent(out, rng)
    return type(out)(rng.standard_normal() or 1.0)


def _dout_differences(f, args, tangents, dout) -> list:
    """<dout, (f(x + h t) - f(x - h t)) / 2h> for each step size h (entry by entry for a
    tuple output)."""
    estimates = []
    for h in STEP_SIZES:
        plus = f(*[_shift(a, t, h) for a, t in zip(args, tangents)])
        minus = f(*[_shift(a, t, -h) for a, t in zip(args, tangents)])
        pairs = list(_output_pairs(plus, minus, dout))
        estimates.append(sum(float(np.dot(_flatten(d, d), _flatten(p, d) - _flatten(m, d)))
                             / (2 * h) if _kind(d) in ("records", "instance") else
                             float(np.sum(np.asarray(d, dtype=float) * (
                                 np.asarray(p, dtype=float) - np.asarray(m, dtype=float))
                                 / (2 * h)))
                             for p, m, d in pairs))
    return estimates


def _output_pairs(plus, minus, dout):
    """(plus, minus, cotangent) of each output entry holding a derivative, tuples walked into
    at any depth."""
    if not isinstance(dout, tuple):
        yield plus, minus, dout
        return
    for p, m, d in zip(plus, minus, dout):
        if d is not None:
            yield from _output_pairs(p, m, d)


def check_rule(f, *args, rtol: float = 1e-6, atol: float = 1e-8, seed: int = 0,
               fixed: tuple = (), second_order: bool = False, vjp: bool = True) -> None:
    """Every check that applies to `f` at `args` (see the module docstring). Arguments whose
    index is in `fixed` are not perturbed. `vjp=False`: no `check_vjp` for a float output."""
    rng = np.random.default_rng(seed)
    tangents = tuple(zero_tangent_like(a) if i in fixed else _random_tangent(a, rng)
                     for i, a in enumerate(args))
    _checking("forward mode (check_jvp)", check_jvp, f, *args, rtol=max(rtol, 1e-5),
              atol=max(atol, 1e-7), seed=seed, tangents=tangents)
    expected = f(*_copy(args))
    if _reverse_output(expected) and (vjp or _kind(expected) != "float"):
        _checking("reverse mode (check_vjp)", check_vjp, f, *args, rtol=rtol, atol=atol,
                  seed=seed, fixed=fixed)
    if _kind(expected) == "float":
        _checking("reverse mode (check_grad)", check_grad, f, *args, rtol=rtol, atol=atol,
                  seed=seed, fixed=fixed)
    if second_order:
        _checking("second order (check_hvp)", check_hvp, f, *args, rtol=max(rtol, 1e-5),
                  seed=seed, fixed=fixed)


def _checking(what: str, check, *args, **kwargs) -> None:
    try:
        check(*args, **kwargs)
    except AssertionError as exc:
        if not str(exc):  # a bare `assert` failing inside numba or moonlite: no wrong number
            raise AssertionError(f"{what}: the call itself failed (an assertion without a "
                                 f"message inside numba or moonlite, not a derivative "
                                 f"disagreeing: see the traceback above)") from exc
        raise AssertionError(f"{what} failed: {exc}") from None


def check_hvp(f, *args, rtol: float = 1e-5, atol: float = 1e-7, seed: int = 0,
              fixed: tuple = ()) -> None:
    """Check moonlite's Hessian-vector product of scalar-valued `f` at `args` against central
    finite differences of moonlite's gradient (itself checked by `check_vjp`), per argument,
    along a random direction; also <w, H v> = <v, H w> (symmetry)."""
    from .api_higher import hvp
    from .api_reverse import grad
    rng = np.random.default_rng(seed)
    active = [i for i, a in enumerate(args)
              if i not in fixed and _kind(a) in _DIFFERENTIABLE]
    if not active:
        raise AssertionError("check_hvp needs a float, float-array or tuple argument to "
                             "differentiate")
    v = tuple(_random_tangent(a, rng) if i in active else zero_tangent_like(a)
              for i, a in enumerate(args))
    w = tuple(_random_tangent(a, rng) if i in active else zero_tangent_like(a)
              for i, a in enumerate(args))
    hv = hvp(f, _copy(args), v)
    g = grad(f, argnums=tuple(active))
    for i in active:
        estimates = []
        for h in STEP_SIZES[:7]:
            plus = g(*[_shift(a, t, h) for a, t in zip(args, v)])
            minus = g(*[_shift(a, t, -h) for a, t in zip(args, v)])
            k = active.index(i)
            # (_flatten: the float entries of a tuple argument, its ints dropped)
            estimates.append((_flatten(plus[k], args[i]) - _flatten(minus[k], args[i])) / (2 * h))
        _check_against(_flatten(hv[i], args[i]), estimates, rtol, atol,
                       f"Hessian-vector product in argument {i}", kind="finite differences "
                       "of moonlite's gradient", steps=STEP_SIZES[:7])
    hw = hvp(f, _copy(args), w)
    lhs = sum(inner(hv[i], w[i]) for i in active)
    rhs = sum(inner(hw[i], v[i]) for i in active)
    if not abs(lhs - rhs) <= atol + rtol * max(abs(lhs), abs(rhs), 1.0):
        raise AssertionError(f"the Hessian is not symmetric: <w, H v> = {lhs!r} but "
                             f"<v, H w> = {rhs!r} (difference {abs(lhs - rhs):.3e})")


def finite_difference_hessian(f, x, *rest, h: float = 1e-4) -> np.ndarray:
    """The Hessian of scalar-valued `f(x, *rest)` with respect to the float array `x` by
    second-order central differences (4 evaluations per pair of entries, symmetric by
    construction): what moonlite's Hessians are checked against. Relative error about 1e-6."""
    x = np.asarray(x, dtype=float)
    n = x.size
    steps = np.eye(n).reshape((n,) + x.shape) * h
    H = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            ei, ej = steps[i], steps[j]
            H[i, j] = H[j, i] = (f(x + ei + ej, *rest) - f(x + ei - ej, *rest)
                                 - f(x - ei + ej, *rest) + f(x - ei - ej, *rest)) / (4 * h * h)
    return H.reshape(x.shape + x.shape)

