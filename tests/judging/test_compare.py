"""The comparison policies on synthetic outputs: they pass the exact output
and flag the errors real lowering bugs make."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.build.data import make_tensors
from harness.config import parse_descriptor
from harness.judging import compare
from harness.judging.oracles import fp64_with_bound
from harness.policy.tolerances import MAX_LSB_FAKE_QUANT


def _ref_codes(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(-128, 128, size=(2, 6, 5, 7)).astype(np.int64)


def test_lsb_exact_rule_and_one_lsb_rule():
    ref = _ref_codes()
    assert compare.lsb(ref.copy(), ref).passed
    off = ref.copy()
    off[1, 2, 3, 4] += 1
    assert not compare.lsb(off, ref).passed  # the integer-exact rule is exact
    v = compare.lsb(off, ref, max_lsb=MAX_LSB_FAKE_QUANT)
    assert v.passed and v.metrics["max_lsb"] == 1 and v.metrics["n_diff"] == 1


def test_lsb_flags_one_element_two_lsb_off_and_names_it():
    ref = _ref_codes()
    out = ref.copy()
    out[1, 2, 3, 4] -= 2
    v = compare.lsb(out, ref, max_lsb=MAX_LSB_FAKE_QUANT)
    assert not v.passed
    assert v.metrics["max_lsb"] == 2 and v.metrics["n_over"] == 1
    assert v.metrics["worst"] == {
        "n": 1,
        "c": 2,
        "pos": [3, 4],
        "out": int(out[1, 2, 3, 4]),
        "ref": int(ref[1, 2, 3, 4]),
    }


def test_lsb_flags_channel_swap():
    ref = _ref_codes()
    out = ref[:, [1, 0, 2, 3, 4, 5]]
    v = compare.lsb(out, ref)
    assert not v.passed and v.metrics["worst"]["c"] in (0, 1)


def test_lsb_flags_one_pixel_shift():
    ref = _ref_codes()
    out = np.roll(ref, 1, axis=3)
    assert not compare.lsb(out, ref).passed


def test_lsb_flags_shape_difference():
    ref = _ref_codes()
    assert not compare.lsb(ref[:, :, :4], ref).passed


def test_quantize_output_recovers_codes_from_dequantized_values():
    scale, zp = 0.0123, -7
    codes = torch.arange(-128, 128, dtype=torch.int64)
    deq = ((codes - zp).float() * scale).float()
    assert np.array_equal(compare.quantize_output(deq, scale, zp, -128, 127), codes.clamp(-128, 127).numpy())


@pytest.fixture(scope="module")
def fp_case():
    from harness.build.model import build_model

    c = parse_descriptor("conv2d_ic16_oc8_i12x12_k3_p1")
    t = make_tensors(c, 0)
    ref, bnd = fp64_with_bound(build_model(c, t), t.inputs)
    return c, t, ref, bnd


def test_dot_product_passes_fp32_result_in_any_summation_order(fp_case):
    c, t, ref, bnd = fp_case
    from harness.conv_ref import conv_forward

    x, w, b = t.inputs[0], t.weight, t.bias
    out = conv_forward(c, x, w, b)  # fp32, torch's order
    v = compare.dot_product(out, ref, bnd, c.fan_in, True)
    assert v.passed, v.reason
    # The same sums accumulated in a different order (channels reversed).
    rev = conv_forward(c, x.flip(1), w.flip(1), b)
    assert not torch.equal(rev, out)
    assert compare.dot_product(rev, ref, bnd, c.fan_in, True).passed


def test_dot_product_fails_bf16_truncated_inputs(fp_case):
    c, t, ref, bnd = fp_case
    from harness.conv_ref import conv_forward

    x = t.inputs[0].to(torch.bfloat16).float()
    w = t.weight.to(torch.bfloat16).float()
    out = conv_forward(c, x, w, t.bias)
    v = compare.dot_product(out, ref, bnd, c.fan_in, True)
    assert not v.passed and v.metrics["n_over"] > 0


def test_dot_product_flags_one_wrong_element_and_names_it(fp_case):
    c, t, ref, bnd = fp_case
    out = ref.float().clone()
    out[0, 5, 2, 9] += 1e-3
    v = compare.dot_product(out, ref, bnd, c.fan_in, True)
    assert not v.passed
    assert (v.metrics["worst"]["c"], v.metrics["worst"]["pos"]) == (5, [2, 9])


def test_dot_product_zero_bound_needs_exact_zero():
    ref = torch.zeros(1, 1, 2, 2, dtype=torch.float64)
    bnd = torch.zeros_like(ref)
    assert compare.dot_product(torch.zeros(1, 1, 2, 2), ref, bnd, 9, False).passed
    out = torch.zeros(1, 1, 2, 2)
    out[0, 0, 1, 1] = 1e-30
    v = compare.dot_product(out, ref, bnd, 9, False)
    assert not v.passed and v.metrics["n_zero_bound_violations"] == 1


@pytest.fixture(scope="module")
def fp8_case():
    from harness.build.model import build_model

    c = parse_descriptor("conv2d_ic2_oc8_i12x12_k3_p1_qfp8e4m3")  # KS 18: the fp16 sums add little to the rounding
    t = make_tensors(c, 0)  # every value representable in fp8
    ref, bnd = fp64_with_bound(build_model(c, t), t.inputs)
    return c, t, ref, bnd


def _fp8_conv(c, t, flip_channels=False, bias=True):
    """The conv as TOSA computes it for fp8: fp16 sums, then a CAST to fp8."""
    x, w = t.inputs[0].half(), t.weight.half()
    if flip_channels:  # another summation order
        x, w = x.flip(1), w.flip(1)
    acc = torch.nn.functional.conv2d(x, w, t.bias.half() if bias else None, c.stride, c.padding)
    return acc.to(torch.float8_e4m3fn).float()


def test_fp8_rule_passes_fp16_sums_cast_to_fp8_in_any_order(fp8_case):
    c, t, ref, bnd = fp8_case
    for flip in (False, True):
        v = compare.dot_product_cast(_fp8_conv(c, t, flip), ref, bnd, c.fan_in, True, "fp8e4m3", "fp16", "fp16")
        assert v.passed, v.reason
        assert 0 < v.metrics["max_err"] <= 1


def test_fp8_rule_fails_one_fp8_step_a_dropped_bias_and_a_swap(fp8_case):
    c, t, ref, bnd = fp8_case
    good = _fp8_conv(c, t)
    limits = compare.cast_limits(ref, bnd, c.fan_in, True, "fp8e4m3", "fp16", "fp16")
    # one fp8 step away from the reference, where a step exceeds the element's slack
    slack = limits - np.abs(good.double().numpy() - ref.numpy())
    steps = 2 * compare.half_ulp(good.double().numpy(), "fp8e4m3")
    i = np.unravel_index(int(np.argmax(steps - slack)), slack.shape)
    assert steps[i] > slack[i] and np.count_nonzero(steps > slack) > good.numel() // 4
    off = good.clone()
    off[i] += float(np.sign(good[i].item() - ref[i].item()) or 1.0) * steps[i]
    v = compare.dot_product_cast(off, ref, bnd, c.fan_in, True, "fp8e4m3", "fp16", "fp16")
    assert not v.passed and v.metrics["n_over"] == 1
    assert (v.metrics["worst"]["c"], v.metrics["worst"]["pos"]) == (int(i[1]), [int(i[2]), int(i[3])])
    assert not compare.dot_product_cast(
        _fp8_conv(c, t, bias=False), ref, bnd, c.fan_in, True, "fp8e4m3", "fp16", "fp16"
    ).passed
    swapped = good[:, [1, 0, *range(2, good.shape[1])]]
    assert not compare.dot_product_cast(swapped, ref, bnd, c.fan_in, True, "fp8e4m3", "fp16", "fp16").passed


def test_half_ulp_of_fp8_formats():
    assert compare.half_ulp(np.array([1.0, 1.9, 2.0, 448.0]), "fp8e4m3").tolist() == [2**-4, 2**-4, 2**-3, 16.0]
    assert compare.half_ulp(np.array([0.0, 2**-8]), "fp8e4m3").tolist() == [2**-10, 2**-10]  # subnormal spacing
    assert compare.half_ulp(np.array([1.0]), "fp8e5m2").tolist() == [2**-3]


def test_sqnr():
    ref = torch.ones(100)
    assert compare.sqnr_db(ref, ref) is None
    assert compare.sqnr_db(ref, ref * 1.1) == pytest.approx(20.0, abs=1e-6)


def test_degenerate_outputs_are_named():
    assert "one value" in compare.degenerate_reason(np.zeros(100))
    assert "clamped" in compare.degenerate_reason(np.array([-128, 127] * 50), -128, 127)
    assert compare.degenerate_reason(np.arange(100)) == ""


def test_the_calibrated_extremes_on_the_rails_are_not_clamping():
    """Calibrated on its own input, an output has its minimum at qmin and its maximum at qmax by construction:
    a 3-element conv1d output with 2 of them on the rails discriminates; a third on a rail would not."""
    assert compare.degenerate_reason(np.array([-128, 5, 127]), -128, 127, zero_point=-3) == ""
    assert compare.degenerate_reason(np.array([-128, -128, 127]), -128, 127, zero_point=-3) == ""  # 1 of 3 beyond
    assert "clamped" in compare.degenerate_reason(np.array([-128, -128, -128, 127, 127]), -128, 127, zero_point=-3)
    assert "clamped" in compare.degenerate_reason(np.array([-128, 127] * 50), -128, 127)


def test_localize_splits_border_and_interior_and_names_channels():
    from harness.conv_ref import border_mask

    c = parse_descriptor("conv2d_ic2_oc6_i6x6_k3_p1")
    border = border_mask(c).numpy()
    diff = np.zeros((1, 6, 6, 6), dtype=bool)
    diff[0, 1, 0, 0] = True  # corner: border
    diff[0, 2, 3, 3] = True  # interior
    diff[0, 3, 0, 2] = diff[0, 4, 5, 5] = True  # border
    w = compare.localize(diff, border)
    assert (w["border"], w["interior"], w["channels"], w["n_channels"]) == (3, 1, "1-4", 4)
    assert w["border_share"] == 0.75
    assert w["border_positions_share"] == round(20 / 36, 4)


def test_dot_product_bound_follows_the_declared_accumulator():
    # fp16 output: fp32 accumulation earns the tight ksb, fp16 accumulation KS + bias.
    assert compare.ksb(72, True, "fp16", "fp32") == 2
    assert compare.ksb(72, True, "fp16", "fp16") == 73
    # An op after the conv rounds in the output's format: a whole unit each, not shrunk like KS.
    assert compare.ksb(72, True, "bf16", "fp32", roundings=6) == 1 + 1 + 6
    assert compare.dot_product_limit(72, False, "fp32", roundings=1) == 6 * 73
    assert compare.dot_product_limit(72, False, "fp32") == 6 * 72


def test_sqnr_floor_relaxes_only_for_an_output_clamped_at_both_ends():
    from harness.judging.compare import two_sided_saturation
    from harness.policy.schemes import sqnr_floor

    clamped = np.array([1.0] * 40 + [-1.0] * 40 + [0.5] * 20)  # exact data through hardtanh(-1, 1)
    relu_like = np.array([0.0] * 60 + list(np.linspace(0.1, 4, 40)))  # one-sided: keeps the floor
    assert two_sided_saturation(clamped) and not two_sided_saturation(relu_like)
    assert not two_sided_saturation(np.zeros(10))
    assert sqnr_floor("a8w8", "exact", saturated=True) == sqnr_floor("a8w8", "full-range") == 0.0
    assert sqnr_floor("a8w8", "exact") == 14.0
