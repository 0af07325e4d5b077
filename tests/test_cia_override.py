"""The CIA override speed-up leaves every op with the tables torch's own override builds."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.export.exported_program as ep
from torch._subclasses import fake_impls

from harness.lowering import cia_override
from harness.run.process import SPEEDUPS_WRITTEN_FOR

pytestmark = pytest.mark.skipif(
    torch.__version__.split("+")[0] != SPEEDUPS_WRITTEN_FOR, reason="the speed-up replaces torch 2.13.0's function"
)


def _torchs_override():
    """torch's own context manager, even when the speed-up is installed in this process."""
    import importlib.util

    spec = importlib.util.find_spec("torch.export.exported_program")
    source = open(spec.origin).read()
    start = source.index("@contextmanager\ndef _override_composite_implicit_decomp")
    end = source.index("\ndef _split_decomp_table_to_cia_and_python_decomp")
    namespace = dict(vars(ep))
    exec(compile(source[start:end], spec.origin, "exec"), namespace)  # noqa: S102 - torch's own text
    return namespace["_override_composite_implicit_decomp"]


def _tables(decomp_table):
    return ep._split_decomp_table_to_cia_and_python_decomp(dict(decomp_table))[0]


def _snapshot(ops) -> dict:
    """Each op's table, an autograd wrapper named by the op it wraps; and its fake rule, if any."""
    out = {}
    for op in ops:
        rows = []
        for key, fn in op.py_kernels.items():
            if getattr(fn, "__qualname__", "") == "autograd_not_implemented.<locals>.inner":
                cell = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))
                fn = ("autograd_not_implemented", cell["op"], cell["deferred_error"])
            elif getattr(fn, "func", None) is not None and getattr(fn.func, "__name__", "") == "_special_op_to_decompose_cia":
                fn = ("decompose_cia", fn.keywords["kernel"])
            rows.append((key, fn))
        rule = fake_impls.op_implementations_dict.get(op)
        if rule is not None and isinstance(rule, functools.partial):
            original = rule.keywords.get("original_callable")
            if getattr(original, "func", None) is not None:
                original = ("decompose_cia", original.keywords["kernel"])
            rule = (rule.func.__name__, original)
        out[op] = (rows, rule)
    return out


@pytest.mark.parametrize("table", ["empty", "core-aten", "keep-linear"])
def test_tables_inside_and_after_match_torchs(table):
    decomps = {"empty": {}, "core-aten": torch.export.default_decompositions(),
               "keep-linear": torch.export.default_decompositions()}[table]
    if table == "keep-linear":
        del decomps[torch.ops.aten.linear.default]
    cia = _tables(decomps) if table != "empty" else {
        op: ep._special_op_to_preserve_cia for op in ep._collect_all_valid_cia_ops()}
    assert len(cia) > 100
    torchs = _torchs_override()
    rules, checks = dict(fake_impls.op_implementations_dict), list(fake_impls.op_implementations_checks)

    def restore_fake_rules():  # torch's exit drops rules that were there before; start both from the same state
        fake_impls.op_implementations_dict.clear()
        fake_impls.op_implementations_dict.update(rules)
        fake_impls.op_implementations_checks[:] = checks

    before = _snapshot(cia)
    try:
        with torchs(cia):
            inside_torch = _snapshot(cia)
        after_torch = _snapshot(cia)
        restore_fake_rules()
        with cia_override.override_composite_implicit_decomp(cia):
            inside_ours = _snapshot(cia)
        after_ours = _snapshot(cia)
    finally:
        restore_fake_rules()
    assert inside_ours == inside_torch
    assert after_ours == after_torch
    assert any(rows != before[op][0] for op, (rows, _) in inside_ours.items())


def test_tables_are_restored_when_the_body_raises():
    cia = {op: ep._special_op_to_preserve_cia for op in list(ep._collect_all_valid_cia_ops())[:20]}
    before = {op: dict(op.py_kernels) for op in cia}
    with pytest.raises(RuntimeError, match="inside"):
        with cia_override.override_composite_implicit_decomp(cia):
            raise RuntimeError("inside")
    assert {op: dict(op.py_kernels) for op in cia} == before
