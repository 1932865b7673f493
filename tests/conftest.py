import os
import sys

# The corpus lives in tests/corpus; make `tests` importable regardless of how pytest is invoked.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.helpers_env import O0_NUMBA_CACHE  # noqa: E402  (numba is not imported by it)

# The tests check what derived code computes, not how fast it runs: LLVM at -O0 compiles the
# suite's derivatives 40-65% faster (tests/test_fail_closed.py 122 -> 69 s, a group of unary
# rules with second order 21 -> 8 s), which keeps CI within its budget on 2 cores. numba reads
# NUMBA_OPT before every compile, so it is set before numba is imported. What the tests run in
# a new process through `tests.helpers.optimised_env()` (the demo, the benchmark suite, the
# caching of njit callers) compiles at numba's default -O3; `NUMBA_OPT=3 pytest` runs it all so.
if "NUMBA_OPT" not in os.environ:
    os.environ["NUMBA_OPT"] = "0"
    # numba's disk cache does not key on the optimisation level: the -O0 code of moonlite's
    # `cache=True` helpers written into the checkout's __pycache__ by the suite was loaded by
    # every later -O3 process there (the benchmarks measured reverse mode at 1.6-1.9x its time).
    # The suite's numba cache lives apart; `optimised_env()` leaves it out.
    os.environ.setdefault("NUMBA_CACHE_DIR", O0_NUMBA_CACHE)

