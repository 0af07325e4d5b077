"""The run history: what it records, when, under crashes and concurrent writers; migrations; shards."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.history import db as history_db
from harness.history.db import History, HistoryError, RunInfo
from harness.results.case_result import CaseResult, Outcome
from tests.factories import case_result

ROOT = Path(__file__).resolve().parents[2]
SWEEP = """
import sys
from pathlib import Path
from harness.run.settings import FunctionRef
from harness.schedule.sweep import SweepRequest, run_sweep
db, results, canary = sys.argv[1], sys.argv[2], sys.argv[3]
run_sweep(SweepRequest("smoke", filter="^conv2d_.*_qa8w8_", jobs=2, results=Path(results), db=Path(db), canary=canary,
                       case_fn=FunctionRef("tests.slow_case", "run_case")))
"""


def _result(descriptor: str, outcome=Outcome.PASS, run_id="r1", **kw) -> CaseResult:
    return case_result(descriptor, outcome, run_id=run_id, **kw)


def test_runs_and_results_round_trip(tmp_path):
    with History(tmp_path / "h.sqlite") as h:
        h.ensure_run(RunInfo("r1", "smoke", 0, "tosa", started=100.0, versions={"torch": "2.13.0"}))
        h.record(_result("conv2d_a"))
        h.record(_result("conv2d_b", Outcome.MISMATCH, reason="off"))
        h.record(_result("conv2d_b", Outcome.PASS))  # the same case again replaces it
        h.finish_run("r1", ended=160.0)
        h.ensure_run(RunInfo("r2", "smoke", 0, "tosa", started=200.0))
        h.record(_result("conv2d_a", Outcome.MISMATCH, run_id="r2"))
        h.finish_run("r2", ended=230.0)
        assert [r.outcome for r in h.results("r1")] == [Outcome.PASS, Outcome.PASS]
        assert h.run("r1").versions == {"torch": "2.13.0"} and h.run("r1").wall_s == 60.0
        assert h.resolve("last") == "r2" and h.resolve("last-green") == "r1"
        assert h.resolve("last-green", before=150.0) == "r1"
        [s2, s1] = h.summaries()
        assert (s1.cases, s1.green, s1.all_green, s2.counts) == (2, 2, True, {"mismatch": 1})
        with pytest.raises(HistoryError, match="no run 'r9'"):
            h.run("r9")


def test_an_older_database_is_migrated_and_a_newer_one_refused(tmp_path, monkeypatch):
    path = tmp_path / "h.sqlite"
    with History(path) as h:
        h.ensure_run(RunInfo("r1", "smoke", 0, "tosa"))
        h.record(_result("conv2d_a"))
    monkeypatch.setattr(history_db, "SCHEMA_VERSION", 3)
    monkeypatch.setitem(history_db.MIGRATIONS, 2, "ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT ''")
    with History(path) as h:
        assert [r.descriptor for r in h.results("r1")] == ["conv2d_a"]
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM meta").fetchone() == ("3",)
    assert "note" in [c[1] for c in con.execute("PRAGMA table_info(runs)")]
    con.execute("UPDATE meta SET value = '7'")
    con.commit()
    with pytest.raises(HistoryError, match="schema version 7; this harness knows versions up to 3"):
        History(path)


def test_a_version_1_database_gains_the_part_column_and_keeps_its_runs(tmp_path):
    path = tmp_path / "h.sqlite"
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for statement in history_db.MIGRATIONS[0].split(";"):
        con.execute(statement) if statement.strip() else None
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute(
        "INSERT INTO runs (run_id, tier, seed, target, started, status, host, versions) "
        "VALUES ('r0', 'smoke', 0, 'tosa', 1.0, 'complete', 'h', '{}')"
    )
    con.close()
    with History(path) as h:
        assert h.run("r0").part == "" and h.summaries()[0].run.status == "complete"


def test_a_running_run_takes_in_what_its_part_file_has_and_the_database_lacks(tmp_path):
    """The gap a SIGKILL between a case's two writes leaves, closed deterministically (and a cut last line)."""
    part = tmp_path / "results.r1.part.jsonl"
    lines = [_result(f"conv2d_{c}").to_json() for c in "abc"]
    part.write_text("\n".join(lines) + "\n" + lines[0][:40])  # the last write was cut: that case never finished
    with History(tmp_path / "h.sqlite") as h:
        h.ensure_run(RunInfo("r1", "smoke", 0, "tosa", part=str(part)))
        h.record(_result("conv2d_a", Outcome.MISMATCH))  # the database's own row wins over the file's
        assert [(r.descriptor, r.outcome) for r in h.results("r1")] == [
            ("conv2d_a", Outcome.MISMATCH),
            ("conv2d_b", Outcome.PASS),
            ("conv2d_c", Outcome.PASS),
        ]
        h.finish_run("r1")
        part.write_text(_result("conv2d_z").to_json() + "\n")  # a finished run no longer reads its part file
        assert h.summaries()[0].cases == 3


def test_not_a_history_is_one_line(tmp_path):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(HistoryError, match="not a usable history database") as e:
        History(garbage)
    assert "\n" not in str(e.value)
    foreign = tmp_path / "foreign.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE things (x)")
    with pytest.raises(HistoryError, match="not a harness history"):
        History(foreign)


def _count(db: Path) -> int:
    try:
        return sqlite3.connect(db).execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.processes
def test_sigkill_mid_sweep_loses_no_finished_case(tmp_path):
    db, results = tmp_path / "h.sqlite", tmp_path / "r" / "results.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", SWEEP, str(db), str(results), ""], cwd=ROOT, start_new_session=True)
    deadline = time.time() + 120
    while _count(db) < 6 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the parent and its workers, mid-sweep
    proc.wait()
    with History(db) as h:
        (summary,) = h.summaries()
        recorded = {r.descriptor for r in h.results(summary.run.run_id)}
    (part,) = results.parent.glob("results.*.part.jsonl")
    written = {line.split('"descriptor": "')[1].split('"')[0] for line in part.read_text().splitlines()}
    assert len(recorded) >= 6 and recorded == written  # every case that finished, in both places
    assert summary.run.status == "running" and summary.run.expected > len(recorded)


@pytest.mark.processes
def test_two_sweeps_write_into_one_database_at_once(tmp_path):
    db = tmp_path / "h.sqlite"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SWEEP, str(db), str(tmp_path / f"r{i}" / "results.jsonl"), canary], cwd=ROOT
        )
        for i, canary in enumerate(("", "conv1d-stride"))
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    with History(db) as h:
        summaries = h.summaries()
        assert len(summaries) == 2
        for s in summaries:
            assert s.run.status == "complete" and s.cases == s.run.expected > 30
        assert sorted(s.run.canary for s in summaries) == ["", "conv1d-stride"]
