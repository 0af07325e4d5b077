"""The unit loop's guard (tests/conftest.py): a test outside the `lowering` mark that imports ExecuTorch's
lowering fails, naming the module; a marked one does not."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lowering  # the probe tests import executorch.exir (in a child pytest)

PROBE = """
import pytest

def test_imports_the_lowering_unmarked():
    import executorch.exir  # noqa: F401

@pytest.mark.lowering
def test_imports_it_marked():
    import executorch.exir  # noqa: F401

def test_plain():
    pass
"""


def _child_pytest(tmp_path: Path, name: str, probe: str, *extra: str) -> subprocess.CompletedProcess:
    """pytest in a child, on a folder holding this repository's tests/conftest.py and the `probe` module."""
    tests = tmp_path / "tests"
    tests.mkdir(exist_ok=True)
    shutil.copy(Path(__file__).with_name("conftest.py"), tests / "conftest.py")
    (tests / name).write_text(probe)
    args = ["-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-o", "markers=lowering\nprocesses"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args, "--rootdir", str(tmp_path), str(tests), *extra],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


def test_a_test_outside_the_mark_that_imports_the_lowering_fails_naming_it(tmp_path):
    proc = _child_pytest(tmp_path, "test_probe.py", PROBE, "-rA", "-k", "unmarked or plain")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "FAILED tests/test_probe.py::test_imports_the_lowering_unmarked" in proc.stdout
    assert "a test without the 'lowering' mark imported executorch.exir" in proc.stdout
    assert "PASSED tests/test_probe.py::test_plain" in proc.stdout
    marked = _child_pytest(tmp_path, "test_probe.py", PROBE, "-rA", "-k", "marked and not unmarked")
    assert marked.returncode == 0 and "1 passed" in marked.stdout, marked.stdout[-2000:]


def test_a_module_that_imports_the_lowering_while_collected_stops_a_run_that_selects_no_lowering(tmp_path):
    heavy = "import executorch.exir  # noqa: F401\n\ndef test_x():\n    pass\n"
    proc = _child_pytest(tmp_path, "test_heavy.py", heavy, "-m", "not lowering")
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "collecting the tests imported executorch.exir" in proc.stderr, proc.stderr[-2000:]


PROCESS_PROBE = """
import subprocess
import sys

import pytest

def test_starts_python_unmarked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

@pytest.mark.processes
def test_starts_python_marked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_runs_git_unmarked():
    subprocess.run(["git", "--version"], check=True, capture_output=True)
"""


def test_a_test_outside_the_mark_that_starts_python_fails_naming_the_command(tmp_path):
    proc = _child_pytest(tmp_path, "test_probe.py", PROCESS_PROBE, "-rA")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "FAILED tests/test_probe.py::test_starts_python_unmarked" in proc.stdout, proc.stdout[-2000:]
    assert f"a test without the 'processes' mark started '{sys.executable} -c pass'" in proc.stdout
    assert "PASSED tests/test_probe.py::test_starts_python_marked" in proc.stdout
    assert "PASSED tests/test_probe.py::test_runs_git_unmarked" in proc.stdout
