"""Run the whole test suite: `python tests/run.py` (the README's test command and CI's).

Why not one `pytest -n 2`: numba never frees the code it compiles (docs/architecture.md,
"numba never frees compiled code"), so a process that runs the whole suite only grows. Each of
the two xdist workers held about 12 GB by the end; on a 24 GB machine the last files thrashed,
subprocess tests timed out, and CI's run passed its 90 minutes (stop 47). Here test files run
in batches, each batch in a new `pytest` process that gives its memory back when it exits;
two batches run at once (`-j`), the longest files first so that no long file starts last.

    python tests/run.py                   # everything
    python tests/run.py tests/capture     # the files under some paths
    python tests/run.py -- -k hessian -x  # arguments after `--` go to every pytest process
    python tests/run.py --batch-seconds 0 # one file per process: measures each file's time

A single file or test is still run with plain `python -m pytest`.
"""

import argparse
import os
import pathlib
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Seconds each file took in a process of its own on this 2-core machine, two at a time
# (`--batch-seconds 0`, 2026-12-07; for the files that ran alone in a clean clone's CI run the
# same day, their time there: the whole run took 40.7 min, its largest process 2.8 GB). Only
# the order and the batching use them: a file not listed (they took under 20 s) counts as
# DEFAULT_SECONDS.
FILE_SECONDS = {
    "tests/ad/test_reverse_rules.py": 464,
    "tests/capture/test_array_list_methods.py": 350,
    "tests/capture/test_array_lists.py": 336,
    "tests/capture/test_constructs.py": 298,
    "tests/capture/test_record_copies.py": 277,
    "tests/ad/test_forward_numpy.py": 234,
    "tests/capture/test_lists.py": 219,
    "tests/capture/test_record_fields.py": 207,
    "tests/rules/test_linalg.py": 170,
    "tests/rules/test_systematic_structural.py": 121,
    "tests/capture/test_record_moves.py": 113,
    "tests/fuzz/test_fuzz_wide.py": 90,
    "tests/test_fail_closed.py": 89,
    "tests/fuzz/test_fuzz_regressions.py": 85,
    "tests/capture/test_list_helpers.py": 83,
    "tests/capture/test_list_copies.py": 83,
    "tests/ad/test_reverse_inplace_restore.py": 77,
    "tests/capture/test_list_orders.py": 76,
    "tests/rules/test_kron.py": 75,
    "tests/ad/test_reverse_corpus.py": 72,
    "tests/test_cache.py": 68,
    "tests/rules/test_order_statistics.py": 67,
    "tests/rules/test_systematic_elementwise.py": 66,
    "tests/rules/test_systematic_binary.py": 62,
    "tests/rules/test_flips_and_cumprod.py": 59,
    "tests/capture/test_record_array_fields.py": 58,
    "tests/ad/test_reverse_overlapping_writes.py": 58,
    "tests/fuzz/test_fuzz_quick.py": 52,
    "tests/test_api_instances.py": 49,
    "tests/ad/test_hessian_corpus.py": 47,
    "tests/rules/test_nan_reductions.py": 47,
    "tests/test_notebooks.py": 46,
    "tests/test_benchmarks.py": 43,
    "tests/capture/test_importer_layouts.py": 43,
    "tests/ad/test_guards.py": 42,
    "tests/capture/test_moved_numbers.py": 40,  # (new: measured alone, nothing beside it)
    "tests/capture/test_list_returning_helpers.py": 40,  # (new: measured beside others)
    "tests/capture/test_list_changing_helpers.py": 90,  # (new, 2026-12-07: measured alone)
    "tests/ad/test_forward_broadcasting.py": 27,  # (new, 2026-12-07: measured alone)
    "tests/ad/test_reverse_nested_tuples.py": 120,  # (new, 2026-12-07: measured alone)
    "tests/test_api_vjp.py": 39,
    "tests/rules/test_custom.py": 38,
    "tests/rules/test_records.py": 38,
    "tests/capture/test_rewrites.py": 35,
    "tests/ad/test_forward_corpus.py": 35,
    "tests/test_api_reverse.py": 33,
    "tests/ad/test_reverse_broadcasting.py": 33,
    "tests/lower/test_round_trip.py": 31,
    "tests/lower/test_array_exprs.py": 31,
    "tests/test_api_higher.py": 24,
    "tests/ad/test_instances.py": 23,
    "tests/test_bad_inputs.py": 23,
    "tests/rules/test_norms.py": 22,
    "tests/lower/test_dispatcher.py": 21,
    "tests/test_api_jacobians.py": 21,
    "tests/capture/test_nested_records.py": 20,
    "tests/test_api_njit.py": 20,
}
DEFAULT_SECONDS = 10
# Files are put together into one process until their seconds reach this: fewer processes
# (each starts in about 2 s and compiles moonlite's own helpers again), and still a bounded
# amount of compiled code in each.
BATCH_SECONDS = 90

COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")


def test_files(paths):
    """The test files under `paths` (files or folders), relative to the root, sorted."""
    found = set()
    for path in paths:
        path = (ROOT / path).resolve()
        files = [path] if path.is_file() else path.rglob("test_*.py")
        found.update(str(f.relative_to(ROOT)) for f in files)
    return sorted(found)


def batches(files, batch_seconds):
    """Files in batches, the longest first; small files share a process up to batch_seconds."""
    files = sorted(files, key=lambda f: -FILE_SECONDS.get(f, DEFAULT_SECONDS))
    out, batch, total = [], [], 0
    for f in files:
        batch.append(f)
        total += FILE_SECONDS.get(f, DEFAULT_SECONDS)
        if total >= batch_seconds:
            out.append(batch)
            batch, total = [], 0
    return out + ([batch] if batch else [])


def run_batch(files, pytest_args):
    """Run one pytest process; returns (exit code, output, seconds, peak memory in MB)."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               *pytest_args, *files]
    start = time.perf_counter()
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        # os.wait4 gives this child's own peak memory, which Popen.wait does not
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        output = log.read()
    return process.returncode, output, time.perf_counter() - start, usage.ru_maxrss / 1024


def summary_counts(output):
    last = [line for line in output.splitlines() if " in " in line and COUNTS.search(line)]
    return {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
            for n, kind in COUNTS.findall(last[-1])} if last else {}


class Suite:
    """Batches handed to `jobs` threads, each running one pytest process at a time."""

    def __init__(self, work, pytest_args, jobs):
        self.todo = queue.Queue()
        for batch in work:
            self.todo.put(batch)
        self.n, self.done, self.pytest_args, self.jobs = len(work), 0, pytest_args, jobs
        self.lock = threading.Lock()
        self.totals, self.failed, self.timings = {}, [], []

    def lane(self):
        while True:
            try:
                files = self.todo.get_nowait()
            except queue.Empty:
                return
            self.report(files, *run_batch(files, self.pytest_args))

    def report(self, files, code, output, seconds, megabytes):
        counts = summary_counts(output)
        # 5: no test collected (a `-k` that matches nothing in these files)
        ok = code in (0, 5) and "failed" not in counts and "error" not in counts
        with self.lock:
            self.done += 1
            for kind, n in counts.items():
                self.totals[kind] = self.totals.get(kind, 0) + n
            self.timings.append((seconds, files))
            shown = ", ".join(counts_text(counts)) or f"exit code {code}"
            print(f"[{self.done:3d}/{self.n}] {seconds:6.1f} s {megabytes:6.0f} MB  {shown}:  "
                  + " ".join(files), flush=True)
            if not ok:
                self.failed.append(files)
                print(output, flush=True)

    def run(self):
        lanes = [threading.Thread(target=self.lane) for _ in range(self.jobs)]
        for lane in lanes:
            lane.start()
        for lane in lanes:
            lane.join()


def counts_text(counts):
    return [f"{n} {kind}" for kind, n in counts.items()]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ours, pytest_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) \
        if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["tests"])
    parser.add_argument("-j", "--jobs", type=int, default=2, help="processes at once")
    parser.add_argument("--batch-seconds", type=float, default=BATCH_SECONDS)
    options = parser.parse_args(ours)
    work = batches(test_files(options.paths), options.batch_seconds)
    start = time.perf_counter()
    suite = Suite(work, pytest_args, options.jobs)
    suite.run()
    minutes = (time.perf_counter() - start) / 60
    print(f"\n{', '.join(counts_text(suite.totals))} in {minutes:.1f} min "
          f"({len(work)} processes, {options.jobs} at a time)")
    for files in suite.failed:
        print("FAILED in:", " ".join(files))
    return 1 if suite.failed or not suite.totals.get("passed") else 0


if __name__ == "__main__":
    sys.exit(main())
