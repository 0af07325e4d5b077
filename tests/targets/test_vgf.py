"""The VGF target: the VGF lowering, its TOSA graph on the reference model, the model converter's verdict."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import tools
from harness.cases.selection import select
from harness.config import ConfigError
from harness.policy.targets import check_tools, get_target

CONVERTER = tools.locate("model-converter")
needs_converter = pytest.mark.skipif(
    CONVERTER is None, reason="the ML SDK model converter is not installed here (pip install -e '.[vgf]')"
)


def test_the_target_takes_what_its_converter_takes():
    vgf = get_target("vgf")
    assert not vgf.dynamic and not vgf.control_flow and not any(s.startswith("fp8") for s in vgf.schemes)
    smoke = select("smoke", target="vgf")
    assert smoke and all(c.dynamic == "none" and "cond" not in c.context for c in smoke)
    assert {c.scheme for c in smoke} == set(vgf.schemes)


def test_a_missing_converter_is_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    from harness.cli.main import main

    monkeypatch.setenv("PATH", str(tmp_path))  # no model-converter on it,
    monkeypatch.setattr(tools, "_beside_python", lambda: [tmp_path])  # nor beside this Python
    with pytest.raises(
        ConfigError,
        match=r"target vgf needs model-converter, which is neither on PATH nor beside "
        r"\S+: pip install",
    ):
        check_tools(get_target("vgf"))
    rc = main(["sweep", "--tier", "smoke", "--target", "vgf", "--results", str(tmp_path / "r.jsonl"), "--no-history"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "model-converter" in err
    assert not (tmp_path / "r.jsonl").exists()


@needs_converter
@pytest.mark.processes
def test_an_unactivated_environment_still_finds_its_converter(tmp_path):
    """CI runs `.venv/bin/python -m pytest` with the venv's bin off PATH: the converter beside that Python is the
    one the lowering uses, not a reason to fail every case."""
    bare = {**os.environ, "PATH": str(tmp_path)}
    code = (
        "from harness.policy.targets import check_tools, get_target; from harness.tools import expose; "
        "check_tools(get_target('vgf')); print(expose('model-converter')); "
        "from executorch.backends.arm.vgf.model_converter import require_model_converter_executable as r; "
        "print(r())"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=bare)
    assert proc.returncode == 0, proc.stderr
    found, executorch_uses = proc.stdout.split()
    assert Path(found).parent == Path(sys.executable).parent
    assert Path(executorch_uses) == Path(found)


@pytest.mark.lowering
@needs_converter
@pytest.mark.parametrize("descriptor", ["conv2d_ic8_oc8_i12x12_k3_p1_qa8w8", "conv2d_ic4_oc8_g4_i12x12_k3_s2_p1_qfp32"])
def test_a_case_lowers_through_the_converter_and_its_tosa_graph_runs(descriptor):
    from harness.config import parse_descriptor
    from harness.run.execute import run_case

    r = run_case(parse_descriptor(descriptor), 0, "vgf")
    assert r.outcome.value == "pass", r.reason
    assert r.metrics["vgf"]["delegates"] == 1 and r.metrics["vgf"]["bytes"] > 1000  # the converter's .vgf
    assert any(op.endswith("CONV2D") for op in r.tosa_ops)


@pytest.mark.lowering
@needs_converter
def test_a_conversion_the_converter_refuses_names_its_words():
    """bf16 TRANSPOSE_CONV2D carries a BF16 accumulator (bf16-tconv-acc-type): the converter aborts on it."""
    from harness.config import parse_descriptor
    from harness.run.execute import run_case

    r = run_case(parse_descriptor("tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1_qbf16"), 0, "vgf")
    assert r.outcome.value == "known_issue" and r.issue == "bf16-tconv-acc-type"
    assert r.actual_outcome == "lowering_error"
    assert "model-converter exited" in r.reason and "unknown accumulator type" in r.reason and "/tmp" not in r.reason
