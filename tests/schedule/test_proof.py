"""A run proves its environment: controls that must pass and a canary that must be caught go first; a run in
which nothing ran is not green."""

from __future__ import annotations

import pytest

from harness.history.db import BROKEN, History
from harness.policy.controls import CONTROLS, PROOF_CANARY
from harness.results.case_result import CaseResult, Outcome
from harness.run.settings import FunctionRef
from harness.schedule.proof import EnvironmentBroken, Proof, nothing_ran
from harness.schedule.sweep import SweepRequest, run_sweep

STAND_IN = FunctionRef("tests.broken_env_case", "run_case")


def _request(tmp_path, **kw) -> SweepRequest:
    kw = {"filter": "^conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_.*_cxnone$", **kw}
    return SweepRequest(
        "smoke", jobs=1, results=tmp_path / "r.jsonl", db=tmp_path / "h.sqlite", case_fn=STAND_IN, prove=True, **kw
    )


def test_a_target_gets_the_controls_it_can_run_and_a_canary():
    tosa, u55 = Proof.for_target("tosa"), Proof.for_target("ethos-u55-128")
    assert set(tosa.controls) == set(CONTROLS) and "_qa8w8_" in tosa.canary_case
    assert u55.controls and all("_qa" in d for d in u55.controls) and "_qa8w8_" in u55.canary_case
    tasks = tosa.tasks({CONTROLS[0]})
    assert CONTROLS[0] not in [t.descriptors[0] for t in tasks]  # a control the run holds serves as both
    assert tasks[-1].canary == PROOF_CANARY


def test_a_result_is_checked_against_the_proof():
    p = Proof.for_target("tosa")
    ok = CaseResult(CONTROLS[0], 0, Outcome.PASS)
    assert p.take(ok) and not p.take(CaseResult("conv2d_other", 0, Outcome.LOWERING_ERROR))
    with pytest.raises(EnvironmentBroken, match="the control .* ended in lowering_error"):
        p.take(CaseResult(CONTROLS[1], 0, Outcome.LOWERING_ERROR, reason="boom"))
    with pytest.raises(EnvironmentBroken, match="canary pad-off-by-one was not caught"):
        p.take(CaseResult(p.canary_case, 0, Outcome.PASS, canary=PROOF_CANARY))
    moved = Proof.for_target("tosa")
    assert moved.take(CaseResult(moved.canary_case, 0, Outcome.HARNESS_ERROR, canary=PROOF_CANARY))
    assert "cannot be applied to this ExecuTorch" in moved.line()


def test_nothing_ran_is_said():
    assert nothing_ran([]) == "no case ran: the selection is empty"
    skipped = [CaseResult("a", 0, Outcome.SKIPPED, reason="no FVP here")]
    assert nothing_ran(skipped) == "no case ran on the target's runner: 1 of 1 skipped (no FVP here)"
    refused = CaseResult("c", 0, Outcome.EXPECTED_REJECTION, actual_outcome="not_delegated")
    assert nothing_ran(skipped + [refused]).endswith("1 ended before it (refused or failed in the lowering)")
    assert nothing_ran(skipped + [CaseResult("b", 0, Outcome.PASS)]) == ""
    assert nothing_ran([refused]) == ""  # every case refused by the backend is the backend's answer, not absence


@pytest.mark.processes
def test_a_proven_run_records_only_its_own_cases_and_says_what_the_proof_showed(tmp_path):
    done = run_sweep(_request(tmp_path))
    assert done.green and done.proof.startswith("environment: 6 of 6 controls passed; the canary")
    assert all(not r.canary for r in done.results) and len(done.results) == done.run.expected


@pytest.mark.processes
@pytest.mark.parametrize("seed, said", [(1, "the control"), (2, "was not caught")])
def test_a_broken_control_or_a_missed_canary_stops_the_run_and_blames_nothing(tmp_path, seed, said):
    with pytest.raises(EnvironmentBroken, match=said):
        run_sweep(
            _request(tmp_path, seed=seed, filter="^conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_.*_qa8w8_dsnormal_cxnone$")
        )
    with History(tmp_path / "h.sqlite") as h:
        assert [s.run.status for s in h.summaries()] == [BROKEN]


@pytest.mark.processes
def test_a_sweep_in_which_every_case_is_skipped_is_not_green(tmp_path):
    done = run_sweep(_request(tmp_path, seed=3))
    assert not done.green and done.nothing_ran.startswith("no case ran on the target's runner: ")


def test_the_proof_runs_in_this_process_for_a_session_that_schedules_its_own_cases():
    from harness.config import parse_descriptor
    from harness.run.settings import RunSettings
    from harness.schedule.proof import prove_here
    from tests.broken_env_case import run_case

    def run_with(seed):
        return lambda d, canary: run_case(parse_descriptor(d), RunSettings(seed, "tosa", None, canary, "r"))

    assert prove_here("tosa", run_with(0)).line().startswith("environment: 6 of 6 controls passed")
    with pytest.raises(EnvironmentBroken, match="the control"):
        prove_here("tosa", run_with(1))
    with pytest.raises(EnvironmentBroken, match="canary pad-off-by-one was not caught"):
        prove_here("tosa", run_with(2))
