"""Modest files: no module of moonlite over 800 lines (split it by concern instead); the test
files conftest.py names for xdist's scheduling exist."""

import pathlib

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "moonlite"
LIMIT = 800


def test_no_module_is_over_800_lines():
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    assert len(sizes) > 50
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}


def test_the_longest_files_named_for_scheduling_exist():
    from tests.conftest import LONGEST_FILES  # the order xdist hands files out (conftest.py)
    root = pathlib.Path(__file__).parent.parent
    assert [p for p in LONGEST_FILES if not (root / p).is_file()] == []
