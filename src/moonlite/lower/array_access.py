"""Views and slice writes of arrays in derived code, lowered as calls of functions compiled once.

numba lowers `a[i:j]`, `a[k]` of a 2-D array and `a[i:j] = v` inline at every site: a view is
about 170 LLVM instructions, a slice write about 380 (an indexing loop, a shape check and the
code formatting its error message). Derived code repeats them: its tapes, the entries of lists
of arrays and the adjoints of slices are all views and slice writes, and in the `grad` of a
kernel that joins lists of arrays (tests/capture/test_array_list_methods.py, `joined`) 157 such
sites were 42% of the LLVM code and a third of the time numba took to lower it. While moonlite
lowers derived code, each is a call of `a[i]` or `a[i] = v` compiled once per argument types and
compiler flags, the code numba would have written at the site. Reading or writing one element
(as many integer indices as dimensions) stays inline: that is a load or a store. numba's own
lowering runs for every other compile in the process.

The functions are not marked for inlining: numba's `forceinline` is inherited by every compile
nested in theirs, which would inline the formatting of a slice write's error message at each
site. Optimised (numba's default -O3), LLVM inlines them by its own measure: the gradient of a
loop over a matrix's rows ran at 4.0-4.6x its primal (numba's inline code: 3.7-4.4x), of a
stencil of slice writes at 8.8-9.7x (8.9-9.2x), three runs each on this 2-core machine.
"""

from __future__ import annotations

from .. import _numba as nb
from .array_exprs import compiled_once, lowering_flags

_functions: dict = {}  # (what, signature, flags) -> numba's CompileResult


def _view(a, index):
    return a[index]


def _write(a, index, value):
    a[index] = value


def _one_element(array, index) -> bool:
    """Whether `array[index]` names one element: an integer per dimension."""
    indices = index.types if isinstance(index, nb.types.BaseTuple) else (index,)
    return len(indices) == array.ndim and all(isinstance(i, nb.types.Integer) for i in indices)


def outlined(array, index) -> bool:
    """Whether indexing `array` (numba type) with `index` is lowered as a call."""
    return isinstance(array, nb.types.Array) and not _one_element(array, index)


class DerivedLower(nb.lowering.Lower):
    """numba's lowering, with views and slice writes of arrays lowered as calls."""

    def lower_getitem(self, resty, expr, value, index, signature):
        array, index_type = signature.args
        if not outlined(array, index_type):
            return super().lower_getitem(resty, expr, value, index, signature)
        sig = signature.return_type(*map(nb.types.unliteral, signature.args))
        result = self._call(_view, sig, (value, index))
        return self.context.cast(self.builder, result, sig.return_type, resty)

    def lower_setitem(self, target_var, index_var, value_var, signature):
        array, index_type = signature.args[:2]
        target_type = self.typeof(target_var.name)
        if not outlined(array, index_type) or isinstance(target_type, nb.types.Optional):
            return super().lower_setitem(target_var, index_var, value_var, signature)
        sig = nb.types.none(*map(nb.types.unliteral, signature.args))
        self._call(_write, sig, (target_var, index_var, value_var))

    def _call(self, impl, sig, variables):
        """Call `impl` compiled for `sig` (literal types made plain: one function for `a[0]`
        and `a[k]`) on `variables`, cast to its argument types as numba's lowering casts."""
        ctx, builder = self.context, self.builder
        args = [ctx.cast(builder, self.loadvar(var.name), self.typeof(var.name), ty)
                for var, ty in zip(variables, sig.args)]
        # once per process for these types and the function's flags (`boundscheck`, the
        # error model), linked into the function being lowered
        cres = compiled_once(_functions, (impl.__name__, sig), ctx, builder, lambda: impl, sig,
                             lowering_flags())
        return ctx.call_internal(builder, cres.fndesc, sig, args)
