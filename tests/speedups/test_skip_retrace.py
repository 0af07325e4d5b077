"""Which run_decompositions calls the lowering may skip: only those with nothing left to do."""

from __future__ import annotations

import pytest
import torch

from harness.speedups import lazy_compile, skip_retrace


class _Conv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


class _Cond(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 2, 1)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: self.conv(t), lambda t: t * 2, (x,))


def _inference(module) -> torch.export.ExportedProgram:
    exported = torch.export.export(module, (torch.randn(1, 2, 5, 5),))
    with lazy_compile.during_lowering():  # not skipped: an exported program is training IR
        return exported.run_decompositions({})


@pytest.mark.lowering  # ExecuTorch's exir: what the speed-up reads
def test_exported_program_is_never_skipped():
    exported = torch.export.export(_Conv(), (torch.randn(1, 2, 5, 5),))
    assert exported.dialect == "TRAINING"
    assert not skip_retrace.nothing_to_decompose(exported, {torch.ops.aten.mul.Tensor: None})


@pytest.mark.lowering  # ExecuTorch's exir: what the speed-up reads
def test_skips_only_when_no_node_is_in_the_table():
    program = _inference(_Conv())
    assert program.dialect == "ATEN"
    assert skip_retrace.nothing_to_decompose(program, {torch.ops.aten.mul.Tensor: None})
    assert not skip_retrace.nothing_to_decompose(program, {torch.ops.aten.relu.default: None})
    assert not skip_retrace.nothing_to_decompose(program, {})  # the functionalizing call
    assert not skip_retrace.nothing_to_decompose(program, None)  # torch's default table


@pytest.mark.lowering  # ExecuTorch's exir: what the speed-up reads
def test_looks_inside_control_flow_branches():
    program = _inference(_Cond())
    assert any(n.target is torch.ops.higher_order.cond for n in program.graph.nodes)
    assert not skip_retrace.nothing_to_decompose(program, {torch.ops.aten.mul.Tensor: None})
    assert skip_retrace.nothing_to_decompose(program, {torch.ops.aten.tanh.default: None})


@pytest.mark.lowering  # ExecuTorch's exir: what the speed-up reads
def test_skips_only_inside_the_lowering():
    from harness.speedups import state

    st = state.current() or state.install()
    program = _inference(_Conv())
    table = {torch.ops.aten.tanh.default: None}
    outside = program.run_decompositions(table)
    assert outside is not program
    with lazy_compile.during_lowering():
        inside = program.run_decompositions(table)
        retraced = program.run_decompositions({torch.ops.aten.relu.default: lambda x: torch.clamp_min(x, 0)})
    assert (inside is program) == ("skip_retrace" in st.on)
    assert retraced is not program


@pytest.mark.lowering  # ExecuTorch's exir: what the speed-up reads
def test_the_probe_asks_for_what_it_calls(monkeypatch):
    import executorch.exir.graph_module as graph_module

    assert skip_retrace.probe() == ""
    monkeypatch.delattr(graph_module, "contains_any_call_fn_target_op")  # as on ExecuTorch 1.4
    from harness.speedups.base import run_probe

    assert run_probe(skip_retrace.probe) == "executorch.exir.graph_module has no contains_any_call_fn_target_op"
