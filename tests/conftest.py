import os
import sys

# The corpus lives in tests/corpus; make `tests` importable regardless of how pytest is invoked.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The tests check what derived code computes, not how fast it runs: LLVM at -O0 compiles the
# suite's derivatives 40-65% faster (tests/test_fail_closed.py 122 -> 69 s, a group of unary
# rules with second order 21 -> 8 s), which keeps CI within its budget on 2 cores. numba reads
# NUMBA_OPT before every compile, so it is set before numba is imported. What the tests run in
# a new process through `tests.helpers.optimised_env()` (the demo, the benchmark suite, the
# caching of njit callers) compiles at numba's default -O3; `NUMBA_OPT=3 pytest` runs it all so.
os.environ.setdefault("NUMBA_OPT", "0")
