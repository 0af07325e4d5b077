"""Each stage's share of a case's error, from tensors alone (harness.judging.attribution)."""

from __future__ import annotations

import numpy as np
import torch

from harness.judging import attribution
from harness.report import attribution as report
from harness.results.case_result import CaseResult, Outcome


def test_quantization_is_the_fake_quant_against_fp64_in_output_lsb():
    ref = torch.tensor([[0.0, 1.0, 2.0, 3.0]], dtype=torch.float64)
    fq = torch.tensor([[0.0, 1.0, 2.25, 3.0]])
    s = attribution.quantization(ref, fq, scale=0.125)
    assert s["worst"] == 2.0 and s["unit"] == "lsb" and s["at"] == [0, 2] and s["sqnr_db"] > 20


def test_lowering_int_counts_codes_and_is_silent_when_identical():
    fq_codes = np.array([[3, 4, 5]])
    same = attribution.lowering_int(fq_codes, fq_codes, torch.ones(1, 3), torch.ones(1, 3))
    assert same == {"worst": 0.0, "unit": "lsb", "at": [], "sqnr_db": None}
    off = attribution.lowering_int(np.array([[3, 7, 5]]), fq_codes, torch.tensor([[3.0, 7, 5]]), torch.ones(1, 3))
    assert off["worst"] == 3.0 and off["at"] == [0, 1]


def test_lowering_float_is_in_units_of_each_elements_limit_or_absolute_where_none_is_allowed():
    ref = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    out = torch.tensor([1.0, 2.5, 4.5])
    ruled = attribution.lowering_float(out, ref, np.array([1.0, 1.0, 0.25]))
    assert ruled["unit"] == "rule" and ruled["worst"] == 2.0 and ruled["at"] == [2]
    exact = attribution.lowering_float(out, ref, np.zeros(3))
    assert exact["unit"] == "abs" and exact["worst"] == 0.5


def test_a_non_finite_value_on_one_side_is_the_worst_error_there_is():
    ref = torch.tensor([1.0, 2.0], dtype=torch.float64)
    s = attribution.lowering_float(torch.tensor([1.0, float("nan")]), ref, np.ones(2))
    assert s["worst"] is None and s["at"] == [1]
    e = attribution.executor(torch.tensor([1.0, 2.0]), torch.tensor([1.0, float("nan")]), None, np.ones(2))
    assert e["worst"] is None and e["at"] == [1]
    both = torch.tensor([1.0, float("nan")])
    assert attribution.executor(both, both.clone(), None, np.ones(2))["worst"] == 0.0  # NaN on both sides agrees


def test_executor_int_is_in_lsb_and_float_in_the_share_of_the_allowed_difference():
    a, b = torch.tensor([0.5, 1.0, 2.0]), torch.tensor([0.5, 1.25, 2.25])
    assert attribution.executor(a, b, 0.125, None)["worst"] == 2.0
    share = attribution.executor(a, b, None, np.array([1.0, 1.0, 0.25]))  # allowed: twice each limit
    assert share == {"worst": 0.5, "unit": "rule", "at": [2], "sqnr_db": share["sqnr_db"]}
    assert attribution.executor(a, b, None, np.zeros(3))["unit"] == "abs"  # exact data: nothing is allowed


def test_the_first_stage_that_broke_its_check_added_the_error():
    stages = {"quantization": {}, "lowering": {}, "executor": {}}
    assert attribution.added_by(stages, quantization_ok=False, lowering_ok=False) == "quantization"
    assert attribution.added_by(stages, quantization_ok=True, lowering_ok=False) == "lowering"
    assert attribution.added_by(stages, True, True, executors_ok=False) == "executor"
    assert attribution.added_by({"lowering": {}}, quantization_ok=False, lowering_ok=True) == ""


def _result(descriptor: str, a: dict, outcome=Outcome.PASS) -> CaseResult:
    return CaseResult(descriptor, 0, outcome, rule="int-exact", metrics={"attribution": a})


def test_the_report_splits_the_error_per_scheme_and_context():
    q = {"worst": 1.2, "unit": "lsb", "at": [0], "sqnr_db": 40.0}
    clean = {"worst": 0.0, "unit": "lsb", "at": [], "sqnr_db": None}
    bad = {"worst": 7.0, "unit": "lsb", "at": [0, 1], "sqnr_db": 20.0}
    results = [
        _result("conv2d_ic4_oc8_i8x8_k3_qa8w8", {"quantization": q, "lowering": clean}),
        _result("conv2d_ic4_oc4_i8x8_k3_qa8w8", {"quantization": q, "lowering": bad, "added_by": "lowering"}),
        _result("conv2d_ic4_oc8_i8x8_k3_qfp32", {"lowering": {"worst": 0.3, "unit": "rule", "at": [0], "sqnr_db": 80}}),
    ]
    rows = {(r.scheme, r.context): r for r in report.rows(results)}
    a8 = rows[("a8w8", "none")]
    assert a8.cases == 2 and a8.stages["lowering"].changed == 1 and a8.stages["lowering"].worst == 7.0
    assert a8.stages["lowering"].worst_case == "conv2d_ic4_oc4_i8x8_k3_qa8w8" and a8.added_by == {"lowering": 1}
    assert a8.stages["quantization"].median_sqnr == 40.0 and "quantization" not in rows[("fp32", "none")].stages
    text = "\n".join(report.markdown(results))
    assert "| a8w8 | none | 2 | median 40.0 dB, lowest 40.0 dB; worst 1.2 lsb" in text and "1 lowering |" in text
