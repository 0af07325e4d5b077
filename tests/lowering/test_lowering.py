"""Real lowering through the Arm backend: the TOSA conv op chosen, delegation
facts, and the quantizer's parameters as the artifact reports them."""

from __future__ import annotations

import pytest

from harness.config import parse_descriptor
from harness.results.case_result import Outcome
from harness.run.execute import run_case

pytestmark = pytest.mark.lowering


@pytest.mark.parametrize(
    "descriptor, op",
    [
        ("conv2d_ic8_oc16_i16x16_k3_s2_p1_qa8w8", "CONV2D"),
        ("conv2d_ic4_oc8_g4_i12x12_k3_p1_qa8w8", "DEPTHWISE_CONV2D"),
        ("tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1_qa8w8", "TRANSPOSE_CONV2D"),
        ("conv3d_ic4_oc4_i6x6x6_k3_p1_qfp32", "CONV3D"),
        ("conv1d_ic6_oc12_g6_i16_k3_qa16w8", "DEPTHWISE_CONV2D"),
    ],
)
def test_tosa_conv_op_chosen(descriptor, op):
    r = run_case(parse_descriptor(descriptor), 0)
    assert r.outcome is Outcome.PASS, r.reason
    assert r.conv_ops == [op]
    assert op in r.tosa_ops


def test_grouped_conv_is_decomposed_into_one_conv_per_group():
    r = run_case(parse_descriptor("conv2d_ic8_oc12_g4_i10x10_k3_p1_qa8w8-pt"), 0)
    assert r.outcome is Outcome.PASS, r.reason
    assert r.conv_ops == ["CONV2D"] * 4


def test_int_result_records_quantizer_parameters_and_lsb_metrics():
    r = run_case(parse_descriptor("conv2d_ic8_oc8_i10x10_k3_qa16w8"), 0)
    q = r.metrics["qparams"]
    assert q["input"]["dtype"] == "int16" and q["output"]["dtype"] == "int16"
    assert q["weight"]["n_scales"] == 8 and q["weight"]["axis"] == 0
    assert r.metrics["max_lsb"] <= 1 and r.metrics["n_total"] == 8 * 8 * 8
    assert r.metrics["sqnr_db"] > 30
    assert set(r.timings_s) >= {"build", "quantize", "lower", "run", "judge", "total"}
    assert r.versions["executorch"] == "1.5.1"


def test_per_tensor_scheme_has_one_weight_scale():
    r = run_case(parse_descriptor("conv2d_ic8_oc8_i10x10_k3_qa8w8-pt"), 0)
    assert r.metrics["qparams"]["weight"]["n_scales"] == 1


def test_documented_rejection_is_clean():
    r = run_case(parse_descriptor("tconv2d_ic4_oc4_i6x6_k3_d2_qa8w8"), 0)
    assert r.outcome is Outcome.EXPECTED_REJECTION and r.rejection == "tconv-dilation"
    assert r.actual_outcome in ("not_delegated", "lowering_error") and r.reason


def test_undocumented_failure_is_not_excused(tmp_path):
    # An INT conv with an even kernel and padding='same' stays on the CPU: a
    # real gap, listed in the registry. Its actual outcome is kept.
    r = run_case(parse_descriptor("conv2d_ic4_oc8_i12x12_k4_psame_qa8w8"), 0, keep_dir=tmp_path)
    assert r.outcome is Outcome.KNOWN_ISSUE
    assert r.actual_outcome == "not_delegated" and r.issue == "int-same-asymmetric-pad"
    assert r.reason.startswith("left on CPU:")


def test_conv_in_both_branches_of_a_cond_is_quantized_and_lowered():
    """The public PT2E flow does not descend into torch.cond branches; ours
    prepares, calibrates (each branch called directly) and converts each one."""
    from harness.policy.targets import get_target
    from harness.run import stages

    c = parse_descriptor("conv2d_ic4_oc8_i8x8_k3_p1_qa8w8_cxcond")
    p = stages.prepare(c, 0, get_target("tosa"))
    t, q = p.tensors, p.quantized
    assert len(t.calibration) == 2 and (t.calibration[1][0] == -t.calibration[0][0]).all()  # both branches
    assert len(q.convs) == 2 and all(p is not None for p in q.convs)
    r = run_case(c)  # the numbers pass; the weight is quantized like an activation, as the quantizer does in a cond
    assert r.outcome is Outcome.KNOWN_ISSUE and r.issue == "int-cond-constants-share-activation-observer", r.reason
    assert r.reason.startswith("the conv's weight is quantized per tensor and asymmetric"), r.reason
    assert "COND_IF" in r.tosa_ops and r.conv_ops == ["CONV2D", "CONV2D"]
