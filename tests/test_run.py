"""tests/run.py, the suite's runner: its batches, its reading of pytest's summary, and one real
run of a small file in a new process."""

import pathlib

from tests import run

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_files_named_for_scheduling_exist():
    assert [p for p in run.FILE_SECONDS if not (ROOT / p).is_file()] == []


def test_every_test_file_is_found_once():
    files = run.test_files(["tests", "tests/ir"])
    assert len(files) == len(set(files)) == len(list(ROOT.joinpath("tests").rglob("test_*.py")))
    assert "tests/test_run.py" in files


def test_batches_put_the_longest_first_and_small_files_together(monkeypatch):
    monkeypatch.setattr(run, "FILE_SECONDS", {"long": 300, "mid": 60})
    monkeypatch.setattr(run, "DEFAULT_SECONDS", 20)
    work = run.batches(["a", "mid", "b", "long", "c", "d"], batch_seconds=50)
    assert work == [["long"], ["mid"], ["a", "b", "c"], ["d"]]  # the others: 20 s each
    assert run.batches(["a", "b"], batch_seconds=0) == [["a"], ["b"]]
    assert run.batches([], batch_seconds=90) == []


def test_summary_counts_read_pytests_last_line():
    output = "....F\nFAILED tests/x.py::t - 2 passed\n1 failed, 4 passed, 2 xfailed, " \
             "1 error in 3.20s\n"
    assert run.summary_counts(output) == {"failed": 1, "passed": 4, "xfailed": 2, "error": 1}
    assert run.summary_counts("no summary at all") == {}


def test_a_failing_batch_fails_the_run_and_is_shown(capsys, monkeypatch):
    results = {("ok.py",): (0, "3 passed in 1.0s", 1.0, 100.0),
               ("bad.py",): (1, "E   assert 1 == 2\n1 failed, 2 passed in 1.0s", 1.0, 100.0)}
    monkeypatch.setattr(run, "run_batch", lambda files, args: results[tuple(files)])
    monkeypatch.setattr(run, "test_files", lambda paths: ["ok.py", "bad.py"])
    assert run.main(["--batch-seconds", "0"]) == 1
    out = capsys.readouterr().out
    assert "assert 1 == 2" in out and "FAILED in: bad.py" in out and "5 passed" in out


def test_a_real_batch_runs_in_a_new_process():
    code, output, seconds, megabytes = run.run_batch(["tests/test_imports.py"], ["-k", "not x"])
    assert code == 0, output
    assert run.summary_counts(output)["passed"] >= 1 and seconds > 0 and megabytes > 10
