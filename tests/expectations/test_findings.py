"""A finding's mechanism, pinned: when ExecuTorch changes it, this says so before the registry does."""

from __future__ import annotations

import pytest

from harness.config import parse_descriptor

pytestmark = pytest.mark.lowering

LAYOUT_CASE = "conv2d_n2_ic4_oc8_g2_i5x8_k2x1_s2x1_p2x0_d1x1_b1_pmreplicate_qa8w4-pt_dschannel-skew_cxpermute-in"


def test_a_layout_op_before_a_replicate_pad_requantizes_and_the_lowering_drops_it():
    """int-layout-op-requantize-dropped: the shared observer of movedim and pad also sees the padded rows, so
    the converted model requantizes x between two qparams; the TOSA graph has no RESCALE for it."""
    import torch

    from harness.policy.targets import get_target
    from harness.run import stages
    from harness.run.execute import run_case

    prepared = stages.prepare(parse_descriptor(LAYOUT_CASE), 0, get_target("tosa"))
    gm = prepared.program.module() if hasattr(prepared.program, "module") else prepared.program
    q = torch.ops.quantized_decomposed.quantize_per_tensor.default
    by_input = {n.args[0].name: n.args[1:3] for n in gm.graph.nodes if n.target == q}
    assert by_input["x"] != by_input["movedim"]  # two qparams for the same values
    artifact = stages.lower(prepared)
    ops = list(artifact.tosa_ops)
    assert ops.index("TRANSPOSE") < ops.index("CONV2D") and "RESCALE" not in ops[: ops.index("CONV2D")]
    r = run_case(parse_descriptor(LAYOUT_CASE), 0, "tosa")
    assert r.outcome.value == "known_issue" and r.issue == "int-layout-op-requantize-dropped"
    assert r.metrics["max_lsb"] >= 2 and r.metrics["where"]["interior"] > 0


RELU_CAT_CASE = "conv2d_ic8_oc8_i12x12_k3_p1_qa8w8_cxrelu-cat"


def test_a_fused_relu_that_shares_a_concats_observer_loses_its_clamp(monkeypatch):
    """int-fused-relu-shared-qparams: the ReLU's quantize has zero point 0 (shared with the concat's other
    input), FuseQuantizedActivationPass removes the ReLU and sets only that node's qmin; no CLAMP is left and
    the case fails. With the pass off, a CLAMP stays and the same case passes."""
    from executorch.backends.arm._passes import fuse_quantized_activation_pass as fuse
    from executorch.backends.arm._passes.quant_args import QuantArgs
    from executorch.exir.pass_base import PassResult

    from harness.run.execute import run_case

    seen = []
    original = fuse.FuseQuantizedActivationPass._set_quant_qmin_to_zp

    def spy(node):
        args = QuantArgs.from_operator(node.target, node.args)
        seen.append((args.zp, args.qmin))
        return original(node)

    monkeypatch.setattr(fuse.FuseQuantizedActivationPass, "_set_quant_qmin_to_zp", staticmethod(spy))
    r = run_case(parse_descriptor(RELU_CAT_CASE), 0, "tosa")
    assert seen == [(0, -128)]  # fused with a zero point above qmin: the clamp is real
    assert "CLAMP" not in r.tosa_ops and r.outcome.value == "known_issue" and r.issue == "int-fused-relu-shared-qparams"
    assert r.metrics["max_lsb"] > 50
    monkeypatch.setattr(fuse.FuseQuantizedActivationPass, "call", lambda self, gm: PassResult(gm, False))
    r = run_case(parse_descriptor(RELU_CAT_CASE), 0, "tosa")
    assert "CLAMP" in r.tosa_ops and r.stale and r.actual_outcome == "pass"  # the registry would call it fixed


SIGMOID_AVGPOOL_CASE = "conv2d_ic8_oc8_i16x16_k3_s2_p1_qa8w8_cxsigmoid-avgpool2"


def test_an_average_pool_after_a_sigmoid_is_decomposed_before_the_sigmoid_is_a_table():
    """int-sigmoid-avgpool-float-input: the pipeline runs DecomposeAvgPool2dPass before InsertTableOpsPass, so
    the pass retraces avg_pool2d on a still-float sigmoid and the INT dtype check refuses it; the same sigmoid
    before a max pool lowers and passes."""
    import inspect

    from executorch.backends.arm._passes import arm_pass_manager

    from harness.run.execute import run_case

    pipeline = inspect.getsource(arm_pass_manager.ArmPassManager._tosa_pipeline)
    assert pipeline.index("DecomposeAvgPool2dPass(") < pipeline.index("InsertTableOpsPass(")
    r = run_case(parse_descriptor(SIGMOID_AVGPOOL_CASE), 0, "tosa")
    assert r.issue == "int-sigmoid-avgpool-float-input" and "Unsupported input dtype torch.float32" in r.reason
    assert run_case(parse_descriptor(SIGMOID_AVGPOOL_CASE.replace("avgpool2", "maxpool")), 0, "tosa").green
