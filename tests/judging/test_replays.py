"""Registered mechanisms replayed as edits of the fake-quant graph: each edit finds what it edits, changes the
output as the mechanism says, and leaves a graph where the mechanism is not at work alone (None)."""

from __future__ import annotations

import torch

from harness.config import parse_descriptor
from harness.judging import replays
from harness.qparams import QuantizedModel, TensorQParams

Q = torch.ops.quantized_decomposed


def _tconv_graph(ic: int, oc: int) -> torch.fx.GraphModule:
    """x -> conv_transpose2d(x, dq(w_int, scales, axis 0)): a weight quantized per input channel."""
    g = torch.fx.Graph()
    root = torch.nn.Module()
    root.w = torch.randint(-7, 8, (ic, oc, 3, 3), dtype=torch.int8)
    root.s = torch.linspace(0.01, 0.08, ic)
    root.z = torch.zeros(ic, dtype=torch.int64)
    x = g.placeholder("x")
    w = g.call_function(
        Q.dequantize_per_channel.default, (g.get_attr("w"), g.get_attr("s"), g.get_attr("z"), 0, -7, 7, torch.int8)
    )
    y = g.call_function(torch.ops.aten.conv_transpose2d.input, (x, w))
    g.output(y)
    return torch.fx.GraphModule(root, g)


def test_weight_scales_read_by_output_channel_is_the_conv_with_the_scales_moved():
    c = parse_descriptor("tconv2d_n1_ic4_oc4_g1_i5x5_k3x3_s1x1_p0x0_d1x1_op0x0_b0_pmzeros_qa8w4_dsnormal_cxnone")
    gm = _tconv_graph(4, 4)
    assert replays.weight_scales_by_output_channel(c, gm.graph)
    gm.recompile()
    x = torch.randn(1, 4, 5, 5)
    moved = gm.w.float() * gm.s.reshape(1, -1, 1, 1)  # scale of output channel o on column o
    torch.testing.assert_close(gm(x), torch.nn.functional.conv_transpose2d(x, moved))


def test_weight_scales_replay_steps_aside_where_the_mechanism_cannot_be_silent():
    plain = parse_descriptor("conv2d_n1_ic4_oc4_g1_i5x5_k3x3_s1x1_p0x0_d1x1_b0_pmzeros_qa8w4_dsnormal_cxnone")
    assert not replays.weight_scales_by_output_channel(plain, _tconv_graph(4, 4).graph)
    wider = parse_descriptor("tconv2d_n1_ic4_oc8_g1_i5x5_k3x3_s1x1_p0x0_d1x1_op0x0_b0_pmzeros_qa8w4_dsnormal_cxnone")
    assert not replays.weight_scales_by_output_channel(wider, _tconv_graph(4, 8).graph)  # IC != OC: refused loudly


def _relu_graph(zero_point: int) -> torch.fx.GraphModule:
    g = torch.fx.Graph()
    x = g.placeholder("x")
    r = g.call_function(torch.ops.aten.relu.default, (x,))
    q = g.call_function(Q.quantize_per_tensor.default, (r, 0.1, zero_point, -128, 127, torch.int8))
    g.output(g.call_function(Q.dequantize_per_tensor.default, (q, 0.1, zero_point, -128, 127, torch.int8)))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def test_a_relu_under_a_shared_zero_point_loses_its_clamp_and_one_at_qmin_keeps_it():
    c = parse_descriptor("conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxrelu-cat")
    shared = _relu_graph(-3)
    assert replays.relu_clamp_lost_under_shared_zero_point(c, shared.graph)
    shared.recompile()
    x = torch.tensor([-1.0, 2.0])
    torch.testing.assert_close(shared(x), torch.tensor([-1.0, 2.0]))  # the negative value leaks
    own = _relu_graph(-128)
    assert not replays.relu_clamp_lost_under_shared_zero_point(c, own.graph)


def test_a_replay_that_does_not_apply_is_absent_from_the_fits():
    c = parse_descriptor("conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxrelu-cat")
    gm = _relu_graph(-3)
    out = TensorQParams(0.1, -3, -128, 127, "int8")
    quantized = QuantizedModel(gm, [], out)
    x = (torch.tensor([-1.0, 2.0]),)
    leaked = replays.replay("relu-clamp-lost-under-shared-zero-point", c, quantized, x)
    assert leaked.tolist() == [-13, 17]
    assert replays.fits(c, quantized, x, leaked, 1) == {
        "relu-clamp-lost-under-shared-zero-point": {"max_lsb": 0, "fits": True}
    }
    off = leaked.copy()
    off[0] += 3
    assert replays.fits(c, quantized, x, off, 1)["relu-clamp-lost-under-shared-zero-point"] == {
        "max_lsb": 3,
        "fits": False,
    }


def test_elus_replay_is_the_taylor_branch_inside_its_interval_and_exact_outside():
    model = torch.nn.Sequential(torch.nn.ELU())
    x = torch.tensor([[-0.324, -0.35, -0.36, -2.0, 0.5]], dtype=torch.float64)
    seen = {}

    def passes(reference):
        seen["ref"] = reference
        return True, 0.0

    assert replays.float_fits(model, (x,), passes) == {"elu-expm1-taylor-branch": {"max_err": 0.0, "fits": True}}
    y = x[0, :2]
    taylor = y + y**2 / 2 + y**3 / 6 + y**4 / 24
    torch.testing.assert_close(seen["ref"][0, :2], taylor)
    truncation = float(seen["ref"][0, 0]) - float(torch.expm1(x[0, 0]))
    assert abs(truncation - 0.324**5 / 120) < 2e-6  # the polynomial's truncation error, |y|^5/120 (the entry's reason)
    torch.testing.assert_close(seen["ref"][0, 2:], torch.nn.functional.elu(x[0, 2:]))


def test_a_float_model_without_the_mechanisms_function_has_no_replay():
    model = torch.nn.Sequential(torch.nn.ReLU())
    assert replays.float_fits(model, (torch.ones(1, 3),), lambda ref: (True, 0.0)) == {}
