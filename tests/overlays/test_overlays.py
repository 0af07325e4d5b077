"""Overlays: another release or a source tree of ExecuTorch laid over the installed one, and what a run records."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import overlays
from harness.config import ConfigError
from harness.expectations.applies import backend_of


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A git checkout holding the installed Arm backend (two commits) and a version.txt."""
    repo = tmp_path_factory.mktemp("executorch")
    _git(repo, "init", "--quiet")
    shutil.copytree(
        overlays.installed_package() / "backends" / "arm",
        repo / overlays.ARM,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    (repo / "version.txt").write_text("1.6.0a0\n")
    commits = {}
    for name in ("first", "second"):
        (repo / "NOTES").write_text(name)
        _git(repo, "add", "-A")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", name)
        commits[name] = _git(repo, "rev-parse", "HEAD")
    return repo, commits


def test_a_tree_overlay_records_its_commit_version_and_what_it_contains(checkout, tmp_path):
    repo, commits = checkout
    o = overlays.resolve(f"{repo}@{commits['first']}", tmp_path, commits=(commits["second"], commits["first"]))
    assert o.kind == "tree" and o.label == f"{repo}@{commits['first'][:12]}"
    marker = json.loads((o.path / "executorch" / overlays.MARKER).read_text())
    assert marker["commit"] == commits["first"] and marker["version"] == "1.6.0a0" and not marker["dirty"]
    assert marker["ancestors"] == {commits["second"]: False, commits["first"]: True}
    backend = backend_of({"executorch": "1.5.1"}, marker)
    assert backend.version == "1.6.0a0" and backend.contains(commits["first"][:12]) is True
    assert (o.path / "executorch" / "exir").is_symlink() and not (
        o.path / "executorch" / "backends" / "arm"
    ).is_symlink()


def test_a_working_tree_is_copied_as_it_is_and_marked_dirty(checkout, tmp_path):
    repo, commits = checkout
    pass_file = repo / overlays.ARM / "_passes" / "rewrite_conv_pass.py"
    original = pass_file.read_text()
    pass_file.write_text(original + "\n# an uncommitted change\n")
    try:
        o = overlays.resolve(str(repo), tmp_path)
    finally:
        pass_file.write_text(original)
    assert o.label == f"{repo}@{commits['second'][:12]}+dirty"
    copied = o.path / "executorch" / overlays.ARM / "_passes" / "rewrite_conv_pass.py"
    assert copied.read_text().endswith("# an uncommitted change\n")  # the run sees the tree as it was at its start


@pytest.mark.parametrize(
    "spec, message",
    [
        ("/no/such/dir", "invalid --executorch=/no/such/dir: not a release (e.g. 1.4.1) and not a git checkout"),
        ("{tmp}", "not a release (e.g. 1.4.1) and not a git checkout"),
        ("{repo}@nope", "nope is not a commit of"),
    ],
)
def test_a_bad_executorch_is_one_line(spec, message, checkout, tmp_path):
    repo, _ = checkout
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        overlays.resolve(spec.format(tmp=tmp_path, repo=repo), tmp_path / "cache")
    assert "\n" not in str(e.value)


def test_the_installed_release_needs_no_overlay():
    o = overlays.resolve("installed")
    assert (o.path, o.kind) == (None, "installed") and overlays.resolve(o.label).path is None


def test_an_overlay_cannot_replace_an_executorch_already_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, "executorch", object())
    with pytest.raises(ConfigError, match="before ExecuTorch is imported"):
        overlays.activate(overlays.Overlay(Path("/x"), "release", "1.4.1"))


@pytest.mark.lowering
def test_a_case_runs_on_a_source_tree_and_its_result_says_which(checkout, tmp_path):
    repo, commits = checkout
    env = dict(os.environ, HARNESS_CACHE=str(tmp_path / "cache"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "conv2d_ic4_oc8_i8x8_k3_p1_qa8w8",
            "--json",
            "--executorch",
            f"{repo}@{commits['second']}",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["outcome"] == "pass"
    assert result["versions"]["executorch-tree"] == f"{repo}@{commits['second'][:12]}"
    assert result["versions"]["executorch-tree-version"] == "1.6.0a0"
    assert f"harness: executorch {repo}@{commits['second'][:12]} (tree" in done.stderr


def _needs_a_newer_core(repo: Path, tmp_path: Path) -> Path:
    """A copy of the checkout whose Arm backend imports a name the installed core does not have."""
    broken = tmp_path / "newer"
    shutil.copytree(repo, broken)
    init = broken / overlays.ARM / "__init__.py"
    init.write_text(init.read_text() + "\nfrom executorch.exir import a_name_only_a_newer_core_has  # noqa\n")
    return broken


@pytest.mark.lowering
def test_a_tree_that_needs_a_newer_core_stops_the_run_with_one_line(checkout, tmp_path):
    broken = _needs_a_newer_core(checkout[0], tmp_path)
    env = dict(os.environ, HARNESS_CACHE=str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "conv2d_ic4_oc8_i8x8_k3_p1_qfp32", "--executorch", str(broken)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    line = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "cannot import what the harness needs of ExecuTorch" in line[0]
    assert "a_name_only_a_newer_core_has" in line[0]


@pytest.mark.lowering
def test_a_sweep_on_a_tree_that_cannot_import_stops_with_one_line_and_records_nothing(checkout, tmp_path):
    broken = _needs_a_newer_core(checkout[0], tmp_path)
    env = dict(os.environ, HARNESS_CACHE=str(tmp_path / "cache"))
    db = tmp_path / "h.sqlite"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "sweep",
            "--filter",
            "qfp32_dsnormal_cxnone$",
            "-j",
            "1",
            "--executorch",
            str(broken),
            "--db",
            str(db),
            "--results",
            str(tmp_path / "r.jsonl"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "a_name_only_a_newer_core_has" in [x for x in done.stderr.splitlines() if x.startswith("error:")][0]
    from harness.history.db import History

    with History(db) as h:
        assert h.summaries() == []


@pytest.mark.processes
def test_a_source_tree_runs_on_its_own_core_over_the_installed_compiled_parts(tmp_path):
    """exir, the passes and serializers come from the tree (a change to its exir is what imports); the compiled
    parts from the installed wheel; the marker and its one line say so."""
    from tests import executorch_tree as et

    repo = tmp_path / "executorch"
    repo.mkdir()
    et.make(repo, version="1.7.0")
    init = repo / "exir" / "__init__.py"
    init.write_text(init.read_text() + "\nHARNESS_OWN_CORE_PROBE = 'from the tree'\n")
    head = et.commit(repo, "a change to the tree's exir")
    o = overlays.resolve(f"{repo}@{head}", tmp_path / "cache")
    package = o.path / "executorch"
    marker = json.loads((package / overlays.MARKER).read_text())
    assert (
        marker["core"] == "tree"
        and "exir" in marker["from_tree"]
        and marker["compiled_from"] == overlays.installed_version()
    )
    assert not (package / "exir").is_symlink() and (package / "version.py").read_text().startswith(
        "__version__ = '1.7.0'"
    )
    compiled = [p for p in (package / "extension" / "pybindings").iterdir() if p.name.endswith(".so")]
    assert compiled and all(p.is_symlink() for p in compiled)
    assert overlays.origin_line(marker).startswith("its own Python core from the tree")
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import executorch.exir as e, executorch.version as v; print(e.HARNESS_OWN_CORE_PROBE, v.__version__)",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(o.path)),
    )
    assert probe.stdout.strip() == "from the tree 1.7.0", probe.stderr[-1000:]


def test_a_tree_without_the_package_layout_says_its_core_is_the_installed_one(checkout, tmp_path):
    repo, commits = checkout
    o = overlays.resolve(f"{repo}@{commits['first']}", tmp_path)
    marker = json.loads((o.path / "executorch" / overlays.MARKER).read_text())
    assert marker["core"] == f"installed {overlays.installed_version()}" and marker["from_tree"] == ["backends/arm"]
    assert "not its own core" in overlays.origin_line(marker)
    assert (o.path / "executorch" / "backends" / "transforms").is_symlink()
