"""a8w4 (int4 weights, -7..7, 8-bit activations), per channel and per tensor, through the real backend.

In every tier as the twin of a8w8/a8w8-pt (schemes.py, `mirrors`). The static standalone a8w4 cases of the
nightly tier pass bit-exact against the integer oracle or are documented rejections or registered findings
(this file's transposed-conv one: `a8w4-tconv-per-channel-input-axis`).
"""

from __future__ import annotations

import pytest

from harness.config import parse_descriptor
from harness.results.case_result import Outcome

pytestmark = pytest.mark.lowering

BIT_EXACT = [
    "conv2d_ic8_oc16_i16x16_k3_p1_qa8w4",
    "conv2d_n2_ic3_oc8_i17x15_k3x5_s3x2_p1x2_qa8w4-pt",
    "conv1d_ic4_oc8_i20_k3_s2_p1_qa8w4",
    "conv2d_ic8_oc8_g8_i12x12_k3_p1_qa8w4",  # depthwise
    "conv2d_ic8_oc12_g4_i10x10_k3_p1_qa8w4",  # grouped
    "conv3d_ic4_oc4_i6x6x6_k3_p1_qa8w4",
    "tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1_qa8w4-pt",
]


@pytest.mark.parametrize("descriptor", BIT_EXACT)
def test_a8w4_is_bit_exact_against_the_integer_oracle(descriptor):
    from harness.run.execute import run_case

    r = run_case(parse_descriptor(descriptor), 0, "tosa")
    assert r.outcome is Outcome.PASS and r.rule == "int-exact" and r.metrics["max_lsb"] == 0, r.reason
    assert r.metrics["sqnr_db"] > r.metrics["sqnr_floor_db"] == 8.0


def test_a_per_channel_int4_transposed_conv_is_quantized_on_its_input_channels():
    """ExecuTorch 1.5.1: _adjust_weight_qspec_for_conv_transpose skips its axis fix for a -7..7 weight range, so
    the IOHW weight is observed per input channel; the RESCALE applies those scales per output channel. Equal
    channel counts: silently wrong numbers; unequal: convert_pt2e crashes on the bias. When this test fails,
    ExecuTorch has fixed it: drop the registry entry."""
    from harness.run.execute import run_case

    same = run_case(parse_descriptor("tconv2d_ic4_oc4_i8x8_k3_s2_p1_op1_qa8w4"), 0, "tosa")
    assert same.actual_outcome == "mismatch" and same.rule == "int-fake-quant"
    assert same.metrics["max_lsb"] > 10 and same.metrics["where"]["interior"] > 0
    other = run_case(parse_descriptor("tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1_qa8w4"), 0, "tosa")
    assert other.actual_outcome == "lowering_error" and "must match the size of tensor b" in other.reason
