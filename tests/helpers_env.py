"""Where the suite's numba cache lives (tests/conftest.py), importable before numba is."""

import os

# -O0 machine code of numba's `cache=True` functions, kept apart from the checkout's
# __pycache__, which -O3 processes read (numba's cache key has no optimisation level)
O0_NUMBA_CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              ".pytest_cache", "numba-O0")
