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

# Seconds each file took alone in its own process on this 2-core machine, two at a time
# (`--batch-seconds 0`, 2026-12-07). Only the order and the batching use them: a file not
# listed counts as DEFAULT_SECONDS.
FILE_SECONDS = {
    "tests/test_benchmarks.py": 120,
    "tests/ad/test_reverse_rules.py": 240,
    "tests/capture/test_lists.py": 204,
    "tests/capture/test_array_list_methods.py": 199,
    "tests/capture/test_array_lists.py": 157,
    "tests/ad/test_forward_numpy.py": 153,
    "tests/capture/test_record_copies.py": 152,
    "tests/capture/test_constructs.py": 144,
    "tests/capture/test_record_fields.py": 138,
    "tests/rules/test_linalg.py": 110,
    "tests/capture/test_record_moves.py": 90,
    "tests/rules/test_systematic_structural.py": 83,
    "tests/capture/test_list_copies.py": 77,
    "tests/capture/test_list_helpers.py": 69,
    "tests/capture/test_list_orders.py": 69,
    "tests/fuzz/test_fuzz_wide.py": 66,
    "tests/fuzz/test_fuzz_regressions.py": 65,
    "tests/ad/test_reverse_inplace_restore.py": 62,
    "tests/test_fail_closed.py": 58,
    "tests/rules/test_flips_and_cumprod.py": 46,
    "tests/ad/test_reverse_corpus.py": 44,
}
DEFAULT_SECONDS = 20
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
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
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
