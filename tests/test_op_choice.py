"""The TOSA conv op a config lowers to is checked, not only its numbers."""

from __future__ import annotations

import pytest

from harness.config import parse_descriptor
from harness.judging.op_choice import expected_op, wrong_op


def _c(d: str):
    return parse_descriptor(d + "_qfp32")


def test_the_expected_op_follows_the_shape():
    assert expected_op(_c("conv2d_ic8_oc8_g8_i12x12_k3_p1")) == "DEPTHWISE_CONV2D"
    assert expected_op(_c("conv1d_ic6_oc6_g6_i16_k3_p1")) == "DEPTHWISE_CONV2D"
    assert expected_op(_c("conv2d_ic8_oc12_g4_i10x10_k3_p1")) == "CONV2D"
    assert expected_op(_c("conv3d_ic4_oc4_g4_i6x6x6_k3_p1")) == "CONV3D"  # no DEPTHWISE_CONV3D: per group
    assert expected_op(_c("tconv2d_ic6_oc10_g2_i5x6_k3_s2_p1")) == "TRANSPOSE_CONV2D"


def test_a_right_lowering_passes_and_a_silent_decomposition_does_not():
    dw, grouped = _c("conv2d_ic8_oc8_g8_i12x12_k3_p1"), _c("conv2d_ic8_oc12_g4_i10x10_k3_p1")
    assert wrong_op(dw, ["DEPTHWISE_CONV2D"]) == ""
    assert wrong_op(dw, ["CONV2D", "DEPTHWISE_CONV2D"]) == ""  # a context's own 1x1 conv
    assert wrong_op(grouped, ["CONV2D"] * 4) == ""
    assert wrong_op(dw, []) == ""  # nothing lowered: not this check's to say
    assert wrong_op(dw, ["CONV2D"] * 8) == "the conv lowered to CONV2D x8; its shape calls for DEPTHWISE_CONV2D x1"
    assert "DEPTHWISE_CONV2D x8; its shape calls for DEPTHWISE_CONV2D x1" in wrong_op(dw, ["DEPTHWISE_CONV2D"] * 8)
    assert wrong_op(_c("conv2d_ic8_oc8_g8_i12x12_k3_p1_cxcond"), ["DEPTHWISE_CONV2D"] * 2) == ""  # one per branch
    assert "x4 (one per group)" in wrong_op(grouped, ["CONV2D"])
    assert "not depthwise" in wrong_op(grouped, ["CONV2D"] * 4 + ["DEPTHWISE_CONV2D"])


@pytest.mark.lowering
def test_a_depthwise_conv_decomposed_per_channel_is_a_lowering_error():
    """DecomposeGroupedConvPass mutant: depthwise tested on the input's H instead of its channels. Every output
    value stays right (eight 1-channel DEPTHWISE_CONV2Ds for one), so only the op check sees it; it survived
    every case of smoke before the check."""
    from harness.mutate.catalog import mutant_name, mutants_of
    from harness.run.execute import run_case

    (m,) = [m for m in mutants_of("decompose_grouped_conv_pass") if m.function.endswith("_is_depthwise_conv")
            and m.description == "1 -> 2"]
    r = run_case(parse_descriptor("conv2d_ic8_oc8_g8_i12x12_k3_p1_qa8w8"), 0, "tosa",
                 canary=mutant_name("decompose_grouped_conv_pass", m.index))
    assert r.outcome.value == "lowering_error" and "calls for DEPTHWISE_CONV2D" in r.reason, r.reason
    assert run_case(parse_descriptor("conv2d_ic8_oc8_g8_i12x12_k3_p1_qa8w8"), 0, "tosa").green
