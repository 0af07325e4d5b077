"""The judge catches what real lowering bugs do to an output.

For a handful of real cases the reference model's output is perturbed the
way real bugs perturb it (one element off by 1 or 2 LSB, a channel swap, a
one-pixel shift, a 1% per-channel scale error, the bias dropped, a zero point
dropped); each perturbation must be flagged and the untouched output pass.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.build.data import scheme_dtype
from harness.config import parse_descriptor
from harness.conv_ref import conv_forward
from harness.judging.spec_math import rescale
from harness.policy.targets import get_target
from harness.results.case_result import Outcome
from harness.run import stages
from harness.run.process import setup_process
from harness.runners.registry import get_runner

pytestmark = pytest.mark.lowering

INT_CASES = [
    "conv2d_ic8_oc16_i12x12_k3_s2_p1_qa8w8_dsoffset",  # large input zero point
    "conv2d_ic4_oc8_g4_i12x12_k3_p1_qa16w8",
    "tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1_qa8w8-pt",
    "conv1d_ic4_oc8_i20_k3_s2_p1_qa8w8_dschannel-skew",
]
FLOAT_CASES = [
    "conv2d_ic8_oc8_i10x10_k3_p1_qfp32",
    "conv2d_ic4_oc8_g4_i12x12_k3_s2_p1_qfp16",
    "conv3d_ic4_oc4_i6x6x6_k3_p1_qfp32_dsexact",
]


def _run(descriptor: str):
    setup_process()
    c = parse_descriptor(descriptor)
    p = stages.prepare(c, 0, get_target("tosa"))
    artifact = stages.lower(p)
    output = stages.run(p, artifact, 0, get_runner("tosa-ref"))
    _, judge = stages.judge(p, artifact, 0, output)
    return c, p.tensors, judge, output


@pytest.fixture(scope="module", params=INT_CASES)
def int_case(request):
    return _run(request.param)


@pytest.fixture(scope="module", params=FLOAT_CASES)
def float_case(request):
    return _run(request.param)


def _codes(judge, output):
    oq = judge.quantized.output
    return np.round(output.double().numpy() / oq.scale).astype(np.int64) + oq.zero_point


def _dequantize(judge, codes):
    oq = judge.quantized.output
    return torch.from_numpy((np.clip(codes, oq.qmin, oq.qmax) - oq.zero_point) * oq.scale).float()


def _mid_element(judge, codes):
    oq = judge.quantized.output
    inside = np.argwhere((codes > oq.qmin + 2) & (codes < oq.qmax - 2))
    return tuple(inside[len(inside) // 2])


def _int_perturbations(c, t, judge, codes):
    oq, qi = judge.quantized.output, judge.quantized.qparams.input
    ref = judge.int_ref
    out = {}
    for lsb in (1, 2):
        p = codes.copy()
        p[_mid_element(judge, codes)] += lsb
        out[f"one element +{lsb} LSB"] = p
    out["channel swap"] = codes[:, [1, 0, *range(2, codes.shape[1])]]
    out["one-pixel shift"] = np.roll(codes, 1, axis=-1)
    scaled = codes.copy()
    worst = int(np.abs(codes - oq.zero_point).max(axis=tuple(i for i in range(codes.ndim) if i != 1)).argmax())
    scaled[:, worst] = np.round((codes[:, worst] - oq.zero_point) * 1.01) + oq.zero_point
    out["per-channel scale +1%"] = scaled
    scales = [qi.scale * s / oq.scale for s in judge.quantized.qparams.weight.scales]
    if judge.quantized.qparams.bias is not None:
        acc = ref.accumulator - judge.quantized.qparams.bias.numpy().astype(np.int64).reshape(1, -1, *[1] * c.rank)
        out["bias dropped"] = rescale(acc, scales, 0, oq.zero_point, oq.qmin, oq.qmax, ref.bits)[0]
    if oq.zero_point:
        out["output zero point dropped"] = codes - oq.zero_point
    if qi.zero_point:
        w = judge.quantized.qparams.weight.values.double()
        shift = conv_forward(c, torch.full_like(t.inputs[0], float(qi.zero_point), dtype=torch.float64), w, None)
        acc = ref.accumulator + shift.round().to(torch.int64).numpy()
        out["input zero point dropped"] = rescale(acc, scales, 0, oq.zero_point, oq.qmin, oq.qmax, ref.bits)[0]
    return out


def test_int_unperturbed_output_passes(int_case):
    c, t, judge, output = int_case
    j = judge.judge(output)
    assert j.outcome is Outcome.PASS, j.reason
    assert j.metrics["max_lsb"] == 0 and j.metrics["exact_share"] == 1.0


def test_int_perturbations_are_flagged(int_case):
    c, t, judge, output = int_case
    codes = _codes(judge, output)
    perturbations = _int_perturbations(c, t, judge, codes)
    assert {"one element +1 LSB", "channel swap", "per-channel scale +1%"} <= set(perturbations)
    missed = []
    for name, p in perturbations.items():
        j = judge.judge(_dequantize(judge, p))
        if j.outcome is not Outcome.MISMATCH:
            missed.append(name)
        elif name == "one element +1 LSB":
            assert j.metrics["n_diff"] == 1 and j.metrics["where"]["n_diff"] == 1
    assert not missed, f"{c.descriptor}: not flagged: {missed}"


def _float_perturbations(c, t, output):
    out = {}
    p = output.clone()
    idx = tuple(int(i) for i in torch.nonzero(output.abs() > 0.5)[0])
    ulp = 2.0 ** -{"fp32": 23, "fp16": 10, "bf16": 7}[c.scheme]
    # 1% (64 ulp in fp16): what one tap lost or doubled does to an element. The
    # DOT_PRODUCT rule allows up to ~6*KS ulp of the bound, so a few ulp is no bug.
    p[idx] = p[idx] * (1 + max(0.01, 64 * ulp))
    out["one element off by 1%"] = p
    out["channel swap"] = output[:, [1, 0, *range(2, output.shape[1])]]
    out["one-pixel shift"] = torch.roll(output, 1, dims=-1)
    s = output.clone()
    s[:, 0] *= 1.01
    out["per-channel scale +1%"] = s
    if t.bias is not None:
        out["bias dropped"] = output - t.bias.reshape(1, -1, *[1] * c.rank)
    return out


def test_float_unperturbed_output_passes(float_case):
    c, t, judge, output = float_case
    j = judge.judge(output)
    assert j.outcome is Outcome.PASS, j.reason


def test_float_perturbations_are_flagged(float_case):
    c, t, judge, output = float_case
    dtype = scheme_dtype(c.scheme)
    missed = [
        name
        for name, p in _float_perturbations(c, t, output).items()
        if judge.judge(p.to(dtype).float()).outcome is not Outcome.MISMATCH
    ]
    assert not missed, f"{c.descriptor}: not flagged: {missed}"


def test_int_attribution_puts_a_perturbation_on_the_lowering(int_case):
    """The quantizer's share is the same whatever the output; an error the output adds is the lowering's, at its
    element, and a failing case names the lowering as the stage that broke its check."""
    c, t, judge, output = int_case
    clean = judge.judge(output).metrics["attribution"]
    assert clean["quantization"]["unit"] == "lsb" and clean["quantization"]["sqnr_db"] is not None
    assert clean["lowering"]["worst"] <= 1 and "added_by" not in clean  # within fake-quant's rounding freedom
    codes = _codes(judge, output)
    at = _mid_element(judge, codes)
    broken = codes.copy()
    broken[at] += 5
    j = judge.judge(_dequantize(judge, broken))
    a = j.metrics["attribution"]
    assert j.outcome is Outcome.MISMATCH and a["added_by"] == "lowering"
    assert a["quantization"] == clean["quantization"]
    assert 4 <= a["lowering"]["worst"] <= 6 and a["lowering"]["at"] == [int(i) for i in at]


def test_float_attribution_is_the_lowering_in_units_of_the_rule(float_case):
    c, t, judge, output = float_case
    clean = judge.judge(output).metrics["attribution"]
    assert set(clean) == {"lowering"} and clean["lowering"]["worst"] <= 1
    assert clean["lowering"]["unit"] == ("abs" if c.dataset == "exact" else "rule")
    j = judge.judge(_float_perturbations(c, t, output)["one element off by 1%"].to(scheme_dtype(c.scheme)).float())
    assert j.metrics["attribution"]["added_by"] == "lowering" and j.metrics["attribution"]["lowering"]["worst"] > 0
