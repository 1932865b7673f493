"""The README's main command (`python -m moonlite.demo`) runs and its derivatives agree with
finite differences (the demo exits non-zero otherwise)."""

import subprocess
import sys

from .helpers import optimised_env


def test_demo_runs_and_agrees_with_finite_differences():
    done = subprocess.run([sys.executable, "-m", "moonlite.demo"], capture_output=True,
                          text=True, timeout=600, env=optimised_env())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "func sum_sin_loop(" in done.stdout
    assert "rosenbrock: gradient by reverse mode" in done.stdout
    assert "| kernel | derivative / primal time |" in done.stdout
