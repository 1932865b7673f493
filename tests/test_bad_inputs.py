"""The bad-input catalogue (issue #8): every construct moonlite does not support and every misuse
of the API, through each entry point where it makes sense (jvp, grad, vjp, hessian, hvp).

Each case ends in one of two ways:
- a correct derivative, checked against finite differences; or
- a `moonlite.MoonliteError` whose message names the construct, the function and (for code
  constructs) a source line inside the kernel, and says what to do.
Never a numba exception escaping, never a Python TypeError/ValueError from deep inside, never a
crash, never a wrong number. docs/limitations.md lists the messages.
"""

import inspect
import re

import numba
import numpy as np
import pytest
from numba import njit, objmode, prange
from numba.typed import Dict, List

import moonlite
from moonlite import ArgumentError, MoonliteError, UnsupportedError

ENTRY_POINTS = ("jvp", "grad", "vjp", "hessian")


# --- kernels: constructs ---------------------------------------------------------------------

@njit
def try_except(x):
    try:
        y = x * x
    except Exception:
        y = 0.0
    return y


@njit
def generator(x):
    for i in range(3):
        yield x * i


@njit
def objmode_block(x):
    with objmode(y="float64"):
        y = x * 2.0
    return y * x


@njit
def recursive(x, n):
    if n <= 0:
        return x
    return x * recursive(x, n - 1)


@njit
def calls_recursive(x):
    return np.sin(x) + recursive(x, 2)


@njit
def string_argument(x, mode):
    if mode == "square":
        return x * x
    return x


@njit
def string_ordering(x, mode):
    if mode < "m":  # strings are compared for equality only
        return x * x
    return x


@njit
def string_inside(x):
    s = "abc"
    return x * len(s)


@njit
def typed_list_argument(x, values):
    s = 0.0
    for i in range(len(values)):
        s += values[i] * x
    return s


@njit
def typed_dict_argument(x, table):
    return x * table[1]


@njit
def typed_list_inside(x):
    values = List()
    values.append(x)
    values.append(x * x)
    return values[0] + values[1]


@njit
def typed_dict_inside(x):
    table = Dict.empty(numba.int64, numba.float64)
    table[1] = x * x
    return table[1]


@njit(parallel=True)
def prange_reduction(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i] * a[i] * a[i]
    return s


@njit(parallel=True)
def prange_writes(a):
    out = np.zeros_like(a)
    for i in prange(a.shape[0]):
        out[i] = np.sin(a[i]) * a[i]
    return np.sum(out * a)


@njit
def complex_inside(x):
    z = complex(x, 1.0)
    return (z * z).real


@njit
def complex_argument(x, z):
    return x * (z * z).real


WRITTEN = np.zeros(3)
READ = np.array([0.5, 2.0, -1.0, 3.0])


@njit
def writes_global(x):
    WRITTEN[0] = x
    return x * WRITTEN[0]


@njit
def reads_global(x):
    return np.sum(x * x * READ)


def _typed_list():
    values = List()
    values.append(1.0)
    values.append(2.0)
    return values


def _typed_dict():
    table = Dict.empty(numba.int64, numba.float64)
    table[1] = 2.0
    return table


# --- running a kernel through an entry point -----------------------------------------------------

def _direction(args):
    """A tangent per argument: a fixed direction for floats and float arrays, None otherwise."""
    rng = np.random.default_rng(0)
    out = []
    for a in args:
        if isinstance(a, float):
            out.append(0.7)
        elif isinstance(a, np.ndarray) and a.dtype.kind == "f":
            out.append(rng.standard_normal(a.shape))
        else:
            out.append(None)
    return tuple(out)


def _copy(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def run(entry: str, f, args):
    """What the entry point gives for `f` at `args`: the derivative with respect to argument 0
    (jvp: along `_direction(args)`)."""
    args = _copy(args)
    if entry == "jvp":
        return moonlite.jvp(f, args, _direction(args))[1]
    if entry == "grad":
        return moonlite.grad(f)(*args)
    if entry == "vjp":
        out, pullback = moonlite.vjp(f, *args)
        return pullback(1.0)[0]
    if entry == "hessian":
        return moonlite.hessian(f)(*args)
    raise AssertionError(entry)


def _shift(args, x):
    return (x,) + _copy(args[1:])


def _value(f, args, x):
    return float(f(*_shift(args, x)))


def _fd_gradient(f, args, h=1e-6):
    x = args[0]
    if isinstance(x, float):
        return (_value(f, args, x + h) - _value(f, args, x - h)) / (2 * h)
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        g.flat[k] = (_value(f, args, x + e) - _value(f, args, x - e)) / (2 * h)
    return g


def _fd_hessian(f, args, h=1e-4):
    x = np.atleast_1d(np.asarray(args[0], dtype=float))
    scalar = isinstance(args[0], float)
    at = (lambda v: float(v[0])) if scalar else (lambda v: v)
    n = x.size
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei = np.zeros(n)
            ej = np.zeros(n)
            ei[i] = h
            ej[j] = h
            H[i, j] = (_value(f, args, at(x + ei + ej)) - _value(f, args, at(x + ei - ej))
                       - _value(f, args, at(x - ei + ej)) + _value(f, args, at(x - ei - ej))
                       ) / (4 * h * h)
    return float(H[0, 0]) if scalar else H


def reference(entry: str, f, args):
    if entry == "jvp":
        g = _fd_gradient(f, args)
        return float(np.sum(g * _direction(args)[0]))
    if entry in ("grad", "vjp"):
        return _fd_gradient(f, args)
    return _fd_hessian(f, args)


# --- checking an error ---------------------------------------------------------------------------

def _kernel_lines(f) -> range:
    py = getattr(f, "py_func", f)
    lines, first = inspect.getsourcelines(py)
    return range(first, first + len(lines))


def check_refusal(exc: BaseException, *, construct: str, function: str, hint: str,
                  kernel=None, source: str = None) -> str:
    """`exc` is a MoonliteError naming `construct`, `function` and (for `kernel`) a source line
    inside the kernel, with a `what to do:` line holding `hint`. Returns the message."""
    assert isinstance(exc, MoonliteError), f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    assert not isinstance(exc, numba.core.errors.NumbaError)
    message = str(exc)
    assert "\x1b[" not in message, message  # no terminal colour codes from numba
    assert construct in message, message
    assert function in message, message
    assert hint in message, message
    if isinstance(exc, UnsupportedError):
        assert "what to do:" in message, message
    if kernel is not None:
        found = re.search(r"at (\S+):(\d+)", message)
        assert found and found.group(1).endswith("test_bad_inputs.py"), message
        assert int(found.group(2)) in _kernel_lines(kernel), message
    if source is not None:
        assert f"> {source}" in message, message
    return message


# --- 1. constructs that must be refused ----------------------------------------------------------

# (id, kernel, args, construct, hint, source line shown, entry points)
REFUSED = [
    ("try_except", try_except, (1.5,), "try/except", "move the try/except out of the kernel",
     None, ENTRY_POINTS),
    ("generator", generator, (1.5,), "generators", "return an array", None, ENTRY_POINTS),
    ("objmode", objmode_block, (1.5,), "an objmode block", "move the object-mode code",
     'with objmode(y="float64"):', ENTRY_POINTS),
    ("recursion", recursive, (1.5, 3), "recursive functions in reverse mode",
     "rewrite the recursion as a loop", None, ("grad", "vjp", "hessian")),
    # the message names the recursive function (`recursive`), not the kernel calling it
    ("recursion_called_from_a_kernel", calls_recursive, (1.5,),
     "recursive functions in reverse mode", "rewrite the recursion as a loop", None,
     ("grad", "vjp", "hessian")),
    ("string_ordering", string_ordering, (1.5, "square"), "operations on strings",
     "pass a number (an int flag) instead of a string", 'if mode < "m":', ENTRY_POINTS),
    ("typed_list_argument", typed_list_argument, (1.5, _typed_list()),
     "numba typed containers", "pass a numpy array", None, ENTRY_POINTS),
    ("typed_dict_argument", typed_dict_argument, (1.5, _typed_dict()),
     "numba typed containers", "pass a numpy array", None, ENTRY_POINTS),
    ("typed_list_inside", typed_list_inside, (1.5,), "numba typed containers",
     "pass a numpy array", "values = List()", ENTRY_POINTS),
    ("typed_dict_inside", typed_dict_inside, (1.5,), "numba typed containers",
     "pass a numpy array", "table = Dict.empty(numba.int64, numba.float64)", ENTRY_POINTS),
    ("complex_inside_forward", complex_inside, (1.5,), "differentiating complex numbers",
     "split the computation into real and imaginary parts", "z = complex(x, 1.0)", ("jvp",)),
    # reverse mode used to return 0.0 here (a wrong number): refused since issue #8
    ("complex_inside_reverse", complex_inside, (1.5,),
     "differentiating complex numbers in reverse mode",
     "split the computation into real and imaginary parts", "z = complex(x, 1.0)",
     ("grad", "vjp", "hessian")),
    ("complex_argument_reverse", complex_argument, (1.5, 1.0 + 0.5j),
     "differentiating complex numbers in reverse mode", "real and imaginary parts",
     "return x * (z * z).real", ("grad", "vjp", "hessian")),
    ("complex_argument_hvp", complex_argument, (1.5, 1.0 + 0.5j),
     "complex arguments (argument 1)", "real and imaginary parts", None, ("hvp",)),
    ("global_array_write", writes_global, (1.5,), "writing into a read-only array",
     "pass the array as an argument", "WRITTEN[0] = x", ENTRY_POINTS),
]


def _cases(table):
    """(case, entry point) pairs: hvp goes wherever hessian goes, unless a case for the same
    kernel lists hvp itself."""
    own_hvp = {case[1] for case in table if "hvp" in case[-1]}
    out = []
    for case in table:
        entries = case[-1]
        if "hessian" in entries and case[1] not in own_hvp:
            entries = entries + ("hvp",)
        out.extend(pytest.param(case, e, id=f"{case[0]}-{e}") for e in entries)
    return out


@pytest.mark.parametrize("case, entry", _cases(REFUSED))
def test_unsupported_construct_is_refused_clearly(case, entry):
    _, kernel, args, construct, hint, source, _ = case
    with pytest.raises(MoonliteError) as info:
        if entry == "hvp":
            moonlite.hvp(kernel, args, _direction(args))
        else:
            run(entry, kernel, args)
    recursion = construct.startswith("recursive")
    check_refusal(info.value, construct=construct,
                  function="recursive" if recursion else kernel.py_func.__name__, hint=hint,
                  kernel=recursive if recursion else kernel, source=source)


def test_recursion_in_forward_mode_is_refused():
    for f, args in [(recursive, (1.5, 3)), (calls_recursive, (1.5,))]:
        with pytest.raises(UnsupportedError) as info:
            run("jvp", f, args)
        check_refusal(info.value, construct="recursive functions in forward mode",
                      function="recursive", hint="rewrite the recursion as a loop")


def test_recursion_in_forward_mode_names_the_source_line():
    with pytest.raises(UnsupportedError) as info:
        run("jvp", recursive, (1.5, 3))
    check_refusal(info.value, construct="recursive functions in forward mode",
                  function="recursive", hint="rewrite the recursion", kernel=recursive)


# --- 2. constructs that differentiate correctly ---------------------------------------------------

A = np.array([0.3, -1.2, 0.8, 2.0])

# (id, kernel, args): the derivative with respect to argument 0 must match finite differences
CORRECT = [
    # prange loops are captured as serial range loops: derivatives are exact
    ("prange_reduction", prange_reduction, (A,)),
    ("prange_writes", prange_writes, (A,)),
    # a string constant whose length is used: no string reaches an operator moonlite refuses
    ("string_constant_len", string_inside, (1.5,)),
    # a string compared for equality (configuration): a flag, taken either way (issue #20)
    ("string_argument_equal", string_argument, (1.5, "square")),
    ("string_argument_other", string_argument, (1.5, "other")),
    # reading a global array is fine (numba freezes it as a constant)
    ("global_array_read", reads_global, (A,)),
]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("case", CORRECT, ids=[c[0] for c in CORRECT])
def test_construct_differentiates_correctly(case, entry):
    _, kernel, args = case
    got = run(entry, kernel, args)
    np.testing.assert_allclose(got, reference(entry, kernel, args), rtol=1e-5, atol=1e-5)


# --- 3. misuse of the API ------------------------------------------------------------------

def plain_python(x):
    return x * x


square_lambda = lambda x: x * x  # noqa: E731


@numba.vectorize(["float64(float64)"])
def vectorized(x):
    return x * x


NOT_NJIT = [("plain_function", plain_python, "plain_python", "decorate the function"),
            ("lambda", square_lambda, "<lambda>", "write the lambda as a function"),
            ("numpy_ufunc", np.sin, "sin", "sin is a numpy ufunc"),
            ("numba_vectorize", vectorized, "vectorized", "a @numba.vectorize ufunc")]

API_CALLS = {
    "jvp": lambda f: moonlite.jvp(f, (1.5,), (1.0,)),
    "grad": lambda f: moonlite.grad(f)(1.5),
    "value_and_grad": lambda f: moonlite.value_and_grad(f)(1.5),
    "vjp": lambda f: moonlite.vjp(f, 1.5),
    "jacfwd": lambda f: moonlite.jacfwd(f)(1.5),
    "jacrev": lambda f: moonlite.jacrev(f)(1.5),
    "hessian": lambda f: moonlite.hessian(f)(1.5),
    "hvp": lambda f: moonlite.hvp(f, (1.5,), (1.0,)),
}


@pytest.mark.parametrize("api", list(API_CALLS))
@pytest.mark.parametrize("case", NOT_NJIT, ids=[c[0] for c in NOT_NJIT])
def test_function_that_is_not_njit(case, api):
    _, f, name, hint = case
    with pytest.raises(UnsupportedError) as info:
        API_CALLS[api](f)
    message = check_refusal(info.value, construct="not compiled with @numba.njit",
                            function=name, hint=hint)
    assert "numba.njit" in message


@njit
def vector_out(x):
    return x * 2.0


@njit
def sum_cubes_scaled(x, n):
    return np.sum(x * x * x) * n


@njit
def sum_cubes(x):
    return np.sum(x * x * x)


@njit
def cube(x):
    return x * x * x


@njit
def two_arrays(x, y):
    return np.sum(x * x * y)


X = np.array([0.5, -1.0, 2.0])
F32 = np.ones(3, np.float32)

# (id, call, error class, substrings of the message)
MISUSE = [
    # the gradient / Hessian of a function without a scalar float output
    ("grad_of_array_output", lambda: moonlite.grad(vector_out)(X), UnsupportedError,
     ["grad of a function returning array(float64, 1d, C)", "vector_out", "use jacfwd"]),
    ("value_and_grad_of_array_output", lambda: moonlite.value_and_grad(vector_out)(X),
     UnsupportedError, ["value_and_grad of a function returning", "vector_out"]),
    ("hessian_of_array_output", lambda: moonlite.hessian(vector_out)(X), UnsupportedError,
     ["hessian of a function returning array(float64, 1d, C)", "vector_out",
      "needs a scalar float output"]),
    ("hvp_of_array_output", lambda: moonlite.hvp(vector_out, (X,), (X,)), UnsupportedError,
     ["hvp of a function returning", "vector_out", "needs a scalar float output"]),
    # argnums
    ("grad_argnums_at_int", lambda: moonlite.grad(sum_cubes_scaled, argnums=1)(X, 2),
     ArgumentError, ["grad(sum_cubes_scaled)", "argument 1 has type int64",
                     "gradients exist for floats"]),
    ("grad_negative_argnums_at_int", lambda: moonlite.grad(sum_cubes_scaled, argnums=-1)(X, 2),
     ArgumentError, ["grad(sum_cubes_scaled)", "argument -1 has type int64"]),
    ("grad_float_argnums", lambda: moonlite.grad(sum_cubes_scaled, argnums=1.0),
     ArgumentError, ["grad(sum_cubes_scaled)", "argnums must be an int or a tuple of ints",
                     "1.0"]),
    ("grad_float_in_argnums_tuple", lambda: moonlite.grad(sum_cubes_scaled, argnums=(0, 1.0)),
     ArgumentError, ["argnums must be an int or a tuple of ints"]),
    ("grad_bool_argnums", lambda: moonlite.grad(sum_cubes_scaled, argnums=True),
     ArgumentError, ["argnums must be an int"]),
    ("grad_list_argnums", lambda: moonlite.grad(sum_cubes_scaled, argnums=[0]),
     ArgumentError, ["argnums must be an int or a tuple of ints", "[0]"]),
    ("grad_argnums_out_of_range", lambda: moonlite.grad(sum_cubes_scaled, argnums=5)(X, 2),
     ArgumentError, ["grad(sum_cubes_scaled)", "argnums 5 is out of range for 2 arguments"]),
    ("grad_negative_argnums_out_of_range",
     lambda: moonlite.grad(sum_cubes_scaled, argnums=-3)(X, 2),
     ArgumentError, ["argnums -3 is out of range for 2 arguments"]),
    ("hessian_argnums_at_int", lambda: moonlite.hessian(sum_cubes_scaled, argnums=1)(X, 2),
     ArgumentError, ["hessian(sum_cubes_scaled)", "argument 1 has type int64"]),
    ("hessian_argnums_out_of_range",
     lambda: moonlite.hessian(sum_cubes_scaled, argnums=5)(X, 2),
     ArgumentError, ["hessian(sum_cubes_scaled)", "argnums 5 is out of range"]),
    ("hessian_float_argnums", lambda: moonlite.hessian(sum_cubes_scaled, argnums=0.0),
     ArgumentError, ["hessian(sum_cubes_scaled)", "argnums must be an int"]),
    ("hessian_tuple_argnums", lambda: moonlite.hessian(two_arrays, argnums=(0, 1)),
     ArgumentError, ["hessian(two_arrays)", "pack them into one array"]),
    ("jacfwd_argnums_at_int", lambda: moonlite.jacfwd(sum_cubes_scaled, argnums=1)(X, 2),
     ArgumentError, ["jacfwd(sum_cubes_scaled)", "argument 1 is an int"]),
    ("jacrev_argnums_out_of_range", lambda: moonlite.jacrev(sum_cubes_scaled, argnums=9)(X, 2),
     ArgumentError, ["jacrev(sum_cubes_scaled)", "argnums 9 is out of range"]),
    # tangents
    ("jvp_tangent_wrong_shape", lambda: moonlite.jvp(sum_cubes, (X,), (np.ones(2),)),
     ArgumentError, ["jvp(sum_cubes): tangent 0", "shape (2,)", "shape (3,)"]),
    ("jvp_tangent_wrong_dtype", lambda: moonlite.jvp(sum_cubes, (X,), (F32,)),
     ArgumentError, ["jvp(sum_cubes): tangent 0", "dtype float32", "dtype float64"]),
    ("jvp_tangent_int_array", lambda: moonlite.jvp(sum_cubes, (X,), (np.ones(3, np.int64),)),
     ArgumentError, ["tangent 0", "dtype int64"]),
    ("jvp_tangent_list_for_array", lambda: moonlite.jvp(sum_cubes, (X,), ([1.0, 1.0, 1.0],)),
     ArgumentError, ["tangent of an array must be an array of shape (3,)", "got list"]),
    ("jvp_tangent_scalar_for_array", lambda: moonlite.jvp(sum_cubes, (X,), (1.0,)),
     ArgumentError, ["tangent of an array must be an array", "got float"]),
    ("jvp_tangent_array_for_scalar", lambda: moonlite.jvp(cube, (1.5,), (np.ones(3),)),
     ArgumentError, ["jvp(cube): tangent 0", "tangent of a scalar must be a scalar"]),
    ("jvp_tangent_string_for_scalar", lambda: moonlite.jvp(cube, (1.5,), ("a",)),
     ArgumentError, ["jvp(cube): tangent 0", "must be a real number, got str"]),
    ("jvp_tangent_missing", lambda: moonlite.jvp(cube, (1.5,), (None,)),
     ArgumentError, ["tangent 0", "the tangent is missing", "pass zeros"]),
    ("jvp_tangent_for_int", lambda: moonlite.jvp(sum_cubes_scaled, (X, 2), (X, 1)),
     ArgumentError, ["jvp(sum_cubes_scaled): tangent 1", "int argument carries no tangent",
                     "pass None"]),
    ("jvp_too_few_tangents", lambda: moonlite.jvp(sum_cubes_scaled, (X, 2), (X,)),
     ArgumentError, ["jvp(sum_cubes_scaled) needs one tangent per primal", "got 2 primals"]),
    ("jvp_primals_not_a_tuple", lambda: moonlite.jvp(cube, 1.5, 1.0),
     ArgumentError, ["jvp(cube): primals must be a tuple"]),
    ("jvp_complex_argument", lambda: moonlite.jvp(complex_argument, (1.5, 1j), (1.0, None)),
     UnsupportedError, ["complex arguments (argument 1)", "complex_argument",
                        "real and imaginary parts"]),
    ("hvp_too_few_tangents", lambda: moonlite.hvp(sum_cubes_scaled, (X, 2), (X,)),
     ArgumentError, ["hvp(sum_cubes_scaled) needs one tangent per primal"]),
    ("hvp_tangent_wrong_shape", lambda: moonlite.hvp(sum_cubes, (X,), (np.ones(2),)),
     ArgumentError, ["hvp(sum_cubes): tangent 0", "shape (2,)"]),
    ("hvp_tangent_wrong_dtype", lambda: moonlite.hvp(sum_cubes, (X,), (F32,)),
     ArgumentError, ["hvp(sum_cubes): tangent 0", "dtype float32"]),
    ("hvp_tangent_for_int", lambda: moonlite.hvp(sum_cubes_scaled, (X, 2), (X, 1)),
     ArgumentError, ["hvp(sum_cubes_scaled): tangent 1", "carries no tangent"]),
    # cotangents
    ("vjp_cotangent_wrong_shape", lambda: moonlite.vjp(vector_out, X)[1](np.ones(2)),
     ArgumentError, ["vjp(vector_out) pullback", "cotangent must have shape (3,)",
                     "got shape (2,)"]),
    ("vjp_cotangent_wrong_dtype", lambda: moonlite.vjp(vector_out, X)[1](F32),
     ArgumentError, ["vjp(vector_out) pullback", "dtype float32"]),
    ("vjp_cotangent_scalar_for_array", lambda: moonlite.vjp(vector_out, X)[1](1.0),
     ArgumentError, ["cotangent must have shape (3,)", "got float"]),
    ("vjp_cotangent_array_for_scalar", lambda: moonlite.vjp(sum_cubes, X)[1](np.ones(3)),
     ArgumentError, ["vjp(sum_cubes) pullback", "its cotangent must be a scalar"]),
    ("vjp_cotangent_none", lambda: moonlite.vjp(sum_cubes, X)[1](None),
     ArgumentError, ["vjp(sum_cubes) pullback", "must be a real number, got NoneType"]),
    ("vjp_pullback_called_twice", lambda: [pb(1.0) for pb in [moonlite.vjp(sum_cubes, X)[1]]
                                           for _ in range(2)],
     ArgumentError, ["vjp(sum_cubes)", "already used", "call vjp again"]),
    # the wrong number of arguments
    ("jvp_too_few_arguments", lambda: moonlite.jvp(sum_cubes_scaled, (X,), (X,)),
     ArgumentError, ["jvp(sum_cubes_scaled)", "missing a required argument: 'n'", "(x, n)"]),
    ("jvp_too_many_arguments", lambda: moonlite.jvp(cube, (1.5, 1.5), (1.0, 1.0)),
     ArgumentError, ["jvp(cube)", "too many positional arguments"]),
    ("grad_too_few_arguments", lambda: moonlite.grad(sum_cubes_scaled)(X),
     ArgumentError, ["grad_sum_cubes_scaled", "missing a required argument: 'n'", "(x, n)"]),
    ("grad_too_many_arguments", lambda: moonlite.grad(cube)(1.5, 1.5),
     ArgumentError, ["grad_cube", "too many positional arguments"]),
    ("grad_wrong_keyword", lambda: moonlite.grad(cube)(y=1.5),
     ArgumentError, ["grad_cube", "missing a required argument: 'x'"]),
    ("value_and_grad_too_few_arguments", lambda: moonlite.value_and_grad(two_arrays)(X),
     ArgumentError, ["value_and_grad_two_arrays", "missing a required argument: 'y'"]),
    ("vjp_too_few_arguments", lambda: moonlite.vjp(sum_cubes_scaled, X),
     ArgumentError, ["vjp(sum_cubes_scaled)", "missing a required argument: 'n'"]),
    ("hessian_too_few_arguments", lambda: moonlite.hessian(sum_cubes_scaled)(X),
     ArgumentError, ["hessian_sum_cubes_scaled", "missing a required argument: 'n'"]),
    ("hvp_too_few_arguments", lambda: moonlite.hvp(sum_cubes_scaled, (X,), (X,)),
     ArgumentError, ["hvp(sum_cubes_scaled)", "missing a required argument: 'n'"]),
    ("jacfwd_too_few_arguments", lambda: moonlite.jacfwd(sum_cubes_scaled)(X),
     ArgumentError, ["jacfwd_sum_cubes_scaled", "missing a required argument: 'n'"]),
    ("jacrev_too_many_arguments", lambda: moonlite.jacrev(sum_cubes)(X, X),
     ArgumentError, ["jacrev_sum_cubes", "too many positional arguments"]),
    # arguments of types that carry no derivative, as the differentiated argument
    ("grad_of_int_argument", lambda: moonlite.grad(cube)(2),
     ArgumentError, ["grad(cube)", "argument 0 has type int64"]),
    ("grad_of_int_array", lambda: moonlite.grad(sum_cubes)(np.arange(3)),
     ArgumentError, ["grad(sum_cubes)", "array(int64, 1d, C)"]),
    ("grad_of_complex_argument", lambda: moonlite.grad(complex_inside)(1.0 + 2.0j),
     ArgumentError, ["grad(complex_inside)", "complex128"]),
    ("hessian_of_complex_argument", lambda: moonlite.hessian(complex_inside)(1.0 + 2.0j),
     ArgumentError, ["hessian(complex_inside)", "complex128"]),
]


@pytest.mark.parametrize("case", MISUSE, ids=[c[0] for c in MISUSE])
def test_api_misuse_is_refused_clearly(case):
    _, call, error, expected = case
    with pytest.raises(MoonliteError) as info:
        call()
    assert isinstance(info.value, error), f"{type(info.value).__name__}: {info.value}"
    assert not isinstance(info.value, numba.core.errors.NumbaError)
    message = str(info.value)
    assert "\x1b[" not in message
    for part in expected:
        assert part in message, f"{part!r} not in:\n{message}"


def test_non_scalar_gradient_error_names_the_function_definition():
    with pytest.raises(UnsupportedError) as info:
        moonlite.grad(vector_out)(X)
    check_refusal(info.value, construct="grad of a function returning", function="vector_out",
                  hint="use jacfwd", kernel=vector_out)


# Misuses that have a well-defined answer: checked against finite differences.

def test_negative_argnums_counts_from_the_end():
    got = moonlite.grad(sum_cubes_scaled, argnums=-2)(X, 2)
    np.testing.assert_allclose(got, 6 * X * X, rtol=1e-12)
    np.testing.assert_allclose(got, _fd_gradient(sum_cubes_scaled, (X, 2)), rtol=1e-6)
    H = moonlite.hessian(sum_cubes_scaled, argnums=-2)(X, 2)
    np.testing.assert_allclose(H, _fd_hessian(sum_cubes_scaled, (X, 2)), atol=1e-5)


def test_duplicate_argnums_give_the_gradient_twice():
    g1, g2 = moonlite.grad(two_arrays, argnums=(0, 0))(X, X + 1.0)
    expected = _fd_gradient(two_arrays, (X, X + 1.0))
    np.testing.assert_allclose(g1, expected, rtol=1e-6)
    np.testing.assert_allclose(g2, expected, rtol=1e-6)
    g1, g2 = moonlite.grad(two_arrays, argnums=(0, -2))(X, X + 1.0)
    np.testing.assert_allclose(g1, g2)
    j1, j2 = moonlite.jacfwd(two_arrays, argnums=(0, 0))(X, X + 1.0)
    np.testing.assert_allclose(j1, expected, rtol=1e-6)
    np.testing.assert_allclose(j2, expected, rtol=1e-6)


def test_int_primal_in_jvp_has_no_tangent():
    out, dout = moonlite.jvp(cube, (2,), (None,))
    assert out == 8 and dout is None


def test_string_ordering_is_refused_before_running():
    # even when the branch on the string is not taken, no wrong number: the kernel is refused
    with pytest.raises(UnsupportedError, match="operations on strings"):
        moonlite.grad(string_ordering)(1.5, "z")


def test_capture_refuses_typed_containers_too():
    with pytest.raises(UnsupportedError, match="numba typed containers"):
        moonlite.capture(typed_list_inside, 1.5)
    with pytest.raises(UnsupportedError, match="numba typed containers"):
        moonlite.capture(typed_dict_argument, 1.5, _typed_dict())
