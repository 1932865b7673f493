"""Differential fuzzing of moonlite (issue #8): random numba kernels, differentiated in forward
mode, reverse mode and forward-over-reverse, checked against finite differences and against each
other. `generator.py` writes the kernels, `check.py` checks one, `run.py` runs long campaigns
(`python -m tests.fuzz.run --help`). See docs/fuzzing.md."""
