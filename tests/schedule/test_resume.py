"""`sweep --resume`: an interrupted run continues under its run id and runs only what it had not finished."""

from __future__ import annotations

import pytest

from harness.cases.selection import select
from harness.config import ConfigError
from harness.history.db import COMPLETE, History
from harness.results.case_result import CaseResult, Outcome
from harness.results.store import read_results
from harness.run.settings import FunctionRef
from harness.schedule.sweep import SweepRequest, run_sweep

FILTER = "^conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_"  # one base, every context
RUN_ID = "20261203T000000-abcdef"


def _request(tmp_path, **kw) -> SweepRequest:
    return SweepRequest(
        "smoke",
        filter=FILTER,
        jobs=2,
        results=tmp_path / "r.jsonl",
        db=tmp_path / "h.sqlite",
        case_fn=FunctionRef("tests.slow_case", "run_case"),
        resume=True,
        **kw,
    )


def _killed_run(tmp_path, finished: int, cut: bool = True) -> list[str]:
    """What a SIGKILLed sweep leaves: a part file with its first `finished` results, the last line cut short."""
    order = [c.descriptor for c in select("smoke", pattern=FILTER)]
    lines = [
        CaseResult(d, 0, Outcome.PASS, target="tosa", run_id=RUN_ID, reason="earlier").to_json()
        for d in order[:finished]
    ]
    text = "\n".join(lines) + "\n" + (lines[0][:40] if cut else "")
    (tmp_path / f"r.{RUN_ID}.part.jsonl").write_text(text)
    return order


@pytest.mark.processes
def test_a_killed_run_resumes_under_its_id_and_runs_only_the_rest(tmp_path):
    order = _killed_run(tmp_path, 4)
    assert len(order) > 8
    done = run_sweep(_request(tmp_path))
    assert done.complete and done.run.run_id == RUN_ID
    results = read_results(tmp_path / "r.jsonl")
    assert [r.descriptor for r in results] == order  # sweep order, each case once
    assert [r.reason == "earlier" for r in results] == [i < 4 for i in range(len(order))]
    assert not list(tmp_path.glob("*.part.jsonl"))
    with History(tmp_path / "h.sqlite") as h:
        assert len(h.results(RUN_ID)) == len(order)
        assert h.run(RUN_ID).status == COMPLETE


def test_resuming_a_finished_run_runs_nothing(tmp_path):
    order = _killed_run(tmp_path, 10**6, cut=False)
    done = run_sweep(_request(tmp_path))
    assert all(r.reason == "earlier" for r in done.results) and len(done.results) == len(order)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"seed": 3}, "made with seed 0, this sweep runs seed 3"),
        ({"target": "ethos-u55-128"}, "made with target 'tosa', this sweep runs target 'ethos-u55-128'"),
    ],
)
def test_results_made_differently_are_not_resumed(tmp_path, change, message):
    _killed_run(tmp_path, 4)
    with pytest.raises(ConfigError, match=message):
        run_sweep(_request(tmp_path, **change))


def test_nothing_to_resume_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="no results at .* and no part files beside it"):
        run_sweep(_request(tmp_path))


def test_a_damaged_line_before_the_end_is_refused(tmp_path):
    _killed_run(tmp_path, 4)
    part = tmp_path / f"r.{RUN_ID}.part.jsonl"
    lines = part.read_text().splitlines()
    part.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match="corrupt results file .* line 2: JSONDecodeError"):
        run_sweep(_request(tmp_path))
