"""Durable results: append, read back, merge in order, corrupt files named."""

from __future__ import annotations

import pytest

from harness.results.case_result import CaseResult, Outcome
from harness.results.store import ResultsFileError, ResultWriter, merge, read_results
from tests.factories import case_result


def _result(d: str, outcome=Outcome.PASS) -> CaseResult:
    return case_result(d, outcome, metrics={"max_lsb": 0, "worst": {"n": 0, "c": 1, "pos": [2]}})


def test_each_result_is_on_disk_as_soon_as_written(tmp_path):
    path = tmp_path / "r.jsonl"
    writer = ResultWriter(path)
    writer.write(_result("a"))
    # Not closed: a crash now must not lose the line.
    assert [r.descriptor for r in read_results(path)] == ["a"]
    writer.write(_result("b", Outcome.MISMATCH))
    back = read_results(path)
    assert [(r.descriptor, r.outcome) for r in back] == [("a", Outcome.PASS), ("b", Outcome.MISMATCH)]
    assert back[0].metrics["worst"] == {"n": 0, "c": 1, "pos": [2]}
    writer.close()


def test_merge_orders_by_sweep_order(tmp_path):
    for name, ds in (("w1", ["c", "a"]), ("w2", ["b"])):
        with ResultWriter(tmp_path / f"{name}.jsonl") as w:
            for d in ds:
                w.write(_result(d))
    merged = merge([tmp_path / "w1.jsonl", tmp_path / "w2.jsonl"], tmp_path / "all.jsonl", ["a", "b", "c"])
    assert [r.descriptor for r in merged] == ["a", "b", "c"]
    assert [r.descriptor for r in read_results(tmp_path / "all.jsonl")] == ["a", "b", "c"]


def test_corrupt_results_file_is_one_clear_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_result("a").to_json() + "\n{not json\n")
    with pytest.raises(ResultsFileError) as e:
        read_results(path)
    assert "line 2" in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)
    path.write_text('{"descriptor": "a", "seed": 0, "outcome": "exploded"}\n')
    with pytest.raises(ResultsFileError, match="line 1"):
        read_results(path)
    with pytest.raises(ResultsFileError, match="cannot read"):
        read_results(tmp_path / "missing.jsonl")


def test_green_and_stale():
    assert _result("a").green
    assert _result("a", Outcome.EXPECTED_REJECTION).green
    assert _result("a", Outcome.MISTRUSTED).green  # proves nothing, fails nothing
    assert not _result("a", Outcome.NOT_DELEGATED).green
    stale = _result("a")
    stale.stale = "known issue x no longer reproduces"
    assert not stale.green


def test_repro_line():
    assert _result("conv2d_x").repro == "python -m harness run 'conv2d_x' --seed 0"


def test_schema_file_is_the_schema_the_code_declares():
    from harness.results.schema import SCHEMA_FILE, schema_text

    assert SCHEMA_FILE.read_text() == schema_text(), "regenerate it: python -m harness.results.schema"


def test_results_lines_follow_the_schema_and_undeclared_metrics_do_not():
    import json

    import jsonschema

    from harness.results.schema import results_schema

    validator = jsonschema.Draft202012Validator(results_schema())
    r = CaseResult(
        "conv2d_n1_ic4_oc8_g1_i8x8_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxnone",
        0,
        Outcome.KNOWN_ISSUE,
        reason="left on CPU: aten.hardtanh",
        actual_outcome="not_delegated",
        issue="int-relu6-not-delegated",
        rule="",
        metrics={"max_lsb": 0, "sqnr_db": None},
    )
    validator.validate(json.loads(r.to_json()))
    r.metrics["made_up"] = 1
    assert not validator.is_valid(json.loads(r.to_json()))


V1_KNOWN = (
    '{"descriptor": "conv2d_n1_ic4_oc8_g1_i12x12_k4x4_s1x1_psame_d1x1_b1_pmzeros_qa8w8_dsnormal_cxnone", '
    '"seed": 0, "outcome": "known_issue", "reason": "int-same-asymmetric-pad: padding=same pads '
    'asymmetrically (ExecuTorch 1.5.1). [left on CPU: aten.convolution.default]", "runner": "tosa-ref", '
    '"metrics": {"actual_outcome": "not_delegated", "qparams": {}}, "tosa_ops": [], "conv_ops": [], '
    '"timings_s": {"total": 1.0}, "versions": {"executorch": "1.5.1"}, "artifacts": null, "stale": "", '
    '"canary": ""}'
)
V1_REJECTED = (
    '{"descriptor": "tconv2d_n1_ic4_oc4_g1_i6x6_k3x3_s1x1_p0x0_d2x2_op0x0_b1_pmzeros_qfp32_dsnormal_cxnone", '
    '"seed": 0, "outcome": "expected_rejection", "reason": "tconv-dilation: Transpose convolutions with '
    'dilation are not supported. (left on CPU: aten.convolution.default)", "runner": "tosa-ref"}'
)


def test_a_version_1_file_reads_as_version_2(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(V1_KNOWN + "\n" + V1_REJECTED + "\n")
    known, rejected = read_results(path)
    assert (known.issue, known.actual_outcome, known.reason) == (
        "int-same-asymmetric-pad",
        "not_delegated",
        "left on CPU: aten.convolution.default",
    )
    assert "actual_outcome" not in known.metrics and known.target == "tosa" and known.schema_version == 2
    assert (rejected.rejection, rejected.actual_outcome, rejected.reason) == (
        "tconv-dilation",
        "not_delegated",
        "left on CPU: aten.convolution.default",
    )


def test_an_unknown_schema_version_is_one_line_naming_it(tmp_path):
    path = tmp_path / "future.jsonl"
    path.write_text('{"schema_version": 7, "descriptor": "x", "seed": 0, "outcome": "pass"}\n')
    with pytest.raises(ResultsFileError) as e:
        read_results(path)
    assert "line 1" in str(e.value) and "schema version 7 is not supported" in str(e.value)
    assert "\n" not in str(e.value)


def test_the_next_step_follows_the_stage_that_added_the_error():
    """A lowering's error goes to `bisect passes` with the case's own seed, target, canary and data; the quantizer's
    and the executors' are not a pass's, and a case that failed on no number has no next step."""
    lowering = case_result(
        "conv2d_ic4_oc8_i8x8_k3_qa8w8",
        Outcome.MISMATCH,
        seed=3,
        target="ethos-u55-128",
        canary="per-channel-rescale",
        metrics={"attribution": {"lowering": {"worst": 39.0}, "added_by": "lowering"}},
    )
    assert lowering.next_step == (
        "python -m harness bisect passes 'conv2d_ic4_oc8_i8x8_k3_qa8w8' --seed 3 --target ethos-u55-128 "
        "--canary per-channel-rescale"
    )
    quantizer = case_result("conv2d_ic4_oc8_i8x8_k3_qa8w8", Outcome.MISMATCH)
    quantizer.metrics = {"attribution": {"added_by": "quantization"}}
    assert quantizer.next_step.startswith("the quantizer") and "bisect passes" not in quantizer.next_step
    crashed = case_result("conv2d_ic4_oc8_i8x8_k3_qa8w8", Outcome.LOWERING_ERROR)
    assert crashed.added_by == "" and crashed.next_step == ""
