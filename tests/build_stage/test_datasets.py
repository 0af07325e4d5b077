"""Each data set has the property it promises (the quantizer-facing ones checked with the real quantizer)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.build.data import make_tensors
from harness.config import parse_descriptor
from harness.conv_ref import conv_forward
from harness.judging.oracles import integer_exact
from harness.policy.targets import get_target
from harness.run import stages
from harness.run.process import setup_process

BASE = "conv2d_ic8_oc16_i12x12_k3_p1"


def _quantized(descriptor: str):
    setup_process()
    c = parse_descriptor(descriptor)
    p = stages.prepare(c, 0, get_target("tosa"))
    return c, p.tensors, p.quantized.qparams


@pytest.mark.lowering
def test_offset_gives_a_large_zero_point():
    _, _, normal = _quantized(f"{BASE}_qa8w8_dsnormal")
    _, _, offset = _quantized(f"{BASE}_qa8w8_dsoffset")
    assert abs(normal.input.zero_point) < 32
    assert abs(offset.input.zero_point) >= 100


@pytest.mark.lowering
def test_channel_skew_spreads_per_channel_scales():
    _, _, skew = _quantized(f"{BASE}_qa8w8_dschannel-skew")
    _, _, normal = _quantized(f"{BASE}_qa8w8_dsnormal")
    assert max(skew.weight.scales) / min(skew.weight.scales) > 50
    assert max(normal.weight.scales) / min(normal.weight.scales) < 5


def test_channel_skew_follows_output_channels_of_a_transposed_conv():
    c = parse_descriptor("tconv2d_ic4_oc8_g2_i6x6_k3_dschannel-skew")
    t = make_tensors(c, 0)
    per_out = t.weight.reshape(2, 2, 4, 9).abs().amax(dim=(1, 3)).flatten()  # (group, oc/g)
    assert per_out[-1] / per_out[0] > 20


@pytest.mark.lowering
@pytest.mark.parametrize("base", [BASE, "conv2d_ic4_oc8_g4_i12x12_k3_s2_p1", "conv1d_ic4_oc8_i20_k3_s2_p1"])
def test_full_range_drives_outputs_into_the_clamp(base):
    c, t, qp = _quantized(f"{base}_qa8w8_dsfull-range")
    qx = torch.round(t.inputs[0] / qp.input.scale) + qp.input.zero_point
    # Inputs stay (within the histogram observer's trimming, a few codes) in the calibrated range...
    assert qx.min() >= qp.input.qmin - 8 and qx.max() <= qp.input.qmax + 8
    # ...yet a real share of the outputs saturates.
    ref = integer_exact(c, t, qp)
    clamped = np.mean((ref.codes == qp.output.qmin) | (ref.codes == qp.output.qmax))
    assert 0.03 < clamped < 0.5


def test_exact_data_is_integer_and_exact_in_fp32():
    c = parse_descriptor(f"{BASE}_dsexact")
    t = make_tensors(c, 0)
    for x in (t.inputs[0], t.weight, t.bias):
        assert torch.equal(x, x.round())
    fp32 = conv_forward(c, t.inputs[0], t.weight, t.bias)
    fp64 = conv_forward(c, t.inputs[0].double(), t.weight.double(), t.bias.double())
    assert torch.equal(fp32.double(), fp64)


def test_special_has_zeros_constants_extremes_and_a_zero_channel():
    c = parse_descriptor(f"{BASE}_dsspecial")
    t = make_tensors(c, 0)
    x = t.inputs[0]
    assert (x == 0).float().mean() >= 0.2
    assert (x == 0.75).any() and (x == 4.0).any() and (x == -4.0).any()
    assert torch.all(t.weight[0] == 0) and t.bias[0] == 0
    assert torch.unique(t.weight[1]).numel() == 1
    out = conv_forward(c, x, t.weight, t.bias)
    assert torch.all(out[:, 0] == 0)


@pytest.mark.parametrize("scheme", ["fp16", "bf16"])
def test_low_precision_schemes_hold_representable_values(scheme):
    c = parse_descriptor(f"{BASE}_q{scheme}")
    t = make_tensors(c, 0)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[scheme]
    for x in (t.inputs[0], t.weight, t.bias):
        assert torch.equal(x.to(dtype).float(), x)


@pytest.mark.lowering
def test_silent_puts_the_bias_just_past_the_int32_limit_of_its_scale():
    """Zero input and weights: both observers floor their scale at eps (2^-16), so the bias scale is 2^-32 and
    the int32 bias holds |b| <= 0.5; the data put the outermost biases 2^-10 past that, at both ends."""
    from harness.build.data import SILENT_BIAS_EPS

    _, t, q = _quantized(f"{BASE}_qa8w8_dssilent")
    assert not t.inputs[0].any() and not t.weight.any()
    assert q.input.scale == 2**-16 and set(q.weight.scales) == {2**-16}
    assert t.bias.min().item() == -(0.5 + SILENT_BIAS_EPS) and t.bias.max().item() == 0.5 + SILENT_BIAS_EPS
    assert make_tensors(parse_descriptor(f"{BASE}_qa8w8_dssilent"), 7).bias.equal(t.bias)  # no seed in it
