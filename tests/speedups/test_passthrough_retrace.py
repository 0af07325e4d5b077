"""Which retraces the lowering may skip: only a pass-through over a graph a retrace made, and never a change."""

from __future__ import annotations

import pytest
import torch

from harness.speedups import lazy_compile, passthrough_retrace
from harness.speedups.base import run_probe

pytestmark = pytest.mark.lowering  # ExecuTorch's exir: what the speed-up wraps


def _passes():
    from executorch.exir.dialects._ops import ops as exir_ops
    from executorch.exir.pass_base import ExportPass

    class Nothing(ExportPass):
        def call_operator(self, op, args, kwargs, meta):
            return super().call_operator(op, args, kwargs, meta)

    class Negate(ExportPass):  # rewrites the last node only: the dry run goes that far first
        def call_operator(self, op, args, kwargs, meta):
            if op == exir_ops.edge.aten.add.Tensor:
                return super().call_operator(exir_ops.edge.aten.sub.Tensor, args, kwargs, meta)
            return super().call_operator(op, args, kwargs, meta)

    class Counting(ExportPass):  # keeps a record of its calls: put back when the dry run fails
        def __init__(self):
            super().__init__()
            self.seen = []

        def call_operator(self, op, args, kwargs, meta):
            self.seen.append(op)
            if op == exir_ops.edge.aten.add.Tensor:
                return super().call_operator(exir_ops.edge.aten.sub.Tensor, args, kwargs, meta)
            return super().call_operator(op, args, kwargs, meta)

    class OwnGetitem(Nothing):
        def call_getitem(self, value, key, meta):
            return super().call_getitem(value, key, meta)

    class Reads(ExportPass):  # touches the tracer: never a pass-through
        def call_operator(self, op, args, kwargs, meta):
            assert self.tracer.root is not None
            return super().call_operator(op, args, kwargs, meta)

    return Nothing, Negate, Counting, OwnGetitem, Reads


@pytest.fixture
def installed():
    undo = passthrough_retrace.install()
    try:
        with lazy_compile.during_lowering():
            yield
    finally:
        undo()


def _targets(gm) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def test_a_pass_through_is_skipped_only_on_a_graph_a_retrace_made(installed):
    nothing, *_ = _passes()
    gm = passthrough_retrace.sample_graph()
    first = nothing().call(gm).graph_module
    assert first is not gm  # built by hand, not by a retrace: retraced
    skipped = passthrough_retrace.SKIPPED[0]
    assert nothing().call(first).graph_module is first
    assert passthrough_retrace.SKIPPED[0] == skipped + 1


def test_a_rewrite_and_an_edit_in_place_are_retraced(installed):
    nothing, negate, *_ = _passes()
    first = nothing().call(passthrough_retrace.sample_graph()).graph_module
    rewritten = negate().call(first).graph_module
    assert rewritten is not first and "aten.sub.Tensor" in _targets(rewritten)[-1]
    relu = next(n for n in first.graph.nodes if "relu" in str(n.target))
    add = next(n for n in first.graph.nodes if "add" in str(n.target))
    add.args = (relu, relu)  # an edit in place after the retrace: the graph is not the one it made
    again = nothing().call(first).graph_module
    assert again is not first
    last = list(again.graph.nodes)[-2]
    assert last.args[0] is last.args[1] and "relu" in str(last.args[0].target)


def test_an_edit_that_only_changes_a_scalars_type_is_retraced(installed):
    """As QuantizeClampArgumentsPass quantizes a clamp's bounds in place (0.0 == 0): the retrace after it makes
    the clamp's value an integer tensor, and a skip would have kept the float one (seen on the nightly)."""
    from executorch.exir.dialects._ops import ops as exir_ops
    from torch._subclasses.fake_tensor import FakeTensorMode

    nothing, *_ = _passes()
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    with FakeTensorMode() as mode:
        x.meta["val"] = mode.from_tensor(torch.zeros(2, 3, dtype=torch.int16))
    graph.output((graph.call_function(exir_ops.edge.aten.clamp.default, (x, 0.0, 6.0)),))
    first = nothing().call(torch.fx.GraphModule(torch.nn.Module(), graph)).graph_module
    clamp = next(n for n in first.graph.nodes if n.op == "call_function")
    assert clamp.meta["val"].dtype == torch.float32
    clamp.update_arg(1, 0)
    clamp.update_arg(2, 6)
    again = nothing().call(first).graph_module
    assert again is not first
    assert next(n for n in again.graph.nodes if n.op == "call_function").meta["val"].dtype == torch.int16


def test_a_failed_dry_run_leaves_the_pass_as_it_was(installed):
    nothing, _, counting, *_ = _passes()
    first = nothing().call(passthrough_retrace.sample_graph()).graph_module
    pass_ = counting()
    result = pass_.call(first).graph_module
    assert result is not first
    assert len(pass_.seen) == 2  # the retrace's two calls, not the dry run's too
    assert not isinstance(pass_.tracer, passthrough_retrace._Refuse)


def test_a_pass_with_its_own_retrace_hooks_or_tracer_use_is_retraced(installed):
    nothing, _, _, own_getitem, reads = _passes()
    assert passthrough_retrace._qualifies(nothing) and not passthrough_retrace._qualifies(own_getitem)
    first = nothing().call(passthrough_retrace.sample_graph()).graph_module
    assert passthrough_retrace._qualifies(reads)  # retraced for its tracer use, not for its hooks:
    assert passthrough_retrace._dry_run(nothing(), first) and not passthrough_retrace._dry_run(reads(), first)
    assert reads().call(first).graph_module is not first


def test_outside_the_lowering_every_retrace_happens():
    nothing, *_ = _passes()
    undo = passthrough_retrace.install()
    try:
        with lazy_compile.during_lowering():
            first = nothing().call(passthrough_retrace.sample_graph()).graph_module
        assert nothing().call(first).graph_module is not first
    finally:
        undo()


def test_the_probe_passes_here_and_names_what_is_missing(monkeypatch):
    import executorch.exir.pass_base as pass_base

    assert passthrough_retrace.probe() == ""
    monkeypatch.delattr(pass_base, "ProxyValue")
    assert run_probe(passthrough_retrace.probe) == "executorch.exir.pass_base has no ProxyValue"


@pytest.mark.parametrize(
    ("descriptor", "skips"),
    [
        ("conv2d_n2_ic4_oc8_i9x9_k3_s2_p1_qa8w8", True),
        ("conv2d_ic8_oc8_g4_i8x8_k3_p1_qa8w4", True),
        ("tconv2d_ic4_oc4_i6x6_k3_s2_p1_op1_qa16w8", True),
        ("conv3d_ic2_oc4_i5x5x5_k3_p1_qfp32", True),
        ("conv1d_ic4_oc4_g4_i16_k3_p1_qbf16_cxrelu", True),
        ("conv2d_ic4_oc8_i8x8_k3_p1_qa8w8_cxrelu6-cat", True),
        ("conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dyspatial_qa8w8", False),  # symbolic sizes: it steps aside
    ],
)
def test_the_flatbuffer_is_the_plain_flows(descriptor, skips):
    """Lowered with and without the skip: the same bytes, and the skip was taken where it may be."""
    from harness.config import parse_descriptor
    from harness.policy.targets import get_target
    from harness.run import stages
    from harness.run.process import setup_process

    setup_process()
    config, tosa = parse_descriptor(descriptor), get_target("tosa")

    def lowered() -> tuple[bytes, ...]:
        return stages.lower(stages.prepare(config, 0, tosa)).tosa

    from harness.speedups import state

    with state.suspended():
        plain = lowered()
        skipped = passthrough_retrace.SKIPPED[0]
        undo = passthrough_retrace.install()
        try:
            fast = lowered()
        finally:
            undo()
    assert fast == plain
    assert (passthrough_retrace.SKIPPED[0] > skipped) == skips
