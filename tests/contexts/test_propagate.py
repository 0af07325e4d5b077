"""The drift bound read off a converted graph, op by op (a release that decomposes an activation)."""

from __future__ import annotations

import pytest
import torch

from harness.contexts.propagate import drift_to_output

Q = torch.ops.quantized_decomposed


def _qdq(g, x, scale, zp):
    q = g.call_function(Q.quantize_per_tensor.default, (x, scale, zp, -128, 127, torch.int8))
    return q, g.call_function(Q.dequantize_per_tensor.default, (q, scale, zp, -128, 127, torch.int8))


def _leaky_relu_as_1_4_1_quantizes_it():
    """clamp(x, 0) + clamp(x, max=0) * slope, every op requantized (ExecuTorch 1.4.1's decomposition)."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    start, dx = _qdq(g, x, 0.02, -46)
    _, pos = _qdq(g, g.call_function(torch.ops.aten.clamp.default, (dx, 0, None)), 0.02, -46)
    _, neg = _qdq(g, g.call_function(torch.ops.aten.clamp.default, (dx, None, 0)), 0.02, -46)
    _, slope = _qdq(g, g.placeholder("slope"), 4e-5, -128)
    _, mul = _qdq(g, g.call_function(torch.ops.aten.mul.Tensor, (neg, slope)), 1e-4, 127)
    _, out = _qdq(g, g.call_function(torch.ops.aten.add.Tensor, (pos, mul)), 0.018, -127)
    g.output(out)
    return torch.fx.GraphModule(torch.nn.Module(), g), start


def test_each_requantization_adds_a_step_and_a_mul_scales_by_what_its_other_side_can_hold():
    gm, start = _leaky_relu_as_1_4_1_quantizes_it()
    d = 1.0 * 0.02  # the conv's output: one step off
    pos = d + 0.02  # clamp passes it on; its quantize adds a step
    neg = d + 0.02
    slope_most = 4e-5 * 255  # the constant's quantization holds at most this; it is exact (e = 0)
    mul = slope_most * neg + 1e-4
    assert drift_to_output(gm, start, d) == pytest.approx(pos + mul + 0.018)


def test_an_op_without_a_rule_is_not_guessed():
    g = torch.fx.Graph()
    start, dx = _qdq(g, g.placeholder("x"), 0.02, 0)
    _, out = _qdq(g, g.call_function(torch.ops.aten.exp.default, (dx,)), 0.02, 0)
    g.output(out)
    with pytest.raises(ValueError, match="no drift rule for exp"):
        drift_to_output(torch.fx.GraphModule(torch.nn.Module(), g), start, 0.02)
