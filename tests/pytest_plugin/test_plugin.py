"""The pytest plugin: same ids and same numbers with -n 0 and -n 2, merged
results, each line valid against the results schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from harness.history.db import History
from harness.results.schema import results_schema

pytestmark = pytest.mark.lowering

CASES = [
    "conv2d_ic8_oc8_i12x12_k3_s2_p1_qa8w8",
    "conv1d_ic4_oc8_i20_k3_s2_p1_qa16w8",
    "conv2d_ic4_oc8_g4_i12x12_k3_p1_qfp32",
    "tconv2d_ic4_oc4_i6x6_k3_d2_qa8w8",
]
ROOT = Path(__file__).resolve().parents[1]


def _pytest(tmp_path: Path, workers: str) -> tuple[list[str], list[dict]]:
    results = tmp_path / f"n{workers}" / "results.jsonl"
    args = [sys.executable, "-m", "pytest", "tests/test_sweep.py", "-q", "-n", workers, "--results", str(results),
            "--seed", "11", "-p", "no:randomly", "-rA", "--db", str(tmp_path / "history.sqlite")]
    for c in CASES:
        args += ["--case", c]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = sorted(line.split("::")[1].split(" ")[0] for line in proc.stdout.splitlines() if line.startswith("PASSED"))
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert not list(results.parent.glob("*.part.jsonl")), "per-worker files are merged and removed"
    return ids, rows


def test_serial_and_parallel_runs_agree(tmp_path):
    ids0, rows0 = _pytest(tmp_path, "0")
    ids2, rows2 = _pytest(tmp_path, "2")
    assert ids0 == ids2 and len(ids0) == len(CASES)
    assert [r["descriptor"] for r in rows0] == [r["descriptor"] for r in rows2]  # sweep order
    for a, b in zip(rows0, rows2):
        for key in ("descriptor", "seed", "outcome", "metrics", "tosa_ops", "reason"):
            assert a[key] == b[key], key
    assert rows0[0]["seed"] == 11
    assert {r["outcome"] for r in rows0} == {"pass", "expected_rejection"}
    validator = jsonschema.Draft202012Validator(results_schema())
    for row in rows0 + rows2:  # real sweep output, as a tool reading the file sees it
        validator.validate(row)
    assert len({r["run_id"] for r in rows0}) == 1 and rows0[0]["run_id"] != rows2[0]["run_id"]
    with History(tmp_path / "history.sqlite") as history:  # both runs recorded, every case, as complete
        for rows in (rows0, rows2):
            run_id = rows[0]["run_id"]
            assert history.run(run_id).status == "complete" and history.run(run_id).tier == "cases"
            assert sorted(r.descriptor for r in history.results(run_id)) == sorted(r["descriptor"] for r in rows)
    assert {r["rule"] for r in rows0 if r["outcome"] == "pass"} == {"int-exact", "dot-product"}


def test_bad_case_is_a_usage_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_sweep.py", "--case", "conv2d_ic8_oc7_g2_i8x8_k3", "-q"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 4
    assert "invalid groups=2: must divide out_channels=7" in proc.stderr


def test_the_plugin_runs_on_another_release_and_its_workers_too(tmp_path):
    results = tmp_path / "results.jsonl"
    args = [sys.executable, "-m", "pytest", "tests/test_sweep.py", "-q", "-n", "2", "--results", str(results),
            "--executorch", "1.4.1", "-p", "no:randomly", "--db", str(tmp_path / "history.sqlite")]
    for c in CASES[:2]:
        args += ["--case", c]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["outcome"], r["versions"]["executorch"]) for r in rows] == [("pass", "1.4.1")] * 2
    with History(tmp_path / "history.sqlite") as history:
        assert history.run(rows[0]["run_id"]).versions["executorch"] == "1.4.1"
