"""`doctor`: one screen on what this machine can do, and what to install for what it cannot."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.cli.doctor import TOOLS, paths, tools


def test_every_tool_says_what_it_is_for_and_how_to_get_it(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    found = tools()
    assert list(found) == [name for name, *_ in TOOLS]
    for name in ("chromium", "git"):  # executables: none on this PATH
        assert found[name]["found"] is False and found[name]["get"] and found[name]["for"]


def test_the_paths_say_where_things_go_and_whether_they_can_be_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert paths() == {
        "reports": "reports/<tier>/ (results.jsonl, summary.md, index.html, junit.xml)",
        "history": "reports/history.sqlite",
        "problem": "",
    }
    assert not (tmp_path / "reports").exists(), "doctor makes nothing"
    (tmp_path / "reports").write_text("a file where the directory should be")
    assert "it is a file; a directory is needed" in paths()["problem"]


@pytest.mark.lowering
def test_doctor_fits_one_screen_and_its_json_holds_every_section():
    text = subprocess.run([sys.executable, "-m", "harness", "doctor"], capture_output=True, text=True, check=True)
    lines = text.stdout.splitlines()
    assert lines[0] == "versions:" and len(lines) <= 45 and text.stderr == ""
    assert any(line.startswith("targets ready: tosa") for line in lines)
    facts = json.loads(
        subprocess.run(
            [sys.executable, "-m", "harness", "doctor", "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    assert {"tools", "paths", "versions", "executorch", "speedups", "targets"} <= set(facts)
    assert facts["targets"]["tosa"]["available"] is True


@pytest.mark.lowering
def test_a_target_whose_lowering_lacks_its_tool_is_not_ready(monkeypatch):
    """doctor said `vgf` was ready while saying the model converter was missing: ready means it can run."""
    import harness.tools
    from harness.cli.doctor import facts

    real = harness.tools.locate
    monkeypatch.setattr(harness.tools, "locate", lambda name: None if name == "model-converter" else real(name))
    targets = facts()["targets"]
    assert targets["vgf"]["available"] is False and "needs model-converter" in targets["vgf"]["why"]
    assert targets["tosa"]["available"] is True
