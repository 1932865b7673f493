"""Long fuzzing campaigns: `python -m tests.fuzz.run --count 10000 --start 0 [--jobs 2]
[--profile wide]`.

`--profile` picks the generator's profile (tests/fuzz/generator.py): "default" (the kernels of
the 10,000-kernel campaign, where a moonlite refusal is a failure) or "wide" (constructs the
default profile does not write; a refusal is recorded, not a failure, unless another mode
returns a wrong number: kind "modes_disagree_on_refusal"). Every result records its profile.

Seeds run in batches, each batch in a fresh subprocess (a worker) that appends one JSON line per
finished seed to a results file. A worker that dies (a segfault in compiled code, an abort in
LLVM) or stops making progress (`--timeout` seconds without finishing a seed) is recorded
against the seed it was working on, as a failure of kind "crash" or "timeout", and the rest of
its batch goes to a new worker. Fresh workers also keep memory bounded (every kernel adds
compiled code to the process).

A campaign keeps its results in `<cache dir>/campaign-<start>-<end>/` (wide profile:
`campaign-wide-<start>-<end>/`); run the same command again and it resumes, running only the
seeds that have no result yet (`--fresh` starts over). Long
campaigns can so be spread over several sittings.

At the end the command prints the number of kernels run, failures, skips, refusals and the
failing seeds, and writes a JSON summary (`--out`, by default `fuzz-summary-<start>-<end>.json`,
or `fuzz-summary-wide-<start>-<end>.json`, in the cache directory). Rerun one seed with
`--start SEED --count 1 -v [--profile wide]`, or print its kernel with
`python -m tests.fuzz.generator SEED [--profile wide]`.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def modes_for(seed: int) -> dict:
    """Which optional checks a seed gets (the same in the quick test and in campaigns):
    a random subset of argnums for a quarter of the seeds, vjp for a fifth, hvp for a quarter,
    the dense Hessian (slow to compile) for one seed in twenty."""
    return dict(subset=seed % 4 == 1, vjp=seed % 5 == 2, hvp=seed % 4 == 3,
                hessian=seed % 20 == 7)


def run_seed(seed: int, profile: str = "default") -> dict:
    from .check import check_case
    from .generator import generate_kernel
    try:
        case = generate_kernel(seed, profile)
    except Exception as e:  # a bug in the generator itself
        return dict(seed=seed, status="fail", stage="generate", kind="generator",
                    message=f"{type(e).__name__}: {e}", checks=[], seconds=0.0, features=[],
                    timings={}, refusals=[], profile=profile)
    return check_case(case, **modes_for(seed)).as_dict()


def code_commit() -> str:
    """The git commit of the moonlite package this process imports (the code under test), with
    "+dirty" when its sources differ from that commit; "unknown" outside a git checkout. Kept in
    every result, so a campaign resumed across commits says which seeds ran on which code."""
    import moonlite
    src = os.path.dirname(os.path.abspath(moonlite.__file__))
    try:
        head = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", src, "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _worker(seeds: list, results: str, profile: str = "default") -> None:
    commit = code_commit()
    with open(results, "a") as fh:
        for seed in seeds:
            fh.write(json.dumps(dict(run_seed(seed, profile), commit=commit)) + "\n")
            fh.flush()


def _env() -> dict:
    env = dict(os.environ)
    paths = [ROOT] + [p for p in sys.path if p and os.path.isdir(p)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths + env.get("PYTHONPATH", "")
                                                      .split(os.pathsep)))
    env.setdefault("PYTHONFAULTHANDLER", "1")
    # numba colours its error messages with colorama when that is installed, re-initialising
    # the streams for every failed overload attempt during typing: ~18% of a compile.
    env.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")
    return env


class _Batch:
    def __init__(self, seeds: list, results: str, log: str, profile: str = "default"):
        self.seeds, self.results = seeds, results
        self.log = open(log, "a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.run", "--worker", "--results", results,
             "--seeds", ",".join(map(str, seeds)), "--profile", profile],
            cwd=ROOT, env=_env(), stdout=self.log, stderr=self.log)
        self.done = 0
        self.last_progress = time.monotonic()

    def read(self) -> list:
        """New results since the last read."""
        try:
            with open(self.results) as fh:
                lines = fh.read().splitlines()
        except OSError:
            lines = []
        complete = [json.loads(x) for x in lines if x.endswith("}")]
        new = complete[self.done:]
        if new:
            self.done = len(complete)
            self.last_progress = time.monotonic()
        return new


def campaign(start: int, count: int, jobs: int, batch: int, timeout: float, out: str,
             verbose: bool, fresh: bool = False, profile: str = "default") -> dict:
    from .generator import cache_dir
    tag = "" if profile == "default" else f"{profile}-"
    work = os.path.join(cache_dir(), f"campaign-{tag}{start}-{start + count}")
    if fresh and os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work, exist_ok=True)
    out = out or os.path.join(cache_dir(), f"fuzz-summary-{tag}{start}-{start + count}.json")
    results: dict = _earlier_results(work, start, count)
    if results:
        print(f"resuming: {len(results)} seeds already have results in {work}", flush=True)
    todo = [s for s in range(start, start + count) if s not in results]
    queue = collections.deque(todo[i:i + batch] for i in range(0, len(todo), batch))
    running: list = []
    counter = len(os.listdir(work))
    t0 = time.monotonic()
    crashes = os.path.join(work, "crashes.jsonl")

    def record(r):
        results[r["seed"]] = r
        if verbose or r["status"] == "fail":
            msg = r["message"].splitlines()[0][:160] if r["message"] else ""
            print(f"seed {r['seed']}: {r['status']} {r['stage']} {r['kind']} {msg}",
                  flush=True)

    while queue or running:
        while queue and len(running) < jobs:
            counter += 1
            seeds = queue.popleft()
            running.append(_Batch(seeds, os.path.join(work, f"batch{counter}.jsonl"),
                                  os.path.join(work, f"batch{counter}.log"), profile))
        time.sleep(0.5)
        for b in list(running):
            for r in b.read():
                record(r)
            code = b.proc.poll()
            stalled = time.monotonic() - b.last_progress > timeout
            if code is None and not stalled:
                continue
            if code is None:  # stalled: stop the worker this campaign started
                b.proc.kill()
                b.proc.wait()
                for r in b.read():
                    record(r)
            running.remove(b)
            b.log.close()
            _write(summarise(results, start, count, time.monotonic() - t0, profile), out)
            rest = b.seeds[b.done:]
            if rest:  # the worker died or hung on rest[0]
                with open(b.log.name) as fh:
                    tail = fh.read()[-3000:]
                kind = "timeout" if code is None else "crash"
                crash = dict(seed=rest[0], status="fail", stage="", kind=kind,
                             message=f"worker {kind} (return code {b.proc.returncode}):\n{tail}",
                             checks=[], seconds=0.0, features=[], timings={}, refusals=[],
                             profile=profile, commit=code_commit())
                with open(crashes, "a") as fh:
                    fh.write(json.dumps(crash) + "\n")
                record(crash)
                if rest[1:]:
                    queue.appendleft(rest[1:])
        if not verbose and results and len(results) % 50 == 0:
            _progress(results, t0)

    summary = summarise(results, start, count, time.monotonic() - t0, profile)
    _write(summary, out)
    print_summary(summary)
    print(f"summary written to {out}")
    return summary


def _earlier_results(work: str, start: int, count: int) -> dict:
    """Results a previous run of the same campaign left in `work` (complete lines only)."""
    results = {}
    for name in sorted(os.listdir(work)):
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(work, name)) as fh:
            for line in fh.read().splitlines():
                if line.endswith("}"):
                    r = json.loads(line)
                    if start <= r["seed"] < start + count:
                        results[r["seed"]] = r
    return results


def _write(summary: dict, out: str) -> None:
    """Written after every batch too, so an interrupted campaign leaves its numbers."""
    tmp = out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(summary, fh, indent=1)
    os.replace(tmp, out)


_last_progress = [0]


def _progress(results, t0):
    if len(results) != _last_progress[0]:
        _last_progress[0] = len(results)
        fails = sum(r["status"] == "fail" for r in results.values())
        print(f"... {len(results)} kernels, {fails} failures, "
              f"{time.monotonic() - t0:.0f} s", flush=True)


def _first_line(message: str) -> str:
    return message.splitlines()[0][:200] if message else ""


def summarise(results: dict, start: int, count: int, seconds: float,
              profile: str = "default") -> dict:
    rs = [results[s] for s in sorted(results)]
    fails = [r for r in rs if r["status"] == "fail"]
    skips = [r for r in rs if r["status"] == "skip"]
    refused = [r for r in rs if r["status"] == "refused"]
    refusals = [x for r in rs for x in r.get("refusals", [])]
    checks = collections.Counter(c for r in rs for c in r["checks"])
    features = collections.Counter(f for r in rs for f in r["features"])
    stage_time = collections.defaultdict(float)
    for r in rs:
        for k, v in r.get("timings", {}).items():
            stage_time[k] += v
    return dict(
        profile=profile, start=start, count=count, kernels_run=len(rs),
        seconds=round(seconds, 1),
        kernel_seconds=round(sum(r.get("seconds", 0.0) for r in rs), 1),
        ok=sum(r["status"] == "ok" for r in rs), failures=len(fails), skips=len(skips),
        refused=len(refused),
        # refused kernels where other modes returned numbers, all right (by passed checks)
        refused_partially=sum(bool(r["checks"]) for r in refused),
        refused_seeds=[r["seed"] for r in refused],
        refusals_by_stage=dict(collections.Counter(x["stage"] for x in refusals)),
        refused_constructs=dict(collections.Counter(
            _first_line(x["message"]) for x in refusals).most_common()),
        refusals_detail=[dict(seed=r["seed"], stages=[x["stage"] for x in r["refusals"]],
                              checks_passed=r["checks"],
                              message=_first_line(r["refusals"][0]["message"]))
                         for r in refused],
        skip_reasons=dict(collections.Counter(r["kind"] for r in skips)),
        failure_kinds=dict(collections.Counter(f"{r['stage']}:{r['kind']}" for r in fails)),
        failing_seeds=[r["seed"] for r in fails],
        commits=dict(collections.Counter(r.get("commit", "unknown") for r in rs)),
        checks_passed=dict(checks), features=dict(features),
        stage_seconds={k: round(v, 1) for k, v in stage_time.items()},
        failures_detail=[dict(seed=r["seed"], stage=r["stage"], kind=r["kind"],
                              message=r["message"][:3000]) for r in fails],
    )


def print_summary(s: dict) -> None:
    print(f"kernels run: {s['kernels_run']} (seeds {s['start']}..{s['start'] + s['count'] - 1}, "
          f"profile {s.get('profile', 'default')}) in {s['seconds']} s")
    print(f"ok: {s['ok']}  failures: {s['failures']}  skips: {s['skips']} {s['skip_reasons']}  "
          f"refused: {s.get('refused', 0)} ({s.get('refused_partially', 0)} with other modes "
          f"right)")
    if s.get("refused"):
        print(f"refusals by mode: {s['refusals_by_stage']}")
        print(f"refused seeds: {s['refused_seeds']}")
    print(f"checks passed: {s['checks_passed']}")
    print(f"code under test (commit: kernels): {s['commits']}")
    if s["failures"]:
        print(f"failure kinds: {s['failure_kinds']}")
        print(f"failing seeds: {s['failing_seeds']}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1, help="worker processes at a time")
    p.add_argument("--batch", type=int, default=25, help="seeds per worker process")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds a worker may spend on one seed before it is killed")
    p.add_argument("--out", default="", help="JSON summary path")
    p.add_argument("--fresh", action="store_true",
                   help="discard the results of an earlier run of the same campaign")
    p.add_argument("-v", "--verbose", action="store_true", help="print every seed's result")
    p.add_argument("--profile", default="default", choices=["default", "wide"],
                   help="the generator's profile (docs/fuzzing.md)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--seeds", default="", help=argparse.SUPPRESS)
    p.add_argument("--results", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        _worker([int(s) for s in a.seeds.split(",") if s], a.results, a.profile)
        return 0
    summary = campaign(a.start, a.count, a.jobs, a.batch, a.timeout, a.out, a.verbose, a.fresh,
                       a.profile)
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
