"""Run numba's front end up to type inference and keep the typed IR.

The capture pipeline is numba's own untyped pipeline followed by `NopythonTypeInference` and a
pass that records the state and stops. It stops before `NopythonRewrites`, which would fuse array
expressions into opaque `arrayexpr` nodes, and before `PreLowerStripPhis`, so the IR still has
numba's SSA phis.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _numba as nb


@dataclass
class TypedIR:
    """What capture takes from numba: the IR and the types numba inferred for it."""

    func_ir: object
    typemap: dict
    calltypes: dict
    return_type: object
    argtypes: tuple


class _StopWithTypedIR(Exception):
    def __init__(self, state):
        super().__init__("typed IR recorded")
        self.state = state


@nb.register_pass(mutates_CFG=False, analysis_only=True)
class RecordTypedIR(nb.FunctionPass):
    _name = "moonlite_record_typed_ir"

    def __init__(self):
        nb.FunctionPass.__init__(self)

    def run_pass(self, state):
        raise _StopWithTypedIR(state)


class CapturePipeline(nb.CompilerBase):
    """numba's untyped passes + type inference, then record and stop."""

    def define_pipelines(self):
        untyped = nb.DefaultPassBuilder.define_untyped_pipeline(self.state)
        pm = nb.PassManager("moonlite_capture")
        for pass_cls, description in untyped.passes:
            pm.add_pass(pass_cls, description)
        pm.add_pass(nb.typed_passes.NopythonTypeInference, "nopython frontend")
        pm.add_pass(RecordTypedIR, "record typed IR")
        pm.finalize()
        return [pm]


def run_capture_pipeline(dispatcher, argtypes: tuple) -> TypedIR:
    """Type `dispatcher.py_func` for numba argument types `argtypes` (defaults already folded)."""
    compiler = dispatcher._compiler
    flags = nb.Flags()
    with nb.outside_enclosing_compile():  # the flags a call of the kernel from Python gets
        compiler.targetdescr.options.parse_as_flags(flags, compiler.targetoptions)
        flags = compiler._customize_flags(flags)
    try:
        nb.compiler.compile_extra(
            compiler.targetdescr.typing_context, compiler.targetdescr.target_context,
            dispatcher.py_func, args=argtypes, return_type=None, flags=flags,
            locals=compiler.locals, pipeline_class=CapturePipeline)
    except _StopWithTypedIR as stop:
        state = stop.state
        return TypedIR(state.func_ir, dict(state.typemap), dict(state.calltypes),
                       state.return_type, tuple(argtypes))
    raise RuntimeError("moonlite's capture pipeline finished without recording the typed IR")
