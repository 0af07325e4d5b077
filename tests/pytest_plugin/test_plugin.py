"""The pytest plugin (harness.pytest_plugin, loaded through its pytest11 entry point): same ids and same numbers
with -n 0 and -n 2, packed and alone; merged results, each line valid against the results schema; -k, --lf and
-x as a user expects; and the plugin at work from a directory outside the repository."""

from __future__ import annotations

import json
import os
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
ROOT = Path(__file__).resolve().parents[2]


def _pytest(tmp_path: Path, workers: str) -> tuple[list[str], list[dict]]:
    results = tmp_path / f"n{workers}" / "results.jsonl"
    args = [
        sys.executable,
        "-m",
        "pytest",
        "tests/test_sweep.py",
        "-q",
        "-n",
        workers,
        "--harness-results",
        str(results),
        "--harness-seed",
        "11",
        "-p",
        "no:randomly",
        "-rA",
        "--harness-db",
        str(tmp_path / "history.sqlite"),
    ]
    for c in CASES:
        args += ["--harness-case", c]
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
        [sys.executable, "-m", "pytest", "tests/test_sweep.py", "--harness-case", "conv2d_ic8_oc7_g2_i8x8_k3", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 4
    assert "invalid groups=2: must divide out_channels=7" in proc.stderr


def test_an_unwritable_results_path_is_a_usage_error(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/test_sweep.py",
            "-q",
            "--harness-results",
            "/proc/nope/r.jsonl",
            "--harness-no-history",
            "--harness-case",
            CASES[0],
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 4
    assert "invalid --harness-results /proc/nope/r.jsonl: cannot write there" in proc.stderr, proc.stderr[-2000:]


def test_the_plugin_runs_on_another_release_and_its_workers_too(tmp_path):
    results = tmp_path / "results.jsonl"
    args = [
        sys.executable,
        "-m",
        "pytest",
        "tests/test_sweep.py",
        "-q",
        "-n",
        "2",
        "--harness-results",
        str(results),
        "--harness-executorch",
        "1.4.1",
        "-p",
        "no:randomly",
        "--harness-db",
        str(tmp_path / "history.sqlite"),
    ]
    for c in CASES[:2]:
        args += ["--harness-case", c]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["outcome"], r["versions"]["executorch"]) for r in rows] == [("pass", "1.4.1")] * 2
    with History(tmp_path / "history.sqlite") as history:
        assert history.run(rows[0]["run_id"]).versions["executorch"] == "1.4.1"


# -- packed under pytest ------------------------------------------------------------------------------------
PACKABLE = [  # fp32 cases of one pack key; the depthwise one is the depthwise-weight-layout canary's first catch
    "conv2d_n1_ic4_oc8_g4_i12x12_k3x3_s2x2_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "conv2d_ic8_oc8_i12x12_k3_s2_p1_qfp32",
    "conv1d_ic4_oc8_i20_k3_s2_p1_qfp32",
    "conv2d_ic4_oc4_i9x9_k3_d2_p2_qfp32",
]
SAME = ("outcome", "reason", "rule", "actual_outcome", "stage", "metrics", "tosa_ops", "conv_ops", "output_sha256")


def _plugin_run(cwd: Path, results: Path, *extra: str, cases=PACKABLE) -> tuple[subprocess.CompletedProcess, dict]:
    """The packaged sweep test run from `cwd`, with only the environment a user's shell has."""
    args = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "harness.pytest_plugin.test_cases",
        "-q",
        "-p",
        "no:randomly",
        "--harness-no-history",
        "--harness-results",
        str(results),
        *extra,
    ]
    for c in cases:
        args += ["--harness-case", c]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    rows = {r["descriptor"]: r for r in map(json.loads, results.read_text().splitlines())} if results.exists() else {}
    return proc, rows


def test_a_pack_runs_as_one_program_and_each_case_is_its_own_test_with_its_alone_numbers(tmp_path):
    from harness.config import parse_descriptor

    descriptors = [parse_descriptor(c).descriptor for c in PACKABLE]
    packed_proc, packed = _plugin_run(tmp_path, tmp_path / "packed" / "r.jsonl", "-n", "2", "-rA")
    alone_proc, alone = _plugin_run(tmp_path, tmp_path / "alone" / "r.jsonl", "--harness-pack", "1")  # one process
    assert packed_proc.returncode == alone_proc.returncode == 0, packed_proc.stdout[-3000:] + alone_proc.stdout[-3000:]
    passed = sorted(
        line.split("[", 1)[1].rstrip("]") for line in packed_proc.stdout.splitlines() if line.startswith("PASSED")
    )
    assert passed == sorted(descriptors), "each case is its own test, with its descriptor as its id"
    assert [r["packed"] for r in packed.values()] == [len(PACKABLE)] * len(PACKABLE), "one program for the four"
    assert all(r["packed"] == 0 for r in alone.values())
    for d in descriptors:
        differ = {k: (packed[d][k], alone[d][k]) for k in SAME if packed[d][k] != alone[d][k]}
        assert not differ, (d, differ)


def test_a_case_selected_alone_runs_alone_and_a_failing_packed_case_is_rerun_alone(tmp_path):
    from harness.config import parse_descriptor

    depthwise = parse_descriptor(PACKABLE[0]).descriptor
    proc, rows = _plugin_run(tmp_path, tmp_path / "k" / "r.jsonl", "-k", "conv1d")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert [(d.split("_")[0], r["packed"]) for d, r in rows.items()] == [("conv1d", 0)]

    proc, rows = _plugin_run(tmp_path, tmp_path / "canary" / "r.jsonl", "--harness-canary", "depthwise-weight-layout")
    # the summary line is "FAILED <nodeid>" plus " - <message>" when the terminal is wide enough: take the nodeid
    failed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("FAILED ")]
    assert proc.returncode == 1 and len(failed) == 1 and failed[0].endswith(f"::test_case[{depthwise}]"), proc.stdout[
        -3000:
    ]  # (outside the rootdir pytest names the module by its path from the initial arg: '')
    assert rows[depthwise]["outcome"] == "mismatch" and rows[depthwise]["packed"] == 0, "re-run alone, then reported"
    assert all(r["packed"] == len(PACKABLE) and r["outcome"] == "pass" for d, r in rows.items() if d != depthwise)

    proc, rows = _plugin_run(
        tmp_path, tmp_path / "lf" / "r.jsonl", "--harness-canary", "depthwise-weight-layout", "--lf"
    )  # the cache is the one the run before left in tmp_path: pytest's own
    assert proc.returncode == 1 and list(rows) == [depthwise] and rows[depthwise]["packed"] == 0, proc.stdout[-3000:]

    proc, rows = _plugin_run(
        tmp_path,
        tmp_path / "x" / "r.jsonl",
        "--harness-canary",
        "depthwise-weight-layout",
        "-x",
        "-p",
        "no:cacheprovider",
    )
    assert proc.returncode == 1 and "stopping after 1 failures" in proc.stdout and "1 failed" in proc.stdout
    assert rows[depthwise]["outcome"] == "mismatch", "-x stopped after the first case ..."
    assert len(rows) == len(PACKABLE), "... and what its pack ran with it is kept on disk, not lost"


def test_the_plugin_runs_from_outside_the_repository_through_its_entry_point(tmp_path):
    assert not tmp_path.is_relative_to(ROOT)
    proc, rows = _plugin_run(tmp_path, tmp_path / "r.jsonl", cases=PACKABLE[1:3])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [r["outcome"] for r in rows.values()] == ["pass", "pass"]
    off = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:conv-harness",
            "--pyargs",
            "harness.pytest_plugin.test_cases",
            "--harness-case",
            PACKABLE[1],
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert off.returncode == 4 and "unrecognized arguments: --harness-case" in off.stderr, off.stderr[-2000:]


def _proof_run(tmp_path: Path, seed: int, *extra: str) -> subprocess.CompletedProcess:
    args = [
        sys.executable,
        "-m",
        "pytest",
        "tests/test_sweep.py",
        "-q",
        "-p",
        "tests.pytest_plugin.broken_proof",
        "--harness-seed",
        str(seed),
        "--harness-results",
        str(tmp_path / "r.jsonl"),
        "--harness-no-history",
        "--harness-case",
        CASES[2],
        *extra,
    ]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True)


@pytest.mark.parametrize("seed,why", [(1, "the control conv2d_"), (2, "the canary pad-off-by-one was not caught")])
def test_a_session_starts_with_its_proof_and_a_broken_environment_stops_it_with_its_code(tmp_path, seed, why):
    proc = _proof_run(tmp_path, seed)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out[-3000:]
    assert "the harness or this environment is broken: " + why in out and "nothing was blamed on the backend" in out
    assert "passed" not in out.splitlines()[-1], "no case ran after the proof failed"


def test_a_session_whose_proof_holds_says_so_before_its_cases(tmp_path):
    proc = _proof_run(tmp_path, 0, "-n", "2")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "harness: environment: 6 of 6 controls passed; the canary pad-off-by-one was caught (mismatch)" in out


def test_a_session_in_which_every_case_was_skipped_is_not_green(tmp_path):
    """No FVP here: the case is skipped, the proof's controls too; a session that ran nothing exits 3."""
    from harness.runners.registry import get_runner

    fvp = get_runner("fvp").available("ethos-u55")
    if fvp.ok:
        pytest.skip("an FVP is installed here: its cases run")
    args = [
        sys.executable,
        "-m",
        "pytest",
        "tests/test_sweep.py",
        "-q",
        "--harness-target",
        "ethos-u55-128-fvp",
        "--harness-results",
        str(tmp_path / "r.jsonl"),
        "--harness-no-history",
        "--harness-case",
        "conv2d_ic8_oc8_i12x12_k3_s1_p1_qa8w8",
    ]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out[-3000:]
    assert "no case ran on the target's runner: 1 of 1 skipped" in out and "this run is not green (exit 3)" in out
