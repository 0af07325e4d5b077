"""Dynamic-shape cases: the exported dims, the sizes a case runs at, the
flatbuffer shape resolver, and one end-to-end run per kind."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.build.dynamic import NARROW_SPAN, WIDE_SPAN, export_dims, run_configs
from harness.config import ConfigError, parse_descriptor
from harness.results.case_result import Outcome
from harness.tosa.shapes import ShapeError, is_dynamic, resolve_shapes


def test_static_case_runs_once_at_its_size():
    c = parse_descriptor("conv2d_ic4_oc8_i16x17_k3_s2_p1")
    assert export_dims(c) is None
    assert run_configs(c) == (c,)


def test_dynamic_dims_and_run_sizes():
    c = parse_descriptor("conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dyall")
    (dims,) = export_dims(c)
    assert set(dims) == {0, 2, 3}
    assert (dims[2].min, dims[2].max) == (16, 16 + NARROW_SPAN)
    sizes = [(v.batch, v.input_size) for v in run_configs(c)]
    assert sizes == [(2, (16, 17)), (3, (17, 18)), (2, (18, 19))]
    # every run size lies in the exported range
    for v in run_configs(c):
        assert all(dims[2 + i].min <= s <= dims[2 + i].max for i, s in enumerate(v.input_size))
        assert dims[0].min <= v.batch <= dims[0].max
    wide = export_dims(c.replace(dynamic="spatial-wide"))[0]
    assert 0 not in wide and wide[2].max - wide[2].min == WIDE_SPAN > 256  # beyond exact-set enumeration
    assert [v.batch for v in run_configs(c.replace(dynamic="batch"))] == [2, 3]


def test_runtime_padding_properties():
    assert parse_descriptor("conv2d_ic4_oc8_i16x17_k3_s2_p1_dyspatial").runtime_pad
    assert not parse_descriptor("conv2d_ic4_oc8_i16x17_k3_s1_p1_dyspatial").runtime_trim  # remainder constant
    assert not parse_descriptor("conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dybatch").runtime_trim
    unpadded = parse_descriptor("conv2d_ic4_oc8_i16x17_k3_s2_dyspatial-wide")
    assert unpadded.runtime_trim and not unpadded.runtime_pad


def test_even_sizes_are_a_derived_dim_and_keep_remainders_mod_2():
    c = parse_descriptor("conv2d_n2_ic4_oc8_i16x12_k3_s2_p1_dyspatial-even")
    (dims,) = export_dims(c)
    assert set(dims) == {2, 3}
    assert [v.input_size for v in run_configs(c)] == [(16, 12), (18, 14), (20, 16)]
    # stride 2 divides the step: the remainder is constant, the padding static
    assert not c.runtime_trim and not c.runtime_pad and not c.symbolic_slice
    assert c.replace(stride=(3, 2)).runtime_pad  # stride 3 does not divide it
    assert c.replace(padding=(0, 0)).symbolic_slice  # remainder 1 > pad 0: a fixed slice of a symbolic size


def test_tosa10_rejection_follows_what_needs_shape_operators():
    from harness.expectations.rejections import expected_rejection

    def rejected(d):
        return expected_rejection(parse_descriptor(d)) is not None

    assert not rejected("conv2d_n2_ic4_oc8_i16x16_k3_s2_p1_dyspatial-even-tosa10")  # static trim
    assert rejected("conv2d_n2_ic4_oc8_i16x16_k3_s2_dyspatial-even-tosa10")  # symbolic slice
    assert rejected("conv2d_n2_ic4_oc8_i16x16_k3_s2_p1_dyspatial-tosa10")  # runtime pad
    assert not rejected("conv2d_n2_ic8_oc8_i12x12_k2_cxmaxpool_dyspatial-even-tosa10")  # odd pool input: no slice
    assert rejected("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool_dyspatial-even-tosa10")  # even: the pool slices
    assert rejected("conv2d_n2_ic8_oc8_i12x12_k2_cxmaxpool_dyspatial-tosa10")  # any size: parity varies


# Each pool's TOSA 1.0 outcome as measured on ExecuTorch 1.5.1 (harness run): True = left on the CPU.
MEASURED_POOL_REFUSALS = {
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool3p1_dyspatial-tosa10": True,  # leftover 0 or 1: a runtime pad
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool3p1_dyspatial-even-tosa10": False,  # leftover 1, within pad 1
    "conv2d_n2_ic8_oc8_i12x12_k3_s1x2_p1_cxmaxpool3p1_dyspatial-even-tosa10": True,  # W alone steps by 1
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool2_dyspatial-even-tosa10": False,  # no stride given: the kernel's
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool2_dyspatial-tosa10": True,
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxavgpool3s1p1_dyspatial-tosa10": False,  # stride 1: nothing left over
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool5p2_dyspatial-tosa10": False,
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool3s3p1_dyspatial-even-tosa10": True,  # stride 3 on a step of 2
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxavgpool5s3_dyspatial-even-tosa10": True,
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool3ceil_dyspatial-even-tosa10": True,  # ceil_mode not read: refused
    "conv2d_n2_ic8_oc8_i12x12_k2_cxavgpool2ceil_dyspatial-even-tosa10": True,
}


@pytest.mark.parametrize("descriptor", MEASURED_POOL_REFUSALS)
def test_pool_refusal_on_tosa10_follows_the_pools_own_leftover(descriptor):
    """The rule reads each pool's kernel, stride and pad (not the 3x3/2 it was written for)."""
    from harness.expectations.rejections import expected_rejection

    assert (expected_rejection(parse_descriptor(descriptor)) is not None) == MEASURED_POOL_REFUSALS[descriptor]


def test_a_ceil_mode_pool_on_a_size_of_either_parity_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="ceil_mode pool .*torch.export refuses it"):
        parse_descriptor("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool3ceil_dyspatial-tosa10")
    parse_descriptor("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool3ceil_dyspatial-even-tosa10")  # even sizes: fine


@pytest.fixture(scope="module")
def dynamic_graph() -> tuple[torch.nn.Module, bytes]:
    """A conv lowered with symbolic batch, H and W (stride 3, pad 1: shape ops, SLICE and PAD)."""
    from harness.lowering.lower import lower
    from harness.policy.targets import get_target
    from harness.run.process import setup_process

    setup_process()
    torch.manual_seed(0)
    m = torch.nn.Conv2d(4, 8, 3, stride=3, padding=1).eval()
    dims = {
        0: torch.export.Dim("b", min=1, max=4),
        2: torch.export.Dim("h", min=9, max=40),
        3: torch.export.Dim("w", min=9, max=40),
    }
    artifact = lower(m, (torch.randn(2, 4, 16, 17),), "fp32", get_target("tosa"), ({**dims},))
    (buffer,) = artifact.tosa
    return m, buffer


@pytest.mark.lowering
@pytest.mark.parametrize("shape", [(2, 4, 16, 17), (1, 4, 9, 40), (3, 4, 13, 11)])
def test_resolved_graph_runs_on_the_reference_model(dynamic_graph, shape):
    import tosa_reference_model as reference_model

    from harness.tosa.graph import read_tosa

    m, buffer = dynamic_graph
    assert is_dynamic(buffer)
    resolved = resolve_shapes(buffer, [shape])
    assert not is_dynamic(resolved) and len(resolved) == len(buffer)
    expected = m(torch.randn(shape)).shape
    assert read_tosa(resolved).outputs[0].shape == tuple(expected)
    x = torch.randn(shape)
    (out,), status = reference_model.run(resolved, [x.numpy()])
    assert status == reference_model.GraphStatus.TOSA_VALID
    np.testing.assert_allclose(out, m(x).detach().numpy(), atol=1e-5)


@pytest.mark.lowering
def test_resolver_refuses_inputs_that_contradict_the_graph(dynamic_graph):
    _, buffer = dynamic_graph
    with pytest.raises(
        ShapeError, match=r"input_1: declared shape \[-1, 4, -1, -1\] but the graph gives \[2, 5, 16, 17\]"
    ):
        resolve_shapes(buffer, [(2, 5, 16, 17)])
    with pytest.raises(ShapeError, match="graph has 1 inputs, got 2 shapes"):
        resolve_shapes(buffer, [(2, 4, 16, 17), (1,)])


@pytest.mark.lowering
@pytest.mark.parametrize(
    "descriptor, outcome",
    [
        ("conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dyall", Outcome.PASS),
        ("conv2d_n2_ic4_oc8_i16x17_k3_s2_dyspatial-wide_qa8w8", Outcome.PASS),
        # the backend pads a quantized conv's runtime border with 0, not the zero point
        ("conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dyspatial_qa8w8", Outcome.KNOWN_ISSUE),
        ("conv2d_n2_ic4_oc8_i12x12_k3_p1_pmreflect_dyspatial", Outcome.EXPECTED_REJECTION),
        # TOSA 1.0 has no shape operators: static padding lowers, runtime padding stays on the CPU
        ("conv2d_n2_ic4_oc8_i12x12_k3_p1_dyspatial-tosa10_qa8w8", Outcome.PASS),
        ("conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dyspatial-tosa10", Outcome.EXPECTED_REJECTION),
        # even sizes: a stride-2 conv's padding is static again, and a pool after it needs no slice
        ("conv2d_n2_ic8_oc8_i12x12_k2_cxmaxpool_dyspatial-even-tosa10_qa8w8", Outcome.PASS),
    ],
)
def test_dynamic_case_end_to_end(descriptor, outcome):
    from harness.run.execute import run_case

    r = run_case(parse_descriptor(descriptor))
    assert r.outcome is outcome, r.reason
    assert not r.stale
    if outcome is Outcome.PASS:
        assert [s["outcome"] for s in r.metrics["sizes"]] == ["pass"] * 3
    if outcome is Outcome.KNOWN_ISSUE:
        assert r.actual_outcome == "mismatch" and r.metrics["where"]["interior"] == 0
        assert r.issue == "int-dynamic-pad-zero-point"


def test_a_crashing_reference_model_costs_one_run_not_the_process(monkeypatch):
    import os
    import signal

    import tosa_reference_model

    from harness.runners.tosa_ref import _run_isolated

    monkeypatch.setattr(tosa_reference_model, "run", lambda buffer, feed: os.kill(os.getpid(), signal.SIGSEGV))
    outputs, status, error = _run_isolated(b"", [])
    assert outputs == [] and error == "crashed (signal 11, SIGSEGV)"

    def refuse(buffer, feed):
        raise ValueError("Invalid TOSA graph")

    monkeypatch.setattr(tosa_reference_model, "run", refuse)
    assert _run_isolated(b"", [])[2] == "refused the graph (Invalid TOSA graph)"
