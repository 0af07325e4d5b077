"""The drift bound of a chain of requantized convs (harness.judging.requant), on hand-made stages."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness.judging.requant import ConvStage, chain_drift
from harness.qparams import ConvQParams, TensorQParams, WeightQParams


def _q(s_in: float, s_out: float, w: float) -> ConvQParams:
    tensor = lambda s: TensorQParams(s, 0, -128, 127, "int8")  # noqa: E731
    weight = WeightQParams((w / 127,), (0,), None, -127, 127, "int8", torch.tensor([[[127]]]))
    return ConvQParams(tensor(s_in), weight, None, None, tensor(s_out))


def _stage(y: list[float], w: float, direct: bool = True) -> ConvStage:
    t = torch.tensor([[y]], dtype=torch.float32)
    w_abs = torch.tensor([[[abs(w)]]], dtype=torch.float64)
    return ConvStage(t, t.double().abs(), w_abs, 1, lambda x, ww: F.conv1d(x, ww), direct)


def test_only_elements_near_a_rounding_boundary_drift_and_a_conv_spreads_them():
    s0, s1 = 0.1, 0.05
    first = _stage([0.5 * s0, 0.2 * s0, 3.0 * s0], 1.0)  # codes 0.5 (a tie), 0.2 and 3.0: only the tie is ambiguous
    second = _stage([0.3 * s1, 0.3 * s1, 0.3 * s1], 2.0)  # its own values sit far from any boundary
    convs = [_q(0.1, s0, 1.0), _q(s0, s1, 2.0)]
    assert chain_drift([first], convs, 0) == 1.0
    # The tie's one LSB (s0) through |w| = 2 is 4 LSB of s1 before rounding: 5 after; the rest stays exact.
    assert chain_drift([first, second], convs, 1) == math.floor(2 * s0 / s1) + 1
    drift_elsewhere = chain_drift([_stage([0.2 * s0] * 3, 1.0), second], convs, 1)
    assert drift_elsewhere == 0.0  # nothing ambiguous anywhere: the codes must match


def test_an_op_between_the_convs_falls_back_to_the_worst_case_gain():
    s0, s1 = 0.1, 0.05
    first = _stage([0.5 * s0, 0.2 * s0], 1.0)
    second = _stage([0.3 * s1, 0.3 * s1], 2.0, direct=False)
    convs = [_q(0.1, s0, 1.0), _q(s0, s1, 2.0)]
    # gain = |w_int| s_w s_in / s_out = 127 * (2/127) * 0.1 / 0.05 = 4, on every element
    assert chain_drift([first, second], convs, 1) == 5.0
