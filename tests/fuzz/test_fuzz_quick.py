"""The quick fuzzing profile: a fixed range of generated kernels, each through jvp and grad (and,
by seed, a random argnums subset, vjp, hvp or the dense Hessian: see run.modes_for), checked
against finite differences and against each other. Deterministic: fixed seeds. Long campaigns:
`python -m tests.fuzz.run --count 10000` (docs/fuzzing.md).

Budget: compilation dominates (about 2-4 s per kernel for jvp + grad, 10-40 s for a Hessian), so
the profile runs the 24 kernels of QUICK_SEEDS in about 2 minutes on a 2-core machine.
"""

import pytest

from .check import check_case
from .generator import generate_kernel
from .run import modes_for
from .test_fuzz_regressions import KNOWN_FAILURES

# seeds 0-22, and 30 for the one construct (a.copy() temporaries) those miss
QUICK_SEEDS = list(range(23)) + [30]


def _params():
    for seed in QUICK_SEEDS:
        marks = ()
        if seed in KNOWN_FAILURES:
            marks = (pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[seed]),)
        yield pytest.param(seed, marks=marks, id=f"seed{seed}")


@pytest.mark.parametrize("seed", list(_params()))
def test_generated_kernel(seed):
    case = generate_kernel(seed)
    result = check_case(case, **modes_for(seed))
    assert result.status != "fail", (
        f"seed {seed}: {result.stage} {result.kind}\n{result.message}\n"
        f"kernel ({case.path}):\n{case.source}")


def test_profile_exercises_every_construct():
    """The quick seeds together use every construct the generator knows (so the profile keeps
    its coverage when the generator changes)."""
    from .generator import generate_source
    seen = set()
    for seed in QUICK_SEEDS:
        seen |= generate_source(seed)[4]
    wanted = {"if", "else", "for", "nested_for", "while_data", "while_fixed", "array_write",
              "recurrence", "shifted_index", "tuple", "temp_zeros", "temp_empty", "temp_copy",
              "temp_expr", "helper_scalar", "helper_tuple_ret", "helper_tuple_arg",
              "helper_array_read", "helper_array_write", "helper_mixed_tuple", "div", "pow",
              "reduction", "sin", "cos", "tanh", "exp_clamp", "exp_gauss", "exp_tanh", "log",
              "sqrt", "sqrt2"}
    assert wanted <= seen, sorted(wanted - seen)


def test_generator_is_deterministic():
    from .generator import generate_source
    for seed in (0, 7, 123, 9999):
        assert generate_source(seed) == generate_source(seed)
    assert generate_source(1)[0] != generate_source(2)[0]


# sha256 of the sources of seeds 0-199 as the generator of the 10,000-kernel campaign wrote them
DEFAULT_PROFILE_DIGEST = "3ba29cc37971f0b3d02c5f280984e51f0e9d1109fc1c6e9505728a570240d1a2"


def test_default_profile_is_unchanged():
    """The default profile writes the kernels it always wrote (regression tests name seeds, and
    the campaign record is of these kernels); new constructs go into another profile."""
    import hashlib
    from .generator import generate_source
    digest = hashlib.sha256()
    for seed in range(200):
        digest.update(generate_source(seed)[0].encode())
    assert digest.hexdigest() == DEFAULT_PROFILE_DIGEST
