"""`vjp` inside njit code of a kernel returning a `@jitclass` or structref instance (or a tuple
holding one): the pullback takes an instance of the class as the cotangent.

`vjp` there runs the vjp of the kernel's output-flat form (`api_instance_outputs.py`), whose
pullback (`api_vjp.PullbackType`) takes the tuple of the output's fields. It returns the output
made an instance again and an `InstancePullbackType` holding that pullback: calling it with an
instance reads the cotangent's fields into that tuple (float fields and float arrays; None for
the rest, as `api_instance_outputs._cotangent_field` does from Python) and calls the pullback
once. It stays in njit code: it has no Python object.
"""

from __future__ import annotations

from . import _numba as nb
from .api_instance_outputs import _entries
from .api_instances import instance_name
from .api_vjp import _cotangent_mismatch
from .rules.jitclasses import fields_of, is_numba_instance_type

types, structref = nb.types, nb.structref


class InstancePullbackType(types.StructRef):
    """A pullback taking instances: field `flat`, the pullback of the output-flat form;
    `returned`, the type of what the kernel returns."""

    def __init__(self, fields, returned):
        self.returned = returned
        super().__init__(fields)
        self.name = f"InstancePullback({returned}, {self._fields})"

    @property
    def flat(self):
        return self.field_dict["flat"]


structref.register(InstancePullbackType)


def instance_pullback_maker(flat_type, returned):
    """The njit function `wrap(pb)` making the pullback taking instances of `returned` from
    `pb`, the pullback of the output-flat form (of numba type `flat_type`)."""
    typ = InstancePullbackType([("flat", flat_type)], returned)
    scope = {"new": structref.new, "typ": typ}
    source = "def wrap(pb):\n    w = new(typ)\n    w.flat = pb\n    return w\n"
    exec(compile(source, f"<moonlite: the pullback of {returned}>", "exec"), scope)
    return nb.njit(scope["wrap"])


@nb.infer_getattr
class _InstancePullbackCall(nb.AttributeTemplate):
    key = InstancePullbackType

    @nb.bound_function("__call__")
    def resolve___call__(self, pb, args, kws):
        if kws or len(args) != 1:
            raise nb.numba_errors.TypingError("a vjp pullback takes one cotangent")
        wrong = _instance_cotangent_mismatch(pb.returned, args[0])
        if wrong is not None:
            raise nb.numba_errors.TypingError(f"moonlite: the cotangent of a vjp pullback"
                                              f"{wrong}")
        return pb.flat.grads(*args)


def _instance_cotangent_mismatch(returned, dout):
    if is_numba_instance_type(returned):
        return None if dout == returned else (f" must be an instance of "
                                              f"{instance_name(returned)} like the output, "
                                              f"got {dout}")
    if not isinstance(dout, types.BaseTuple) or len(dout) != len(returned):
        return f" must be a tuple of {len(returned)} entries like the output, got {dout}"
    for k, (t, d) in enumerate(zip(returned, dout)):
        wrong = _instance_cotangent_mismatch(t, d) if is_numba_instance_type(t) \
            else _cotangent_mismatch(t, d, "")
        if wrong is not None:
            return f", entry {k},{wrong}"
    return None


@nb.lower_builtin(InstancePullbackType, InstancePullbackType, types.Any)
def _lower_instance_pullback_call(context, builder, sig, args):
    pb, _ = sig.args
    source = f"def call(pb, dout):\n    return pb.flat({_flat_cotangent_source(pb.returned)})\n"
    scope: dict = {}
    exec(compile(source, "<moonlite vjp pullback taking instances>", "exec"), scope)
    return context.compile_internal(builder, scope["call"], sig, args)


def _flat_cotangent_source(returned) -> str:
    """The tuple of the output-flat form's cotangents, read from `dout`."""
    if is_numba_instance_type(returned):
        fields = [_field_source(f"dout.{name}", t) for name, t in fields_of(returned).items()]
    else:
        fields = []
        for k, (t, _) in enumerate(_entries(returned)):
            fields += [_field_source(f"dout[{k}].{name}", ft)
                       for name, ft in fields_of(t).items()] if t is not None else [f"dout[{k}]"]
    return f"({''.join(f'{f}, ' for f in fields)})"


def _field_source(expr: str, t) -> str:
    """A field's cotangent: the field for floats and float arrays (tuples entry by entry),
    None for the rest (ints, bools, strings, int arrays)."""
    if isinstance(t, types.BaseTuple):
        entries = (_field_source(f"{expr}[{i}]", e) for i, e in enumerate(t))
        return f"({''.join(f'{e}, ' for e in entries)})"
    if isinstance(t, types.Float) \
            or isinstance(t, types.Array) and isinstance(t.dtype, types.Float):
        return expr
    return "None"
