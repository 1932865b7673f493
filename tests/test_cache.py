"""The on-disk cache of derived functions (`cache.py`, `lower/disk_cache.py`, `fingerprint.py`):
a new process loads what an earlier one compiled, and nothing that changes the code is missed.
Each case runs kernels in fresh Python processes against a cache directory of its own."""

import json
import os
from collections import namedtuple
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import moonlite
from moonlite import fingerprint

KERNEL = '''
import numba
import numpy as np

SCALE = {scale}


@numba.njit
def helper(x):
    return x * x * {power}


@numba.njit
def f(x):
    return SCALE * np.sum(helper(x)){extra}
'''

RUNNER = '''
import json, os, sys, warnings
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moonlite
import kern
if os.environ.get("RULE"):
    moonlite.nondifferentiable(kern.helper)
x = np.array([1.0, 2.0, -0.5])
api = os.environ.get("API", "grad")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    if api in ("jvp", "hvp"):  # along the first axis; g: the dispatcher they call
        result = getattr(moonlite, api)(kern.f, (x,), (np.array([1.0, 0.0, 0.0]),))
        value = result[1] if api == "jvp" else result[0]
        from moonlite.driver import api_entry
        g = api_entry(kern.f, ("jvp",) if api == "jvp" else ("hvp", False))
    elif api == "build_rrule":  # rules built on their own: g, the rule (its own dispatcher)
        g = moonlite.build_rrule(kern.f, x)
        value = g(x, 1.0)[1][0]
    elif api == "build_frule":
        g = moonlite.build_frule(kern.f, x)
        value = g(x, np.array([1.0, 0.0, 0.0]))[1]
    elif api == "vjp":  # the sweep and the pullback: two dispatchers, counted together
        out, pullback = moonlite.vjp(kern.f, x)
        value = pullback(1.0)[0]
        from moonlite.driver import _rules_of
        sweep, pull = next(v for k, v in _rules_of(kern.f).items() if k[0] == "reverse split")
        g = type("Both", (), {"_cache": type("Counts", (), {
            "hits": sweep._cache.hits + pull._cache.hits,
            "saves": sweep._cache.saves + pull._cache.saves})})
    else:
        g = getattr(moonlite, api)(kern.f)
        value = g(x)
print(json.dumps({"value": np.asarray(value).tolist(), "hits": g._cache.hits,
                  "saves": g._cache.saves, "warnings": [str(w.message) for w in caught]}))
'''

X = np.array([1.0, 2.0, -0.5])


@pytest.fixture(autouse=True)
def optimised(monkeypatch):
    """These tests, and the processes they start, compile at numba's default -O3: at -O0 (the
    rest of the suite, tests/conftest.py) numba leaves the address of every njit function a
    derivative calls in its code, and neither cache stores such code (docs/limitations.md)."""
    monkeypatch.delenv("NUMBA_OPT", raising=False)


def _write_kernel(folder, scale=2.0, power=1.0, extra=""):
    (folder / "kern.py").write_text(KERNEL.format(scale=scale, power=power, extra=extra))
    (folder / "run.py").write_text(RUNNER)
    for stale in folder.glob("__pycache__"):  # an edit within the same second: no stale .pyc
        for pyc in stale.iterdir():
            pyc.unlink()


def _start(folder, cache, **env):
    environ = dict(os.environ, MOONLITE_CACHE_DIR=str(cache), **env)
    return subprocess.Popen([sys.executable, str(folder / "run.py")], env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(folder, cache, **env) -> dict:
    proc = _start(folder, cache, **env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _grad(scale=2.0, power=1.0):
    return scale * 2.0 * power * X


def test_a_new_process_loads_the_derivative_and_edits_compile_again(tmp_path):
    cache = tmp_path / "cache"
    _write_kernel(tmp_path)
    first = _run(tmp_path, cache)
    assert (first["hits"], first["saves"]) == (0, 1)
    np.testing.assert_allclose(first["value"], _grad())
    again = _run(tmp_path, cache)
    assert (again["hits"], again["saves"]) == (1, 0)
    np.testing.assert_allclose(again["value"], _grad())
    # each change of what the code depends on misses the cache and gives the new derivative
    for change, expected in [(dict(power=3.0), _grad(power=3.0)),           # a callee edited
                             (dict(scale=5.0), _grad(scale=5.0)),           # a global changed
                             (dict(extra=" + np.sum(x)"), _grad() + 1.0)]:  # the kernel edited
        _write_kernel(tmp_path, **change)
        run = _run(tmp_path, cache)
        assert (run["hits"], run["saves"]) == (0, 1), change
        np.testing.assert_allclose(run["value"], expected)
    _write_kernel(tmp_path)  # back to the first version: its entry is still there
    assert _run(tmp_path, cache)["hits"] == 1


def test_the_optimisation_level_is_part_of_the_key(tmp_path):
    # code compiled at a lower level (a user's NUMBA_OPT=1) is never loaded where -O3 is asked
    # for: it computes the same numbers, slower (at -O0 nothing is stored: see the fixture)
    cache = tmp_path / "cache"
    _write_kernel(tmp_path)
    assert _run(tmp_path, cache, NUMBA_OPT="1")["saves"] == 1
    optimised = _run(tmp_path, cache, NUMBA_OPT="3")
    assert (optimised["hits"], optimised["saves"]) == (0, 1)
    assert _run(tmp_path, cache, NUMBA_OPT="1")["hits"] == 1


def test_a_registered_rule_is_part_of_the_key(tmp_path):
    cache = tmp_path / "cache"
    _write_kernel(tmp_path)
    assert _run(tmp_path, cache)["saves"] == 1
    ruled = _run(tmp_path, cache, RULE="1")  # helper declared non-differentiable
    assert ruled["hits"] == 0
    np.testing.assert_allclose(ruled["value"], np.zeros(3))


@pytest.mark.parametrize("api, expected", [
    ("hessian", 4.0 * np.eye(3)), ("jacfwd", 4.0 * X), ("jacrev", 4.0 * X),
    ("jvp", 4.0 * X[0]), ("hvp", [4.0, 0.0, 0.0]), ("build_rrule", 4.0 * X),
    ("build_frule", 4.0 * X[0]), ("vjp", 4.0 * X)])
def test_every_derivative_is_cached(tmp_path, api, expected):
    cache = tmp_path / "cache"
    _write_kernel(tmp_path)  # f(x) = 2 sum(x^2)
    first, again = _run(tmp_path, cache, API=api), _run(tmp_path, cache, API=api)
    compiled = 2 if api == "vjp" else 1  # vjp: its sweep and its pullback
    assert (first["saves"], again["hits"], again["saves"]) == (compiled, compiled, 0)
    np.testing.assert_allclose(first["value"], expected)
    np.testing.assert_allclose(again["value"], expected)


def test_two_processes_writing_one_entry_leave_a_whole_file(tmp_path):
    cache = tmp_path / "cache"
    _write_kernel(tmp_path)
    procs = [_start(tmp_path, cache) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        np.testing.assert_allclose(json.loads(out.strip().splitlines()[-1])["value"], _grad())
    assert not list(cache.glob("*.tmp*"))
    assert len(list(cache.glob("*.mlc"))) == 1
    after = _run(tmp_path, cache)
    assert after["hits"] == 1 and after["warnings"] == []


def test_a_corrupted_entry_is_reported_and_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    _write_kernel(tmp_path)
    _run(tmp_path, cache)
    (entry,) = cache.glob("*.mlc")
    entry.write_bytes(entry.read_bytes()[:100])  # truncated
    run = _run(tmp_path, cache)
    assert run["hits"] == 0 and run["saves"] == 1
    assert any("could not read the cached derivative" in w for w in run["warnings"])
    np.testing.assert_allclose(run["value"], _grad())
    assert _run(tmp_path, cache)["hits"] == 1  # rewritten whole


def test_a_directory_that_cannot_be_written_works_without_the_cache(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    _write_kernel(tmp_path)
    run = _run(tmp_path, blocker / "cache")  # cannot be made, even by root
    np.testing.assert_allclose(run["value"], _grad())
    assert run["saves"] == 0
    assert sum("cannot write the derivative cache" in w for w in run["warnings"]) == 1


# --- the key, in this process ------------------------------------------------------------------

OFFSET = np.array([1.0, 2.0])


@numba.njit
def with_array_global(x):
    return np.sum(x * OFFSET)


def test_the_key_covers_array_contents_and_versions(monkeypatch):
    key = fingerprint.derivation_key(with_array_global, ("grad", 0, False))
    assert key is not None
    OFFSET[0] = 3.0
    try:
        assert fingerprint.derivation_key(with_array_global, ("grad", 0, False)) != key
    finally:
        OFFSET[0] = 1.0
    assert fingerprint.derivation_key(with_array_global, ("grad", 0, False)) == key
    assert fingerprint.derivation_key(with_array_global, ("grad", 0, True)) != key
    monkeypatch.setattr(fingerprint, "versions_key", lambda: ("another moonlite",))
    assert fingerprint.derivation_key(with_array_global, ("grad", 0, False)) != key


Pair = namedtuple("Pair", ["a", "b"])


@numba.njit
def builds_a_namedtuple(x):
    p = Pair(x[0], x[1])
    return p.a * p.b


def test_a_namedtuple_class_is_keyed_by_its_fields_and_defaults(monkeypatch):
    key = fingerprint.derivation_key(builds_a_namedtuple, ("grad", 0, False))
    assert key is not None  # (it was uncachable: a class of the user's module)
    glob = builds_a_namedtuple.py_func.__globals__
    monkeypatch.setitem(glob, "Pair", namedtuple("Pair", ["a", "c"]))
    assert fingerprint.derivation_key(builds_a_namedtuple, ("grad", 0, False)) != key
    monkeypatch.setitem(glob, "Pair", namedtuple("Pair", ["a", "b"], defaults=[1.0]))
    assert fingerprint.derivation_key(builds_a_namedtuple, ("grad", 0, False)) != key


class Settings:
    scale = 2.0


SETTINGS = Settings()


@numba.njit
def reads_an_object(x):
    return np.sum(x) * 2.0


def test_a_function_naming_what_the_key_cannot_describe_is_never_cached(tmp_path, monkeypatch):
    monkeypatch.setitem(reads_an_object.py_func.__globals__, "np", SETTINGS)  # not a module
    assert fingerprint.derivation_key(reads_an_object, ("grad", 0, False)) is None


def test_set_cache_dir_switches_the_cache(tmp_path):
    @numba.njit
    def cubic(x):
        return np.sum(x * x * x)

    try:
        moonlite.set_cache_dir(tmp_path)
        g = moonlite.grad(cubic)
        np.testing.assert_allclose(g(X), 3 * X * X)
        assert g._cache.saves == 1 and len(list(tmp_path.glob("*.mlc"))) == 1
        moonlite.set_cache_dir(None)

        @numba.njit
        def square(x):
            return np.sum(x * x)

        assert moonlite.grad(square)._cache.cache_path is None  # numba's NullCache
    finally:
        moonlite.cache._directory = moonlite.cache._UNSET


@numba.njit(cache=True)
def numba_cached(x):
    return np.sum(x * x)


def test_a_kernel_compiled_with_cache_true_is_cached_beside_numba(monkeypatch):
    monkeypatch.delenv("MOONLITE_CACHE_DIR", raising=False)
    directory = moonlite.cache.cache_directory(numba_cached)
    assert directory == os.path.join(numba_cached._cache.cache_path, "moonlite")
    assert moonlite.cache.cache_directory(with_array_global) is None  # no cache=True: off
