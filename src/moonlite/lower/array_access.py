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


def _compiled(context, builder, impl, sig):
    """`impl` compiled for `sig` with the flags of the function being lowered, once per
    process, and linked into that function's library."""
    flags = nb._ConfigStack().top_or_none()
    flags = nb.Flags() if flags is None else flags.copy()
    key = (impl.__name__, sig, flags.copy())
    cres = _functions.get(key)
    if cres is None:
        cres = context.compile_subroutine(builder, impl, sig, flags=flags, caching=False)
        _functions[key] = cres
    else:  # what compile_subroutine does for what it has compiled: link it in
        context.active_code_library.add_linking_library(cres.library)
    return cres


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
        array, index_type, value_type = signature.args
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
        cres = _compiled(ctx, builder, impl, sig)
        return ctx.call_internal(builder, cres.fndesc, sig, args)
