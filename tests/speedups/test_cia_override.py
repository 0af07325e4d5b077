"""The CIA override speed-up leaves every op with the tables torch's own override builds (its probe checks a
sample; here every op of three tables)."""

from __future__ import annotations

import pytest
import torch
import torch.export.exported_program as ep

from harness.speedups import cia_override

_WHY = cia_override.probe()
pytestmark = pytest.mark.skipif(_WHY != "" and "differs" not in _WHY, reason=f"absent from this torch: {_WHY}")


def _tables(decomp_table):
    return ep._split_decomp_table_to_cia_and_python_decomp(dict(decomp_table))[0]


@pytest.mark.parametrize("table", ["empty", "core-aten", "keep-linear"])
def test_tables_inside_and_after_match_torchs(table):
    decomps = {
        "empty": {},
        "core-aten": torch.export.default_decompositions(),
        "keep-linear": torch.export.default_decompositions(),
    }[table]
    if table == "keep-linear":
        del decomps[torch.ops.aten.linear.default]
    cia = (
        _tables(decomps)
        if table != "empty"
        else {op: ep._special_op_to_preserve_cia for op in ep._collect_all_valid_cia_ops()}
    )
    assert len(cia) > 100
    before = cia_override.snapshot(cia)
    assert cia_override.differs_from_torch(cia) == ""
    with cia_override.override_composite_implicit_decomp(cia):
        inside_ours = cia_override.snapshot(cia)
    assert any(rows != before[op][0] for op, (rows, _) in inside_ours.items())


def test_tables_are_restored_when_the_body_raises():
    cia = {op: ep._special_op_to_preserve_cia for op in list(ep._collect_all_valid_cia_ops())[:20]}
    before = {op: dict(op.py_kernels) for op in cia}
    with pytest.raises(RuntimeError, match="inside"):
        with cia_override.override_composite_implicit_decomp(cia):
            raise RuntimeError("inside")
    assert {op: dict(op.py_kernels) for op in cia} == before


def test_the_probe_notices_a_table_that_differs(monkeypatch):
    """A torch whose override builds another table (here: one autograd key more) turns the speed-up off."""
    real = cia_override.torchs_override()

    def other_torch(cia):
        import contextlib

        @contextlib.contextmanager
        def manager():
            with real(cia):
                for op in cia:
                    op.py_kernels[torch._C.DispatchKey.AutogradOther] = lambda *a, **k: None
                yield

        return manager()

    monkeypatch.setattr(cia_override, "torchs_override", lambda: other_torch)
    assert "differs from torch's" in cia_override.probe(sample=4)
