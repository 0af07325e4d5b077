"""The TOSA conv op a config lowers to is checked, not only its numbers."""

from __future__ import annotations

import pytest

from harness.config import parse_descriptor
from harness.judging.op_choice import (
    expected_op,
    narrowed_accumulator,
    wrong_op,
    wrong_weight_quantization,
    wrong_weight_type,
)
from harness.run.settings import RunSettings


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
    from harness.faults.catalog import mutant_name, mutants_of
    from harness.run.execute import run_case

    (m,) = [
        m
        for m in mutants_of("decompose_grouped_conv_pass")
        if m.function.endswith("_is_depthwise_conv") and m.description == "1 -> 2"
    ]
    r = run_case(
        parse_descriptor("conv2d_ic8_oc8_g8_i12x12_k3_p1_qa8w8"),
        0,
        "tosa",
        canary=mutant_name("decompose_grouped_conv_pass", m.index),
    )
    assert r.outcome.value == "lowering_error" and "calls for DEPTHWISE_CONV2D" in r.reason, r.reason
    assert run_case(parse_descriptor("conv2d_ic8_oc8_g8_i12x12_k3_p1_qa8w8"), 0, "tosa").green


def test_weights_must_have_the_schemes_element_type():
    c = parse_descriptor("conv2d_ic8_oc8_i12x12_k3_p1_qa8w4")
    assert wrong_weight_type(c, ("INT4", "INT4"), "INT4") == ""
    assert wrong_weight_type(c, (), "INT4") == ""  # nothing delegated: the outcome says so already
    assert (
        wrong_weight_type(c, ("INT4", "INT8"), "INT4")
        == "the conv weights are INT4 x1, INT8 x1; scheme a8w4 calls for INT4 weights"
    )


@pytest.mark.lowering
def test_int4_weights_stored_as_int8_are_a_lowering_error_alone_and_packed():
    """RewriteConvPass mutant: the rewritten weight loses the source's special dtype (INT4). The values fit
    int8, so the reference model's numbers are bit-identical and the mutant survived every smoke case; the
    weight check sees the INT8 tensor, alone and in a pack."""
    from harness.faults.catalog import mutant_name, mutants_of
    from harness.run.execute import run_case
    from harness.run.packed import run_pack

    (m,) = [
        m
        for m in mutants_of("rewrite_conv_pass")
        if m.function.endswith("_rewrite_weight")
        and m.operator == "drop-stmt"
        and "special_dtype" in m.diff
        and "rewritten_weight_node.meta" in m.diff
    ]
    canary = mutant_name("rewrite_conv_pass", m.index)
    cases = [parse_descriptor(d) for d in ("conv2d_ic8_oc16_i16x16_k3_p1_qa8w4", "conv1d_ic4_oc8_i20_k3_s2_p1_qa8w4")]
    r = run_case(cases[0], 0, "tosa", canary=canary)
    assert r.outcome.value == "lowering_error" and "calls for INT4 weights" in r.reason, r.reason
    assert all("calls for INT4 weights" in r.reason for r in run_pack(cases, RunSettings(canary=canary)))
    assert all(r.green for r in run_pack(cases, RunSettings()))


def test_an_accumulator_narrowed_before_an_int32_consumer_is_named_except_a_conv1ds():
    conv2d = parse_descriptor("conv2d_ic8_oc8_i12x12_k3_p1_qa16w8_cxadd")
    conv1d = parse_descriptor("conv1d_ic8_oc8_i12_k3_p1_qa16w8_cxadd")
    assert narrowed_accumulator(conv2d, 0) == ""
    assert narrowed_accumulator(conv2d, 1).startswith("1 conv accumulator(s) narrowed to INT16")
    assert narrowed_accumulator(conv1d, 1) == ""  # RewriteConvPass's documented design (see NARROWING_RANKS)


@pytest.mark.lowering
def test_an_a16w8_accumulator_read_through_int16_is_a_lowering_error_alone_and_packed():
    """RewriteConvPass mutants that drop its fork of an a16w8 conv's INT48 accumulator to an INT32 consumer
    (a direct one, or one behind a permute) round the accumulator to INT16 first: on offset data 1 LSB moves,
    within the tolerance the fake-quantized model's own rounding needs, so the numbers never caught them.
    The graph check does, alone and in a pack; the unmutated lowering reads the accumulator once."""
    from harness.faults.catalog import mutant_name, mutants_of
    from harness.run.execute import run_case
    from harness.run.packed import run_pack

    def mutant(function: str, operator: str, text: str) -> str:
        (m,) = [
            m
            for m in mutants_of("rewrite_conv_pass")
            if m.function.endswith(function) and m.operator == operator and text in m.diff
        ]
        return mutant_name("rewrite_conv_pass", m.index)

    direct = mutant("_is_direct_int32_rescale", "compare", "node.op != 'call_function'")
    behind_permute = mutant("_get_permute_int32_rescale_users", "drop-stmt", "result[user] = int32_users")
    add = "conv2d_ic8_oc8_i12x12_k3_p1_qa16w8_dsoffset_cxadd"
    cases = [parse_descriptor(d) for d in (add, "conv2d_ic8_oc8_i12x12_k3_p1_qa16w8_dsoffset_cxpermute-add")]
    for canary, case in ((direct, cases[0]), (behind_permute, cases[1])):
        r = run_case(case, 0, "tosa", canary=canary)
        assert r.outcome.value == "lowering_error" and "narrowed to INT16" in r.reason, (canary, r.reason)
    assert all("narrowed to INT16" in r.reason for r in run_pack(cases, RunSettings(canary=direct))[:1])
    assert all(r.green for r in run_pack(cases, RunSettings()))


def test_a_weight_quantized_like_an_activation_is_named():
    """A cond's captured weight is quantized per tensor and asymmetric (int-cond-constants-share-activation-
    observer): the fake-quant model does the same, so only this check sees it."""
    c = parse_descriptor("conv2d_ic8_oc8_i12x12_k3_p1_qa8w8_cxcond")
    assert wrong_weight_quantization(c, True, 0, (0,) * 8, -127, 127) == ""
    assert wrong_weight_quantization(c, False, None, (0,), -127, 127) == ""
    assert wrong_weight_quantization(c, True, None, (-4,), -128, 127) == (
        "the conv's weight is quantized per tensor and asymmetric (zero point -4, range -128..127); scheme a8w8 "
        "calls for symmetric per-channel weights"
    )
    assert "asymmetric (zero point 0, range -128..127)" in wrong_weight_quantization(c, False, None, (0,), -128, 127)
    assert wrong_weight_quantization(c, True, 0, (0, 1), -127, 127).startswith(
        "the conv's weight is quantized asymmetric (zero point [0, 1]"
    )
