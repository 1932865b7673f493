"""Modest files: no module of moonlite over 800 lines (split it by concern instead)."""

import pathlib

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "moonlite"
LIMIT = 800


def test_no_module_is_over_800_lines():
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    assert len(sizes) > 50
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}

