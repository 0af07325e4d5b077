"""Ctrl-C in a terminal during `python -m harness sweep`: the signal reaches the whole process group (the CLI and
its workers), as it does in a shell. The run ends in one line with exit 130, every finished case is in the results
file and the history, the run is recorded as interrupted, and `--resume` runs exactly the rest."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.lowering  # real cases in real workers

FILTER = "^conv1d_.*_q(fp32|a8w8)_dsnormal_cxnone$"  # the smoke tier's plain conv1d cases of two schemes: 17
FINISHED_BEFORE_SIGNAL = 6


def _sweep(tmp_path: Path, *extra: str) -> subprocess.Popen:
    args = [
        sys.executable,
        "-m",
        "harness",
        "sweep",
        "--tier",
        "smoke",
        "--filter",
        FILTER,
        "-j",
        "2",
        "--pack",
        "1",
        "--no-progress",
        "--results",
        str(tmp_path / "results.jsonl"),
        "--db",
        str(tmp_path / "h.db"),
        *extra,
    ]
    # a shell starts a foreground job with SIGINT at its default; start_new_session gives it its own group to signal
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _lines(paths) -> list[dict]:
    return [json.loads(line) for p in paths for line in p.read_text().splitlines() if line.strip()]


def test_ctrl_c_keeps_every_finished_case_exits_130_in_one_line_and_resume_runs_the_rest(tmp_path):
    proc = _sweep(tmp_path)
    deadline = time.monotonic() + 300
    while len(_lines(tmp_path.glob("results.*.part.jsonl"))) < FINISHED_BEFORE_SIGNAL:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no results after 300 s"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == 130, (out, err)
    assert err.strip().splitlines()[-1].startswith("interrupted: ") and "--resume" in err, err
    assert "Traceback" not in err and "leaked" not in err, (
        err
    )  # no worker's traceback, no semaphore the tracker mops up
    kept = _lines([tmp_path / "results.jsonl"])
    assert len(kept) >= FINISHED_BEFORE_SIGNAL and not list(tmp_path.glob("*.part.jsonl"))
    assert f"{len(kept)} of " in err.splitlines()[-1]
    assert "**Interrupted** after" in (tmp_path / "summary.md").read_text()
    db = sqlite3.connect(tmp_path / "h.db")
    ((run_id, status, expected),) = db.execute("select run_id, status, expected from runs").fetchall()
    recorded = {d for (d,) in db.execute("select descriptor from results where run_id = ?", (run_id,))}
    db.close()
    assert status == "interrupted" and recorded == {r["descriptor"] for r in kept}
    assert expected > len(kept), "the signal came before the end"

    proc = _sweep(tmp_path, "--resume")
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, (out, err)
    done = _lines([tmp_path / "results.jsonl"])
    assert len(done) == expected == len({r["descriptor"] for r in done}) and {r["run_id"] for r in done} == {run_id}
    before = {r["descriptor"]: r for r in kept}
    assert all(before[r["descriptor"]] == r for r in done if r["descriptor"] in before), (
        "finished cases kept as they were"
    )
    db = sqlite3.connect(tmp_path / "h.db")
    assert db.execute("select status from runs where run_id = ?", (run_id,)).fetchone() == ("complete",)
    db.close()
