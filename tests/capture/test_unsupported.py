"""Bad input to capture: a moonlite error naming the construct, the function and the source line.

Never a raw numba traceback, never a crash, never a wrong result.
"""

import numba
import numpy as np
import pytest
from numba import njit, objmode

import moonlite
from moonlite import CaptureError, UnsupportedError
from moonlite.capture.importer import Importer
from moonlite.capture.pipeline import run_capture_pipeline


def plain_python(x):
    return x


@numba.jit(forceobj=True)
def object_mode(x):
    return x


@njit
def generator(n):
    for i in range(n):
        yield i


@njit
def sum_of_generated(n):  # a generator of a helper, iterated: refused as one (not as a loop)
    s = 0
    for v in generator(n):
        s += v
    return s


@njit
def try_except(x):
    try:
        return 1.0 / x
    except Exception:
        return 0.0


@njit
def prints(x):
    print(x)
    return x


@njit
def list_repeated(x):
    rows = [x * 1.0] * 2  # one array twice: a list of references, which rows cannot be
    return rows[1][0]


@njit
def optional_best(x):
    best = None
    for v in x:
        if best is None or v > best:
            best = v
    return best


@njit
def dict_literal(x):
    d = {1: x}
    return d[1]


@njit
def objmode_block(x):
    with objmode(y="float64"):
        y = x * 2
    return y


UNSUPPORTED = [
    (plain_python, (1.0,), "not compiled with @numba.njit", "decorate"),
    (object_mode, (1.0,), "object-mode functions", "@numba.njit"),
    (generator, (3,), "generators", "return an array"),
    (sum_of_generated, (3,), "generators", "return an array of the values"),
    (try_except, (1.0,), "try/except", "move the try/except"),
    (prints, (1.0,), "print()", "remove the print"),
    (list_repeated, (np.ones(2),), "repeating a list other than of numbers or tuples",
     "np.tile"),
    (optional_best, (np.ones(2),), "`is None` / `is not None` tests", "a sentinel"),
    (dict_literal, (1.0,), "dict literals", "arrays or tuples"),
    (objmode_block, (1.0,), "objmode block", "move the object-mode code"),
]


@pytest.mark.parametrize("fn, args, construct, hint", UNSUPPORTED,
                         ids=[u[0].__name__ if hasattr(u[0], "__name__") else
                              u[0].py_func.__name__ for u in UNSUPPORTED])
def test_unsupported_construct_is_named(fn, args, construct, hint):
    with pytest.raises(UnsupportedError) as info:
        moonlite.capture(fn, *args)
    message = str(info.value)
    name = getattr(fn, "py_func", fn).__name__
    assert construct in message
    assert name in message
    assert "test_unsupported.py:" in message  # the source line
    assert "what to do:" in message and hint in message


def test_error_shows_argument_types_and_source_text():
    with pytest.raises(UnsupportedError) as info:
        moonlite.capture(optional_best, np.ones(2))
    message = str(info.value)
    assert "optional_best(array(float64, 1d, C))" in message
    assert "if best is None or v > best:" in message  # the offending source line itself


@njit
def adds_string(x):
    return x + "a"


def test_numba_typing_failure_is_a_capture_error_without_colour_codes():
    with pytest.raises(CaptureError) as info:
        moonlite.capture(adds_string, 1.0)
    message = str(info.value)
    assert "adds_string(float64)" in message
    assert "\x1b[" not in message


@njit
def simple(x):
    y = x * 2.0
    return y + 1.0


def test_unknown_numba_ir_node_is_refused():
    class Mystery(numba.core.ir.Stmt):
        def __init__(self, loc):
            self.loc = loc

        def __str__(self):
            return "mystery"

    typed = run_capture_pipeline(simple, (numba.float64,))
    block = typed.func_ir.blocks[min(typed.func_ir.blocks)]
    block.body.insert(1, Mystery(block.body[1].loc))
    with pytest.raises(UnsupportedError) as info:
        Importer(simple.py_func, typed).run()
    assert "Mystery" in str(info.value)
    assert "simple" in str(info.value)


# Constructs numba compiles that moonlite captures faithfully rather than refusing.

@njit(parallel=True)
def parallel_sum(a):
    s = 0.0
    for i in numba.prange(a.shape[0]):
        s += a[i]
    return s


@njit
def recursive(n):
    if n <= 0:
        return 1.0
    return n * recursive(n - 1)


@njit
def complex_square(x):
    z = complex(x, 1.0)
    return (z * z).real


@njit
def uses_closure(x):
    f = lambda y: y * 2  # noqa: E731 - numba inlines closures
    return f(x)


@pytest.mark.parametrize("fn, args", [(parallel_sum, (np.arange(5.0),)), (recursive, (4,)),
                                      (complex_square, (1.5,)), (uses_closure, (2.0,))],
                         ids=["prange", "recursion", "complex", "closure"])
def test_construct_round_trips(fn, args):
    ir_fn = moonlite.verify(moonlite.capture(fn, *args))
    assert moonlite.lower(ir_fn)(*args) == fn(*args)
