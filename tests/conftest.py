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


# The longest test files first: with one file per worker at a time (`--dist loadfile`), a long
# file started last kept one core busy while the other idled (the suite's 2 cores were 89% used:
# 47.7 min of CPU over 26.8 min on 2026-11-24). Test seconds per file on this 2-core machine
# (2026-12-06, the whole suite: 48.6 min of CPU over 26.3 min); `--no-loadscope-reorder`
# (pyproject.toml) makes xdist keep this order instead of ordering files by their number of
# tests. Files not listed follow in collection order.
#
# First of all, the files whose tests run subprocesses with time limits (the benchmark suite at
# -O3, notebooks, the leak checks, the demo, the cache, ...): numba never frees compiled code, so each worker holds
# about 12 GB by the end of the suite, and on this 24 GB machine those subprocesses, run last,
# were starved of memory and timed out (2026-12-07: the benchmark suite took 902 s, a notebook
# cell and the leak check hit their 300 s limits). Run first, they take a minute or two.
LONGEST_FILES = (
    "tests/test_benchmarks.py",
    "tests/test_notebooks.py",
    "tests/test_memory_threads.py",
    "tests/test_demo.py",
    "tests/test_cache.py",
    "tests/fuzz/test_fuzz_regressions.py",  # 65 s
    "tests/ad/test_guards.py",
    "tests/test_api_njit.py",
    "tests/test_debug.py",
    "tests/ir/test_types_and_builder.py",
    "tests/lower/test_dispatcher.py",
    "tests/ad/test_reverse_rules.py",  # 240 s
    "tests/capture/test_lists.py",  # 204 s
    "tests/capture/test_array_list_methods.py",  # 199 s
    "tests/capture/test_array_lists.py",  # 157 s
    "tests/ad/test_forward_numpy.py",  # 153 s
    "tests/capture/test_record_copies.py",  # 152 s
    "tests/capture/test_constructs.py",  # 144 s
    "tests/capture/test_record_fields.py",  # 138 s
    "tests/rules/test_linalg.py",  # 110 s
    "tests/capture/test_record_moves.py",  # 90 s (one process, 2026-12-06: a new file)
    "tests/rules/test_systematic_structural.py",  # 83 s
    "tests/capture/test_list_copies.py",  # 77 s
    "tests/capture/test_list_helpers.py",  # 69 s
    "tests/capture/test_list_orders.py",  # 69 s
    "tests/fuzz/test_fuzz_wide.py",  # 66 s
    "tests/ad/test_reverse_inplace_restore.py",  # 62 s
    "tests/test_fail_closed.py",  # 58 s
    "tests/rules/test_flips_and_cumprod.py",  # 46 s
    "tests/ad/test_reverse_corpus.py",  # 44 s
)


def pytest_collection_modifyitems(items):
    rank = {path: i for i, path in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
