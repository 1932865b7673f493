"""Corpus of ordinary ``@numba.njit`` kernels used to test moonlite.

Each :class:`Case` pairs a kernel with a factory of example arguments.  The
corpus is used to check that moonlite captures a kernel into its IR and
compiles it back with identical results, and later to check derivatives.

Tags used: scalar, math, branch, int, bool, while, loop, break, early_return,
array, array2d, slice, alloc, mutation, float32, tuple, call, numpy, blas,
raise, classic, global, iter, nondiff.
"mutation" means the kernel writes into one of its argument arrays (in-place
updates of locally allocated arrays do not count).  "nondiff" means the output
is not a differentiable function of the float inputs (integer results).
"""

from dataclasses import dataclass
from typing import Callable, Optional
import math
import numba
import numpy as np


@dataclass(frozen=True)
class Case:
    name: str                       # unique, snake_case
    kernel: Callable                # the @numba.njit dispatcher
    make_args: Callable[[], tuple]  # returns FRESH arguments every call (kernels may mutate arrays)
    make_bad_args: Optional[Callable[[], tuple]] = None  # args that make the kernel raise (bad-input path)
    # indices of float arguments that are not differentiated (tolerances: perturbing them can
    # stop a while loop from terminating)
    fixed: tuple = ()
    tags: frozenset = frozenset()   # e.g. {"loop", "branch", "array", "mutation", "call", "tuple", "raise", "numpy", "int"}


# ---------------------------------------------------------------------------
# argument factories (deterministic: a fixed seed per call site)
# ---------------------------------------------------------------------------

def _vec(seed, n, lo=-1.0, hi=1.0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(dtype)


def _mat(seed, m, n, lo=-1.0, hi=1.0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(lo, hi, (m, n)).astype(dtype)


def _scalar(seed, lo=-1.0, hi=1.0):
    return float(np.random.default_rng(seed).uniform(lo, hi))


def _tags(*names):
    return frozenset(names)


# ---------------------------------------------------------------------------
# scalar arithmetic and math functions
# ---------------------------------------------------------------------------

@numba.njit
def scalar_arith(x, y):
    return x + y * 2.0 - x / y + (-x) * y - 3.0


@numba.njit
def scalar_pow_floordiv_mod(x, y):
    return x ** 2 + x ** y + 1.5 ** x + (x // y) + (x % y)


@numba.njit
def scalar_abs_min_max(x, y, z):
    return abs(x - y) + min(x, y) * max(y, z) + min(x, y, z) - max(abs(z), 0.5)


@numba.njit
def unary_minus_chain(x, y):
    a = -x
    b = -(a * y - 1.0)
    return -(b ** 3) + -a / (1.0 + y * y)


@numba.njit
def math_trig(x, y):
    return (math.sin(x) * math.cos(y) + math.tan(0.5 * x)
            + math.atan2(y, x) + math.hypot(x, y) + math.asin(0.5 * y))


@numba.njit
def math_exp_log(x, y):
    return (math.exp(x) + math.log(y) + math.sqrt(y) + math.tanh(x)
            + math.pow(y, x) + math.log10(y) + math.cosh(0.5 * x))


@numba.njit
def math_special(x):
    return (math.erf(x) + math.lgamma(x + 2.0) + math.log1p(x * x)
            + math.expm1(x) + math.floor(3.0 * x) + math.ceil(x) + math.fabs(x))


@numba.njit
def mixed_int_float(x, n):
    k = n * 2 + 1
    return x * k + k // 3 + (k % 4) * x * x - float(n) / 7.0


GRAVITY = 9.81


@numba.njit
def projectile_height(v0, angle, t):
    vy = v0 * math.sin(angle)
    return vy * t - 0.5 * GRAVITY * t * t


# ---------------------------------------------------------------------------
# branches
# ---------------------------------------------------------------------------

@numba.njit
def piecewise_branch(x):
    if x < -1.0:
        return -x - 0.5
    elif x < 1.0:
        return 0.5 * x * x
    else:
        return x - 0.5


@numba.njit
def nested_branch(x, y):
    if x > 0.0:
        if y > 0.0:
            r = x * y
        else:
            r = x - y
    else:
        if y > x:
            r = math.exp(x) * y
        elif y > -0.5:
            r = y * y
        else:
            r = -x
    return r + 1.0


@numba.njit
def int_mode_branch(x, mode):
    if mode == 0:
        return math.sin(x)
    elif mode == 1:
        return math.cos(x) * x
    elif mode < 0:
        return -x
    else:
        return x ** mode


@numba.njit
def ternary_expr(x, y):
    a = x if x > y else y
    b = x - y if x > 0.0 else y - x
    return a * b + (1.0 if a > 0.0 else -1.0) * y


@numba.njit
def bool_flag(x, y, use_exp):
    if use_exp:
        z = math.exp(x) + y
    else:
        z = x * x + y
    return z * 2.0


@numba.njit
def leaky_relu_sum(a, slope):
    s = 0.0
    for i in range(a.shape[0]):
        v = a[i]
        s += v if v > 0.0 else slope * v
    return s


# ---------------------------------------------------------------------------
# while loops with data-dependent trip counts
# ---------------------------------------------------------------------------

@numba.njit
def newton_sqrt(a):
    x = a if a > 1.0 else 1.0
    it = 0
    while abs(x * x - a) > 1e-12 * a and it < 100:
        x = 0.5 * (x + a / x)
        it += 1
    return x


@numba.njit
def newton_cube_root(c, tol):
    x = 1.0
    delta = 1.0
    while abs(delta) > tol:
        delta = (x * x * x - c) / (3.0 * x * x)
        x -= delta
    return x


@numba.njit
def halving_until_tol(x, tol):
    n = 0
    while x > tol:
        x *= 0.5
        n += 1
    return x, n


@numba.njit
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@numba.njit
def while_true_break(x):
    s = 0.0
    k = 1.0
    while True:
        term = x / k
        if term < 1e-3:
            break
        s += term
        k *= 2.0
    return s


# ---------------------------------------------------------------------------
# for-range loops
# ---------------------------------------------------------------------------

@numba.njit
def sum_sin_loop(x, n):
    s = 0.0
    for i in range(n):
        s += math.sin(x * i)
    return s


@numba.njit
def range_start_stop(a, lo, hi):
    s = 0.0
    for i in range(lo, hi):
        s += a[i] * a[i]
    return s


@numba.njit
def range_positive_step(a):
    s = 0.0
    for i in range(1, len(a), 3):
        s += a[i] * i
    return s


@numba.njit
def range_negative_step(a, x):
    acc = 0.0
    for i in range(len(a) - 1, -1, -2):
        acc = acc * x + a[i]
    return acc


@numba.njit
def range_runtime_step(a, start, stop, step):
    s = 0.0
    for i in range(start, stop, step):
        s += math.exp(a[i])
    return s


@numba.njit
def iterate_array_and_enumerate(a, b):
    s = 0.0
    for v in a:
        s += v * v
    for i, (u, w) in enumerate(zip(a, b)):
        s += i * u * w
    return s


# ---------------------------------------------------------------------------
# nested loops, break / continue, early return
# ---------------------------------------------------------------------------

@numba.njit
def nested_break_continue(A, limit):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] < 0.0:
                continue
            if s > limit:
                break
            s += A[i, j] * A[i, j]
    return s


@numba.njit
def early_return_in_loop(a, thresh):
    s = 0.0
    for i in range(len(a)):
        if a[i] > thresh:
            return s + 2.0 * a[i]
        s += a[i]
    return -s


@numba.njit
def find_first_index(a, thresh):
    for i in range(a.shape[0]):
        if a[i] > thresh:
            return i
    return -1


@numba.njit
def triangular_nested(A):
    s = 0.0
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            s += A[i, j] * A[j, i]
    return s


# ---------------------------------------------------------------------------
# 1-D / 2-D arrays: reads, writes, shapes, slices, allocation
# ---------------------------------------------------------------------------

@numba.njit
def array_map_1d(a):
    out = np.empty(len(a))
    for i in range(a.shape[0]):
        out[i] = a[i] * a[i] + 1.0
    return out


@numba.njit
def array_write_2d(A):
    m, n = A.shape
    out = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            out[i, j] = A[i, j] * (i + j) - A[j % m, i % n]
    return out


@numba.njit
def slice_views_1d(a):
    inner = a[1:-1]
    even = a[::2]
    tail = a[3:]
    return inner.sum() * 2.0 + np.sum(even * even) - tail[0]


@numba.njit
def slice_views_2d(A):
    col = A[:, 0]
    row = A[1]
    row2 = A[2, :]
    block = A[1:3, 1:4]
    return np.sum(col * col) + row.sum() * row2[1] + block.sum()


@numba.njit
def inplace_updates(a, b):
    a[0] += 1.0
    a[1] *= 2.0
    a += b
    a[1:3] = 0.5 * a[1:3]
    a -= 0.25
    return a.sum()


@numba.njit
def slice_assign_no_return(a, A):
    a[1:3] = 0.0
    a[4:6] = a[0:2] * 2.0
    A[0, :] = a[:A.shape[1]]
    A[1:3, 0] = 7.0


@numba.njit
def alloc_variants(a):
    e = np.empty_like(a)
    z = np.zeros_like(a)
    o = np.ones(len(a))
    c = a.copy()
    d = np.copy(a)
    for i in range(len(a)):
        e[i] = a[i] * 3.0
        z[i] += c[i]
    c[0] = 100.0
    return e + z + o * d - c


@numba.njit
def float32_alloc(a):
    out = np.empty(a.shape[0], dtype=np.float32)
    acc = np.float32(0.0)
    for i in range(a.shape[0]):
        acc += a[i] * np.float32(0.5)
        out[i] = acc
    return out


@numba.njit
def float32_scalars(x, y):
    z = x * y + x / np.float32(3.0)
    return z - y * y


@numba.njit
def float32_matrix_ops(A, v):
    out = np.zeros(A.shape[0], dtype=np.float32)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i] += A[i, j] * v[j]
    return out * np.float32(2.0)


@numba.njit
def int64_gather(idx, vals):
    s = 0.0
    for i in range(idx.shape[0]):
        s += vals[idx[i]] * (idx[i] + 1)
    return s


@numba.njit
def int_histogram(idx, nbins):
    counts = np.zeros(nbins, dtype=np.int64)
    for i in range(len(idx)):
        counts[idx[i] % nbins] += 1
    return counts


# ---------------------------------------------------------------------------
# kernels that mutate an input array and also return something
# ---------------------------------------------------------------------------

@numba.njit
def normalize_inplace(a):
    s = 0.0
    for i in range(len(a)):
        s += a[i] * a[i]
    s = math.sqrt(s)
    for i in range(len(a)):
        a[i] /= s
    return s


@numba.njit
def scale_rows_inplace(A, w):
    for i in range(A.shape[0]):
        A[i, :] *= w[i]
    return A.sum(), A[0, 0]


# ---------------------------------------------------------------------------
# tuples
# ---------------------------------------------------------------------------

@numba.njit
def tuple_arg(p, x):
    a, b = p
    return a * x + b + p[0] * p[1]


@numba.njit
def tuple_min_max(a):
    lo = a[0]
    hi = a[0]
    arg = 0
    for i in range(1, len(a)):
        if a[i] < lo:
            lo = a[i]
            arg = i
        hi = max(hi, a[i])
    return lo, hi, arg


@numba.njit
def tuple_swap_fib(x, y, n):
    a, b = x, y
    for _ in range(n):
        a, b = b, a + 0.5 * b
    t = (a, b)
    return t[1] - t[0]


@numba.njit
def tuple_heterogeneous(p, a):
    scale, k, flag = p
    s = 0.0
    for i in range(k):
        s += a[i] * scale
    return -s if flag else s


@numba.njit
def tuple_state_loop(x, n):
    # a tuple holding a float and an array carried around a loop (a tuple phi)
    state = (x[0], x)
    for i in range(n):
        a, arr = state
        state = (a * arr[i % len(arr)] + 0.1 * math.sin(a), arr)
    return state[0] * np.sum(state[1])


@numba.njit
def tuple_with_array_arg(p, y):
    w, v = p
    return w * np.sum(v * v) + y * v[0]


@numba.njit
def streaming_mixture(theta, x, k):
    # a mixture log-likelihood (the GMM objective's shape): four nested loops, a streaming
    # logsumexp with a branch. numba put the outer loop's `iternext` in a block after the loop
    # header; moonlite's counter never advanced and every mode looped forever (fixed in capture)
    n, d = x.shape
    total = 0.0
    for i in range(n):
        best, acc = -np.inf, 0.0
        for c in range(k):
            sq = 0.0
            for r in range(d):
                y = math.exp(theta[r]) * (x[i, r] - theta[r])
                for j in range(r):
                    y += theta[j] * (x[i, j] - theta[j])
                sq += y * y
            v = theta[c] - 0.5 * sq
            if v > best:
                acc = acc * math.exp(best - v) + 1.0
                best = v
            else:
                acc += math.exp(v - best)
        total += best + math.log(acc)
    return total


# ---------------------------------------------------------------------------
# calls to other njit functions
# ---------------------------------------------------------------------------

@numba.njit
def _sq(x):
    return x * x


@numba.njit
def helper_called_twice(x, y):
    return _sq(x) + _sq(y - x) * 3.0


@numba.njit
def _h(x):
    return math.exp(-x * x)


@numba.njit
def _g(x, y):
    return _h(x) * y + x


@numba.njit
def call_chain_three_levels(x, y):
    return _g(x, y) - _g(y, x)


@numba.njit
def _polar(x, y):
    return math.hypot(x, y), math.atan2(y, x)


@numba.njit
def helper_returns_tuple(x, y):
    r, theta = _polar(x, y)
    return r * math.cos(2.0 * theta)


@numba.njit
def _scale_inplace(a, s):
    for i in range(len(a)):
        a[i] *= s


@numba.njit
def helper_mutates_array(a, s):
    _scale_inplace(a, s)
    _scale_inplace(a, 1.0 + s)
    return a.sum()


@numba.njit
def _dot_loop(a, b):
    s = 0.0
    for i in range(len(a)):
        s += a[i] * b[i]
    return s


@numba.njit
def helper_with_arrays(A, x):
    out = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        out[i] = _dot_loop(A[i], x)
    return out


# ---------------------------------------------------------------------------
# numpy on arrays
# ---------------------------------------------------------------------------

@numba.njit
def numpy_ufuncs(a):
    return np.sin(a) + np.exp(-a) * np.sqrt(np.abs(a) + 1.0) + np.tanh(2.0 * a) - np.log(1.0 + a * a)


@numba.njit
def numpy_broadcast(A, v, s):
    return A * v + s - v / 2.0 + (A - s) ** 2


@numba.njit
def numpy_reductions(a, A):
    return np.sum(a) + np.prod(a[:4]) + np.mean(A) + np.max(a) + a.sum() + A.sum() + np.min(A) + a.mean()


@numba.njit
def numpy_dot_vec(x, y):
    return np.dot(x, y) + np.dot(x, x)


@numba.njit
def matvec_matmul(A, B, x):
    C = A @ B
    return C @ x + A.T @ x


@numba.njit
def quadratic_form(x, A):
    return x @ A @ x


@numba.njit
def numpy_where_clip(a, lo, hi):
    b = np.where(a > 0.0, a, 0.1 * a)
    return np.minimum(np.maximum(b, lo), hi).sum()


# ---------------------------------------------------------------------------
# raise / assert on bad input
# ---------------------------------------------------------------------------

@numba.njit
def raise_negative_n(x, n):
    if n < 0:
        raise ValueError("n must be non-negative")
    r = 1.0
    for _ in range(n):
        r *= x
    return r


@numba.njit
def assert_positive(x, y):
    assert x > 0.0, "x must be positive"
    return math.log(x) * y


@numba.njit
def raise_in_loop(a):
    s = 0.0
    for i in range(len(a)):
        if a[i] < 0.0:
            raise ValueError("negative entry")
        s += math.sqrt(a[i])
    return s


@numba.njit
def assert_shapes_match(a, b):
    assert a.shape[0] == b.shape[0], "shape mismatch"
    return np.sum(a * b)


# ---------------------------------------------------------------------------
# classic numerical kernels
# ---------------------------------------------------------------------------

@numba.njit
def rosenbrock_loop(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


@numba.njit
def logsumexp_numpy(a):
    m = np.max(a)
    return m + np.log(np.sum(np.exp(a - m)))


@numba.njit
def logsumexp_loop(a):
    m = a[0]
    for i in range(1, len(a)):
        if a[i] > m:
            m = a[i]
    s = 0.0
    for i in range(len(a)):
        s += math.exp(a[i] - m)
    return m + math.log(s)


@numba.njit
def euler_ode_inplace(y, k, c, dt, nsteps):
    for _ in range(nsteps):
        pos = y[0]
        vel = y[1]
        y[0] = pos + dt * vel
        y[1] = vel + dt * (-k * pos - c * vel)
    return 0.5 * y[1] * y[1] + 0.5 * k * y[0] * y[0]


@numba.njit
def mlp_forward(W1, b1, W2, x):
    h = np.tanh(W1 @ x + b1)
    return W2 @ h


@numba.njit
def horner(coeffs, x):
    p = 0.0
    for c in coeffs:
        p = p * x + c
    return p


@numba.njit
def softplus_sigmoid(x):
    softplus = max(x, 0.0) + math.log1p(math.exp(-abs(x)))
    sigmoid = 1.0 / (1.0 + math.exp(-x))
    return softplus + sigmoid * x


@numba.njit
def diffusion_stencil(u, alpha, steps):
    for _ in range(steps):
        new = u.copy()
        new[1:-1] = u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u = new
    return u


@numba.njit
def stencil_loop_2d(U, alpha):
    m, n = U.shape
    out = U.copy()
    for i in range(1, m - 1):
        for j in range(1, n - 1):
            out[i, j] = U[i, j] + alpha * (U[i - 1, j] + U[i + 1, j] + U[i, j - 1] + U[i, j + 1] - 4.0 * U[i, j])
    return out


@numba.njit
def cumsum_new_array(a):
    out = np.empty_like(a)
    s = 0.0
    for i in range(len(a)):
        s += a[i]
        out[i] = s
    return out


@numba.njit
def gradient_descent_quadratic(A, b, x0, lr, iters):
    x = x0.copy()
    for _ in range(iters):
        g = A @ x - b
        x -= lr * g
    return 0.5 * (x @ A @ x) - b @ x


@numba.njit
def trapezoid_integral(a, b, n):
    h = (b - a) / n
    s = 0.5 * (math.exp(-a * a) + math.exp(-b * b))
    for i in range(1, n):
        t = a + i * h
        s += math.exp(-t * t)
    return s * h


@numba.njit
def bisection_root(c, lo, hi, tol):
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if mid * mid * mid - c > 0.0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


# ---------------------------------------------------------------------------
# the corpus
# ---------------------------------------------------------------------------

def _int64_idx():
    return np.random.default_rng(61).integers(0, 10, 12).astype(np.int64)


def _spd(seed, n):
    M = _mat(seed, n, n)
    return M @ M.T + n * np.eye(n)


CASES: list[Case] = [
    # scalar arithmetic / math
    Case("scalar_arith", scalar_arith,
         lambda: (_scalar(1, 0.5, 2.0), _scalar(2, 0.5, 2.0)),
         tags=_tags("scalar")),
    Case("scalar_pow_floordiv_mod", scalar_pow_floordiv_mod,
         lambda: (_scalar(3, 1.0, 3.0), _scalar(4, 0.5, 1.5)),
         tags=_tags("scalar")),
    Case("scalar_abs_min_max", scalar_abs_min_max,
         lambda: (_scalar(5), _scalar(6), _scalar(7)),
         tags=_tags("scalar")),
    Case("unary_minus_chain", unary_minus_chain,
         lambda: (_scalar(8), _scalar(9)),
         tags=_tags("scalar")),
    Case("math_trig", math_trig,
         lambda: (_scalar(10, 0.2, 1.0), _scalar(11, -0.9, 0.9)),
         tags=_tags("scalar", "math")),
    Case("math_exp_log", math_exp_log,
         lambda: (_scalar(12), _scalar(13, 0.5, 3.0)),
         tags=_tags("scalar", "math")),
    Case("math_special", math_special,
         lambda: (_scalar(14, 0.1, 1.9),),
         tags=_tags("scalar", "math")),
    Case("mixed_int_float", mixed_int_float,
         lambda: (_scalar(15), 5),
         tags=_tags("scalar", "int")),
    Case("projectile_height", projectile_height,
         lambda: (_scalar(16, 5.0, 20.0), _scalar(17, 0.2, 1.2), _scalar(18, 0.1, 2.0)),
         tags=_tags("scalar", "math", "global")),

    # branches
    Case("piecewise_branch", piecewise_branch,
         lambda: (_scalar(20, -2.0, 2.0),),
         tags=_tags("branch", "scalar")),
    Case("nested_branch", nested_branch,
         lambda: (-0.3, 0.7),
         tags=_tags("branch", "scalar")),
    Case("int_mode_branch", int_mode_branch,
         lambda: (_scalar(21, 0.5, 1.5), 3),
         tags=_tags("branch", "int", "scalar")),
    Case("ternary_expr", ternary_expr,
         lambda: (_scalar(22), _scalar(23)),
         tags=_tags("branch", "scalar")),
    Case("bool_flag", bool_flag,
         lambda: (_scalar(24), _scalar(25), True),
         tags=_tags("branch", "bool", "scalar")),
    Case("leaky_relu_sum", leaky_relu_sum,
         lambda: (_vec(26, 10), 0.1),
         tags=_tags("branch", "loop", "array")),

    # while loops
    Case("newton_sqrt", newton_sqrt,
         lambda: (_scalar(30, 2.0, 10.0),),
         tags=_tags("while", "loop", "branch")),
    Case("newton_cube_root", newton_cube_root,
         lambda: (_scalar(31, 2.0, 8.0), 1e-10), fixed=(1,),
         tags=_tags("while", "loop")),
    Case("halving_until_tol", halving_until_tol,
         lambda: (_scalar(32, 1.0, 5.0), 1e-3), fixed=(1,),
         tags=_tags("while", "loop", "tuple", "int")),
    Case("collatz_steps", collatz_steps,
         lambda: (27,),
         tags=_tags("while", "loop", "branch", "int", "nondiff")),
    Case("while_true_break", while_true_break,
         lambda: (_scalar(33, 1.0, 3.0),),
         tags=_tags("while", "loop", "break", "branch")),

    # for-range loops
    Case("sum_sin_loop", sum_sin_loop,
         lambda: (_scalar(40), 12),
         tags=_tags("loop", "math", "int")),
    Case("range_start_stop", range_start_stop,
         lambda: (_vec(41, 10), 2, 7),
         tags=_tags("loop", "array", "int")),
    Case("range_positive_step", range_positive_step,
         lambda: (_vec(42, 11),),
         tags=_tags("loop", "array")),
    Case("range_negative_step", range_negative_step,
         lambda: (_vec(43, 9), _scalar(44)),
         tags=_tags("loop", "array")),
    Case("range_runtime_step", range_runtime_step,
         lambda: (_vec(45, 12), 11, 0, -3),
         tags=_tags("loop", "array", "int")),
    Case("iterate_array_and_enumerate", iterate_array_and_enumerate,
         lambda: (_vec(46, 6), _vec(47, 6)),
         tags=_tags("loop", "array", "iter", "tuple")),

    # nested loops / break / continue / early return
    Case("nested_break_continue", nested_break_continue,
         lambda: (_mat(50, 5, 6), 1.5),
         tags=_tags("loop", "break", "branch", "array", "array2d")),
    Case("early_return_in_loop", early_return_in_loop,
         lambda: (_vec(51, 10), 0.8),
         tags=_tags("loop", "early_return", "branch", "array")),
    Case("find_first_index", find_first_index,
         lambda: (_vec(52, 10), 0.5),
         tags=_tags("loop", "early_return", "branch", "array", "int", "nondiff")),
    Case("triangular_nested", triangular_nested,
         lambda: (_mat(53, 5, 5),),
         tags=_tags("loop", "array", "array2d")),

    # arrays
    Case("array_map_1d", array_map_1d,
         lambda: (_vec(60, 8),),
         tags=_tags("array", "loop", "alloc")),
    Case("array_write_2d", array_write_2d,
         lambda: (_mat(62, 4, 5),),
         tags=_tags("array", "array2d", "loop", "alloc")),
    Case("slice_views_1d", slice_views_1d,
         lambda: (_vec(63, 9),),
         tags=_tags("array", "slice", "numpy")),
    Case("slice_views_2d", slice_views_2d,
         lambda: (_mat(64, 4, 5),),
         tags=_tags("array", "array2d", "slice", "numpy")),
    Case("inplace_updates", inplace_updates,
         lambda: (_vec(65, 6), _vec(66, 6)),
         tags=_tags("array", "mutation", "slice", "numpy")),
    Case("slice_assign_no_return", slice_assign_no_return,
         lambda: (_vec(67, 8), _mat(68, 4, 3)),
         tags=_tags("array", "array2d", "mutation", "slice")),
    Case("alloc_variants", alloc_variants,
         lambda: (_vec(69, 7),),
         tags=_tags("array", "alloc", "loop", "numpy")),
    Case("float32_alloc", float32_alloc,
         lambda: (_vec(70, 8, dtype=np.float32),),
         tags=_tags("array", "alloc", "float32", "loop")),
    Case("float32_scalars", float32_scalars,
         lambda: (np.float32(_scalar(71)), np.float32(_scalar(72))),
         tags=_tags("scalar", "float32")),
    Case("float32_matrix_ops", float32_matrix_ops,
         lambda: (_mat(73, 4, 3, dtype=np.float32), _vec(74, 3, dtype=np.float32)),
         tags=_tags("array", "array2d", "float32", "loop", "alloc")),
    Case("int64_gather", int64_gather,
         lambda: (_int64_idx(), _vec(75, 10)),
         tags=_tags("array", "int", "loop")),
    Case("int_histogram", int_histogram,
         lambda: (_int64_idx(), 4),
         tags=_tags("array", "int", "loop", "alloc", "nondiff")),

    # mutate and return
    Case("normalize_inplace", normalize_inplace,
         lambda: (_vec(80, 7),),
         tags=_tags("array", "mutation", "loop", "math")),
    Case("scale_rows_inplace", scale_rows_inplace,
         lambda: (_mat(81, 4, 4), _vec(82, 4)),
         tags=_tags("array", "array2d", "mutation", "slice", "tuple", "loop")),

    # tuples
    Case("tuple_arg", tuple_arg,
         lambda: ((_scalar(90), _scalar(91)), _scalar(92)),
         tags=_tags("tuple", "scalar")),
    Case("tuple_min_max", tuple_min_max,
         lambda: (_vec(93, 9),),
         tags=_tags("tuple", "loop", "branch", "array", "int")),
    Case("tuple_swap_fib", tuple_swap_fib,
         lambda: (_scalar(94), _scalar(95), 6),
         tags=_tags("tuple", "loop", "int")),
    Case("tuple_heterogeneous", tuple_heterogeneous,
         lambda: ((_scalar(96), 4, True), _vec(97, 6)),
         tags=_tags("tuple", "loop", "branch", "bool", "int", "array")),
    Case("tuple_state_loop", tuple_state_loop,
         lambda: (_vec(98, 5), 7),
         tags=_tags("tuple", "loop", "array", "math", "int")),
    Case("tuple_with_array_arg", tuple_with_array_arg,
         lambda: ((_scalar(99), _vec(99, 4)), _scalar(98)),
         tags=_tags("tuple", "array", "numpy")),

    Case("streaming_mixture", streaming_mixture,
         lambda: (_vec(160, 6) * 0.3, np.abs(_vec(161, 12)).reshape(4, 3), 2), fixed=(1,),
         tags=_tags("loop", "branch", "math", "array", "int")),

    # calls
    Case("helper_called_twice", helper_called_twice,
         lambda: (_scalar(100), _scalar(101)),
         tags=_tags("call", "scalar")),
    Case("call_chain_three_levels", call_chain_three_levels,
         lambda: (_scalar(102), _scalar(103)),
         tags=_tags("call", "scalar", "math")),
    Case("helper_returns_tuple", helper_returns_tuple,
         lambda: (_scalar(104, 0.2, 1.0), _scalar(105)),
         tags=_tags("call", "tuple", "math")),
    Case("helper_mutates_array", helper_mutates_array,
         lambda: (_vec(106, 6), _scalar(107, 0.5, 1.5)),
         tags=_tags("call", "mutation", "array", "loop")),
    Case("helper_with_arrays", helper_with_arrays,
         lambda: (_mat(108, 4, 3), _vec(109, 3)),
         tags=_tags("call", "array", "array2d", "slice", "loop", "alloc")),

    # numpy
    Case("numpy_ufuncs", numpy_ufuncs,
         lambda: (_vec(110, 10),),
         tags=_tags("numpy", "array")),
    Case("numpy_broadcast", numpy_broadcast,
         lambda: (_mat(111, 3, 4), _vec(112, 4), _scalar(113)),
         tags=_tags("numpy", "array", "array2d")),
    Case("numpy_reductions", numpy_reductions,
         lambda: (_vec(114, 8, 0.5, 1.5), _mat(115, 3, 3)),
         tags=_tags("numpy", "array", "array2d", "slice")),
    Case("numpy_dot_vec", numpy_dot_vec,
         lambda: (_vec(116, 8), _vec(117, 8)),
         tags=_tags("numpy", "array", "blas")),
    Case("matvec_matmul", matvec_matmul,
         lambda: (_mat(118, 4, 4), _mat(119, 4, 4), _vec(120, 4)),
         tags=_tags("numpy", "array", "array2d", "blas")),
    Case("quadratic_form", quadratic_form,
         lambda: (_vec(121, 5), _mat(122, 5, 5)),
         tags=_tags("numpy", "array", "array2d", "blas", "classic")),
    Case("numpy_where_clip", numpy_where_clip,
         lambda: (_vec(123, 10), -0.05, 0.6),
         tags=_tags("numpy", "array", "branch")),

    # raise / assert
    Case("raise_negative_n", raise_negative_n,
         lambda: (_scalar(130), 4),
         make_bad_args=lambda: (_scalar(130), -1),
         tags=_tags("raise", "branch", "loop", "int")),
    Case("assert_positive", assert_positive,
         lambda: (_scalar(131, 0.5, 2.0), _scalar(132)),
         make_bad_args=lambda: (-1.0, _scalar(132)),
         tags=_tags("raise", "scalar", "math")),
    Case("raise_in_loop", raise_in_loop,
         lambda: (_vec(133, 8, 0.1, 2.0),),
         make_bad_args=lambda: (np.array([1.0, 2.0, -3.0, 4.0]),),
         tags=_tags("raise", "loop", "branch", "array", "math")),
    Case("assert_shapes_match", assert_shapes_match,
         lambda: (_vec(134, 5), _vec(135, 5)),
         make_bad_args=lambda: (_vec(134, 5), _vec(135, 4)),
         tags=_tags("raise", "array", "numpy")),

    # classic numerical kernels
    Case("rosenbrock_loop", rosenbrock_loop,
         lambda: (_vec(140, 6),),
         tags=_tags("classic", "loop", "array")),
    Case("logsumexp_numpy", logsumexp_numpy,
         lambda: (_vec(141, 10, -3.0, 3.0),),
         tags=_tags("classic", "numpy", "array")),
    Case("logsumexp_loop", logsumexp_loop,
         lambda: (_vec(142, 10, -3.0, 3.0),),
         tags=_tags("classic", "loop", "branch", "array", "math")),
    Case("euler_ode_inplace", euler_ode_inplace,
         lambda: (np.array([1.0, 0.0]), 4.0, 0.3, 0.01, 20),
         tags=_tags("classic", "loop", "array", "mutation")),
    Case("mlp_forward", mlp_forward,
         lambda: (_mat(143, 6, 4), _vec(144, 6), _mat(145, 2, 6), _vec(146, 4)),
         tags=_tags("classic", "numpy", "array", "array2d", "blas")),
    Case("horner", horner,
         lambda: (_vec(147, 6), _scalar(148)),
         tags=_tags("classic", "loop", "array", "iter")),
    Case("softplus_sigmoid", softplus_sigmoid,
         lambda: (_scalar(149, -3.0, 3.0),),
         tags=_tags("classic", "scalar", "math")),
    Case("diffusion_stencil", diffusion_stencil,
         lambda: (_vec(150, 12), 0.2, 5),
         tags=_tags("classic", "loop", "array", "slice", "alloc")),
    Case("stencil_loop_2d", stencil_loop_2d,
         lambda: (_mat(151, 6, 6), 0.1),
         tags=_tags("classic", "loop", "array", "array2d", "alloc")),
    Case("cumsum_new_array", cumsum_new_array,
         lambda: (_vec(152, 10),),
         tags=_tags("classic", "loop", "array", "alloc")),
    Case("gradient_descent_quadratic", gradient_descent_quadratic,
         lambda: (_spd(153, 4), _vec(154, 4), _vec(155, 4), 0.05, 10),
         tags=_tags("classic", "loop", "array", "array2d", "blas", "alloc")),
    Case("trapezoid_integral", trapezoid_integral,
         lambda: (_scalar(156, -1.0, 0.0), _scalar(157, 0.5, 2.0), 16),
         tags=_tags("classic", "loop", "math", "int")),
    Case("bisection_root", bisection_root,
         # Not differentiated at all: bisection's output depends on c only through comparisons,
         # so AD (any AD) differentiates the algorithm, not the root: 0 for c, a weighted mean
         # of the bracket for lo and hi, where the root moves with c and not with the bracket
         # (docs/limitations.md). The kernel stays in the corpus for capture and lowering.
         lambda: (_scalar(158, 1.0, 5.0), 0.0, 3.0, 1e-8), fixed=(0, 1, 2, 3),
         tags=_tags("classic", "while", "loop", "branch")),
]
