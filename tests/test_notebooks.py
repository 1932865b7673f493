"""The notebooks in notebooks/ run top to bottom in a fresh kernel without a cell error.

Each notebook is executed with nbclient in a new IPython kernel started with this process's
Python (`sys.executable`), whatever kernelspecs are or are not registered on the machine: the
test writes its own kernelspec into a temporary directory. The notebooks on disk are not
modified. To refresh their stored outputs, see notebooks/README.md.
"""

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import AsyncKernelManager  # noqa: E402

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
KERNEL_NAME = "moonlite-test-python"
CELL_TIMEOUT = 300  # seconds per cell: first calls compile


def _kernel_manager(directory: Path) -> AsyncKernelManager:
    """A kernel manager whose only kernelspec runs ipykernel under sys.executable."""
    spec_dir = directory / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (moonlite tests)",
        "language": "python",
    }))
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)], ensure_native_kernel=False)
    return AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)


def test_the_three_notebooks_are_there():
    names = [p.name for p in NOTEBOOKS]
    for expected in ("01_quickstart.ipynb", "02_hessians_and_optimisation.ipynb",
                     "03_custom_rules.ipynb"):
        assert expected in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_without_errors(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, km=_kernel_manager(tmp_path), timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on any error
    errors = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors
