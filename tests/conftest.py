import os
import sys

# The corpus lives in tests/corpus; make `tests` importable regardless of how pytest is invoked.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
