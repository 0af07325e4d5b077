"""The standalone repro script: written for a case, it passes on the clean backend and fails under a canary.

The canary is injected around the script by a wrapper process (the script itself imports nothing of the
harness: that is the point of it), exactly as a faulty backend would be installed under it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config import ConfigError, parse_descriptor
from harness.repro.script import check_reproducible, write_repro

WRAPPER = """
import runpy, sys
from harness.faults.canaries import injected
name, path = sys.argv[1], sys.argv[2]
sys.argv = [path]
with injected(name):
    runpy.run_path(path, run_name="__main__")
"""


def _run(script: Path, canary: str = "") -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", WRAPPER, canary, str(script)] if canary else [sys.executable, str(script)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=script.parent.parent, timeout=600)


CASES = [  # (descriptor, target, a canary that breaks it)
    ("conv2d_ic4_oc8_g2_i9x10_k3_s1_p1_qa8w8-pt", "tosa", "grouped-slices"),
    ("conv2d_ic4_oc8_i9x10_k3_s1_p1_b0_qfp32", "tosa", "inserted-bias"),
    ("conv2d_ic4_oc8_i9x10_k3_s1_p1_qfp8e4m3", "tosa", "fp8-bias"),
    ("conv1d_ic4_oc8_i20_k3_s2_p1_qa8w8", "ethos-u55-128", "per-channel-rescale"),
]


@pytest.mark.lowering
@pytest.mark.parametrize("descriptor, target, canary", CASES, ids=[f"{t}-{c}" for _, t, c in CASES])
def test_the_script_passes_clean_and_fails_on_a_canary(tmp_path, descriptor, target, canary):
    script, program, data = write_repro(parse_descriptor(descriptor), tmp_path / "bug" / "case.py", 0, target)
    assert program.exists() and data.exists() and script.parent == program.parent == data.parent
    imported = {
        n.names[0].name.split(".")[0] for n in ast.walk(ast.parse(script.read_text())) if isinstance(n, ast.Import)
    } | {
        n.module.split(".")[0]
        for n in ast.walk(ast.parse(script.read_text()))
        if isinstance(n, ast.ImportFrom) and n.module
    }
    assert imported <= {
        "__future__",
        "sys",
        "tempfile",
        "pathlib",
        "numpy",
        "torch",
        "executorch",
        "torchao",
        "tosa",
        "tosa_reference_model",
    }, imported
    clean = _run(script)
    assert clean.returncode == 0 and "PASS" in clean.stdout, clean.stdout + clean.stderr[-2000:]
    broken = _run(script, canary)
    assert broken.returncode == 1, broken.stdout + broken.stderr[-2000:]
    assert "FAIL" in broken.stdout + broken.stderr


def test_dynamic_and_control_flow_cases_are_refused_in_one_line():
    with pytest.raises(ConfigError, match="static cases only, not dy spatial"):
        check_reproducible(parse_descriptor("conv2d_ic4_oc8_i12x12_k3_s1_p1_qfp32_cxrelu_dyspatial"))
    with pytest.raises(ConfigError, match="cannot write cx cond"):
        check_reproducible(parse_descriptor("conv2d_ic4_oc8_i12x12_k3_s1_p1_qfp32_cxcond"))


def test_the_script_must_be_a_python_file(tmp_path):
    with pytest.raises(ConfigError, match="must end in .py"):
        write_repro(parse_descriptor("conv2d_ic4_oc8_i9x10_k3_s1_p1_qfp32"), tmp_path / "case.txt")
