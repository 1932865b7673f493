"""numba's array expressions, lowered with their scalar kernels compiled once per shape.

numba fuses elementwise array operations (`a + b * c` on arrays) into one `arrayexpr` and lowers
each by compiling a scalar kernel `f(a, b, c) = a + b * c` through its whole pipeline, at every
site, without caching (`compile_subroutine(caching=False)`: the kernel is a function made anew from
the expression). Derived code repeats the primal's expressions in each of its functions (jvp, the
vjp sweep and pullback, grad, hvp) and adds adjoint updates of the same few shapes: in the suite,
250 sites took 17.5 ms each, a tenth of the compile time of corpus kernels. While moonlite lowers
derived code (`derived_lowering()`), a kernel is compiled once per expression shape (operators,
constants, which operand goes where), argument types and compiler flags, and linked into every
function that uses it: what numba would compile for that site, compiled before. numba's own
lowering runs for every other compile in the process.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace

from .. import _numba as nb
from .thread_flag import ThreadFlag

_numba_lowering = nb.array_exprs._lower_array_expr
_derived = ThreadFlag()
_kernels: dict = {}  # (shape, inner signature, flags) -> numba's CompileResult


def derived_lowering():
    """While open (in this thread), array expressions are lowered with cached kernels."""
    return _derived.raised()


def install() -> None:
    """Make the CPU target lower array expressions through `_lower`: numba's rewrite installs
    its own lowering only where none is there yet."""
    nb.target_context().special_ops["arrayexpr"] = _lower


def lowering_flags():
    """A copy of the flags of the function being lowered (numba's defaults outside one)."""
    flags = nb._ConfigStack().top_or_none()
    return nb.Flags() if flags is None else flags.copy()


def compiled_once(cache: dict, key: tuple, context, builder, make_impl, sig, flags):
    """numba's CompileResult of the function `make_impl()` for `sig` under `flags`, compiled
    the first time `key` (with the flags) is met in `cache`, and linked into the library being
    lowered each time, as `compile_subroutine` links what it has compiled."""
    key = key + (flags.copy(),)  # (a copy: compiling sets flags of its own on `flags`)
    cres = cache.get(key)
    if cres is None:
        cres = context.compile_subroutine(builder, make_impl(), sig, flags=flags, caching=False)
        cache[key] = cres
    else:
        context.active_code_library.add_linking_library(cres.library)
    return cres


def _lower(lowerer, expr):
    if not _derived:
        return _numba_lowering(lowerer, expr)
    return _lower_cached(lowerer, expr)


def _shape(tree, position: dict):
    """The expression tree with its variables replaced by their parameter positions."""
    if isinstance(tree, tuple):
        op, args = tree
        return (op, tuple(_shape(a, position) for a in args))
    if isinstance(tree, nb.ir.Var):
        return ("arg", position[tree.name])
    if isinstance(tree, nb.ir.Const):
        return ("const", type(tree.value), repr(tree.value))
    raise NotImplementedError(f"array expression term {tree!r}")  # numba's lowering refuses it too


def _lower_cached(lowerer, expr):
    """numba's `_lower_array_expr` with the compiled scalar kernel looked up first."""
    params = sorted(set(expr.list_vars()), key=lambda var: var.name)
    names = [var.name for var in params]
    context, builder = lowerer.context, lowerer.builder
    outer_sig = expr.ty(*(lowerer.typeof(name) for name in names))
    inner_args = []
    for argty in outer_sig.args:
        if isinstance(argty, nb.types.Optional):
            argty = argty.type
        inner_args.append(argty.dtype if isinstance(argty, nb.types.Array) else argty)
    inner_sig = outer_sig.return_type.dtype(*inner_args)
    flags = lowering_flags()
    flags.error_model = "numpy"  # as numba's: vectorised division gives inf and nan
    key = (_shape(expr.expr, {n: i for i, n in enumerate(names)}), inner_sig)
    cres = compiled_once(_kernels, key, context, builder, lambda: _kernel_function(expr, params),
                         inner_sig, flags)

    class ExprKernel(nb.npyimpl._Kernel):
        def generate(self, *args):
            cast = [self.cast(val, inty, outty)
                    for val, inty, outty in zip(args, self.outer_sig.args, inner_sig.args)]
            result = self.context.call_internal(builder, cres.fndesc, inner_sig, cast)
            return self.cast(result, inner_sig.return_type, self.outer_sig.return_type)

    name = f"__numba_array_expr_{len(_kernels)}"
    ufunc = SimpleNamespace(nin=len(names), nout=1, __name__=name, nargs=len(names) + 1)
    args = [lowerer.loadvar(n) for n in names]
    return nb.npyimpl.numpy_ufunc_kernel(context, builder, outer_sig, args, ufunc, ExprKernel)


def _kernel_function(expr, params: list):
    """The scalar Python function numba compiles for `expr`, built as numba builds it."""
    name = f"__moonlite_array_expr_{len(_kernels)}"
    with nb.array_exprs._legalize_parameter_names(params) as legal:
        module = ast.parse(f"def {name}(): return", expr.loc.filename, "exec")
        fn = module.body[0]
        fn.args.args = [ast.arg(p, None) for p in legal]
        fn.body[0].value, namespace = nb.array_exprs._arr_expr_to_ast(expr.expr)
        nb.array_exprs._fix_invalid_lineno_ranges(module)
    exec(compile(module, expr.loc.filename, "exec"), namespace)
    return namespace[name]
