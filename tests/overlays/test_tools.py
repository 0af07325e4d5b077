"""`--tools`: another Vela, reference model or ML SDK than the installed one, recorded where it ran."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness.descriptor import ConfigError
from harness.overlays import tools

ROOT = Path(__file__).resolve().parents[2]


def test_specs_are_exact_versions_of_known_tools_and_pinned_takes_the_releases_pins(monkeypatch):
    assert tools.parse(["ethos-u-vela==5.2.0", "tosa-tools==2026.8.0"]) == [
        ("ethos-u-vela", "5.2.0"),
        ("tosa-tools", "2026.8.0"),
    ]
    requires = [
        "torch==2.13.0",
        "tosa-tools==2026.5.0",
        'ethos-u-vela==5.1.0; extra == "ethos-u"',
        'ai-ml-sdk-model-converter==0.10.0; extra == "vgf"',
        "numpy>=2",
    ]
    assert tools.pins(requires) == {
        "tosa-tools": "2026.5.0",
        "ethos-u-vela": "5.1.0",
        "ai-ml-sdk-model-converter": "0.10.0",
    }
    monkeypatch.setattr(tools, "pins", lambda: {"ethos-u-vela": "5.1.0", "tosa-tools": "2026.5.0"})
    assert tools.parse(["ethos-u-vela==5.2.0", "pinned"]) == [("ethos-u-vela", "5.2.0"), ("tosa-tools", "2026.5.0")]
    for bad, why in [
        ("vela==5.2.0", "vela is not a tool the harness overlays"),
        ("ethos-u-vela", "one exact version"),
        ("ethos-u-vela>=5,<6", "one exact version"),
        ("ethos-u-vela==5.2.0; python_version > '3'", "one exact version"),
        ("==5", "not a requirement"),
    ]:
        expected = f"^invalid --tools {re.escape(repr(bad))}: {why}.*expected NAME==VERSION"
        with pytest.raises(ConfigError, match=expected):
            tools.parse([bad])


def test_the_installed_version_needs_no_overlay():
    installed = tools.installed("ethos-u-vela")
    assert installed and tools.install("ethos-u-vela", installed).path is None


def _wheel(folder: Path, name: str, version: str, module: str) -> Path:
    """A minimal wheel of `name==version` holding `module` (its version in `VERSION`), for pip to install offline."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {
        f"{module}/__init__.py": f"VERSION = {version!r}\n",
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def digest(text: str) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()

    record = "".join(f"{path},sha256={digest(text)},{len(text.encode())}\n" for path, text in files.items())
    files[f"{dist}.dist-info/RECORD"] = record + f"{dist}.dist-info/RECORD,,\n"
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name_, text in files.items():
            z.writestr(name_, text)
    return path


@pytest.mark.processes
def test_an_overlaid_tool_is_the_one_imported_and_recorded_here_and_in_children(tmp_path):
    """Installed once into the cache (offline, from a local wheel), first on the path of the verb's process and
    of every process it starts: the results record its version, a child imports its module."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "ethos-u-vela", "9.9.9", "ethosu")
    env = {
        **os.environ,
        "HARNESS_CACHE": str(tmp_path / "cache"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
    }
    verb = (  # what a verb given `--tools` does first (harness.cli.main), then what its results record
        "import sys; from harness.cli.main import use_tools; use_tools(sys.argv[1:])\n"
        "from harness.results.case_result import versions; print(versions()['ethos-u-vela'])\n"
    )
    first = subprocess.run([sys.executable, "-c", verb, "ethos-u-vela==9.9.9"], capture_output=True, text=True, env=env)
    assert "harness: ethos-u-vela 9.9.9 (installed in" in first.stderr and first.stdout.strip() == "9.9.9"
    again = subprocess.run([sys.executable, "-c", verb, "ethos-u-vela==9.9.9"], capture_output=True, text=True, env=env)
    assert "harness: ethos-u-vela 9.9.9 (reused)" in again.stderr  # installed once per version
    child = (
        "from harness.overlays import tools; import os, subprocess, sys\n"
        "tools.activate([tools.install('ethos-u-vela', '9.9.9')])\n"
        "code = 'import harness, ethosu; print(ethosu.VERSION)'\n"
        "print(subprocess.run([sys.executable, '-c', code], capture_output=True, text=True).stdout.strip())\n"
    )
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.stdout.strip() == "9.9.9", out.stderr
