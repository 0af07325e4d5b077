"""`registry`: each known issue against stored results, and the results judged again by today's expectations."""

from __future__ import annotations

from harness.cli.main import main
from harness.results.case_result import CaseResult, Outcome
from harness.results.store import write_results
from tests.factories import case_result

BF16 = "tconv2d_n1_ic8_oc4_g1_i8x8_k3x3_s2x2_p1x1_d1x1_op1x1_b1_pmzeros_qbf16_dsnormal_cxnone"
MESSAGE = (
    "reference model refused the graph (Invalid TOSA graph): SubgraphTraverser::initializeGraph(): OpFactory "
    "could not allocate op TRANSPOSE_CONV2D input=(BF16 rank 4)"
)


def _result(executorch: str, reason: str = MESSAGE, outcome: Outcome = Outcome.RUNNER_ERROR) -> CaseResult:
    return case_result(
        BF16,
        outcome,
        reason=reason,
        actual_outcome=outcome.value,
        stage="run",
        error_type="RunnerError",
        versions={"executorch": executorch},
    )


def test_stored_results_are_judged_again_by_todays_registry(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    write_results([_result("1.4.1"), _result("1.5.1")], path)
    assert main(["registry", str(path), "--reclassify"]) == 0
    out = capsys.readouterr().out
    assert "1.4.1: known_issue 1" in out and "1.5.1: known_issue 1" in out
    write_results([_result("1.5.1", "reference model refused the graph: another ERROR_IF")], path)
    assert main(["registry", str(path), "--reclassify"]) == 1  # outside the entry's signature: a new failure
    assert "a new failure: outside the signature of bf16-tconv-acc-type" in capsys.readouterr().out


def test_each_entry_says_what_it_covers_and_what_falls_outside(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    write_results([_result("1.5.1"), _result("1.5.1", "reference model refused the graph: something else")], path)
    assert main(["registry", str(path)]) == 1
    out = capsys.readouterr().out
    assert "bf16-tconv-acc-type: 2 case(s) [2 runner_error] on 1.5.1; 1 explained, 1 outside its signature" in out
