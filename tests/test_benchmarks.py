"""The comparison suite runs (`benchmarks/suite.py --quick`), so that it stays true; its numbers
are measurements for docs/benchmarks.md, never assertions."""

import pathlib
import subprocess
import sys

import numpy as np

from .helpers import optimised_env

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_suite_runs_quick_and_moonlite_agrees_with_central_differences(tmp_path):
    out = subprocess.run([sys.executable, "suite.py", "--quick", "--plot",
                          str(tmp_path / "suite.png")], cwd=ROOT / "benchmarks",
                         capture_output=True, text=True, timeout=900,
                         env=optimised_env())
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "## moonlite: derivative time over primal time" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and " ms (" in line]
    assert len(rows) == 7  # one per kernel in the gradient table
    for row in rows:
        njit_cell = row.split(" | ")[2]  # "t ms (ratio; max diff)"
        max_diff = float(njit_cell.rsplit("; ", 1)[1].rstrip(")"))
        assert np.isfinite(max_diff) and max_diff < 1e-3, row
