"""Commit bisection over a temporary git repository of the installed Arm backend with a seeded fault.

The repository's commits: c1 the installed `backends/arm`, c2 a README, c3 the
seeded fault (the trailing pad trimmed one row too far when the stride leaves
a remainder), c4 a README, c5 a syntax error in the backend, c6 its revert.
`git bisect run` must name c3, whatever it tests on the way, and leave the
user's checkout as it was.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.bisect.commits import BAD, GOOD, SKIP, bisect_commits, check_repo, try_commit
from harness.config import ConfigError
from harness.overlays import ARM, build, installed_package

pytestmark = pytest.mark.lowering

CASE = "conv1d_n1_ic4_oc8_g1_i20_k3_s2_p1_d1_b1_pmzeros_qfp32_dsnormal_cxnone"  # stride 2 leaves a remainder
PASS_FILE = ARM / "_passes" / "rewrite_conv_pass.py"
# the static branch's return, after the check that SizeAdjustInputPass ran
CORRECT = "            )\n\n        return pad - mod_remainder\n"
FAULTY = "            )\n\n        return pad - mod_remainder - (1 if mod_remainder else 0)\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{path} no longer holds {old!r} once: the seeded fault needs another anchor"
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("executorch")
    _git(repo, "init", "--quiet")
    shutil.copytree(installed_package() / "backends" / "arm", repo / ARM,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    revs = {"c1": _commit(repo, "c1 installed arm backend")}
    (repo / "README").write_text("a\n")
    revs["c2"] = _commit(repo, "c2 readme")
    _edit(repo / PASS_FILE, CORRECT, FAULTY)
    revs["c3"] = _commit(repo, "c3 seeded fault: trim one more row")
    (repo / "README").write_text("b\n")
    revs["c4"] = _commit(repo, "c4 readme")
    init = repo / ARM / "_passes" / "__init__.py"
    init.write_text(init.read_text() + "\nsyntax error(\n")
    revs["c5"] = _commit(repo, "c5 broken import")
    _git(repo, "revert", "--no-edit", "HEAD")
    revs["c6"] = _git(repo, "rev-parse", "HEAD")
    return repo, revs


def test_git_bisect_run_names_the_seeded_commit_and_leaves_the_checkout_alone(history):
    repo, revs = history
    head, status = _git(repo, "rev-parse", "HEAD"), _git(repo, "status", "--porcelain")
    b = bisect_commits(repo, revs["c1"], revs["c6"], CASE)
    assert b.error == "" and b.first_bad == revs["c3"], b
    assert b.subject.startswith("c3 seeded fault") and b.steps
    assert _git(repo, "rev-parse", "HEAD") == head and _git(repo, "status", "--porcelain") == status
    assert "harness-bisect-" not in _git(repo, "worktree", "list")


def test_a_commit_is_good_bad_or_untestable(history, tmp_path):
    repo, revs = history
    tree = tmp_path / "tree"
    _git(repo, "worktree", "add", "--detach", str(tree), revs["c1"])
    try:
        assert try_commit(tree, CASE, 0, "tosa", None, tmp_path / "o")[0] == GOOD
        _git(tree, "checkout", "--quiet", "--detach", revs["c3"])
        code, signature = try_commit(tree, CASE, 0, "tosa", None, tmp_path / "o")
        assert code == BAD and signature.split("/")[0] in ("mismatch", "runner_error", "lowering_error"), signature
        _git(tree, "checkout", "--quiet", "--detach", revs["c5"])
        code, why = try_commit(tree, CASE, 0, "tosa", signature, tmp_path / "o")
        assert code == SKIP and "cannot run under it" in why
    finally:
        _git(repo, "worktree", "remove", "--force", str(tree))


def test_the_overlay_links_everything_but_the_arm_backend(tmp_path):
    src = tmp_path / "arm"
    (src / "_passes").mkdir(parents=True)
    (src / "_passes" / "x.py").write_text("X = 1\n")
    into = build(src, tmp_path / "overlay", {"commit": "c0ffee"})
    pkg = into / "executorch"
    assert (pkg / "exir").is_symlink() and not (pkg / "backends" / "arm").is_symlink()
    assert (pkg / "backends" / "arm" / "_passes" / "x.py").read_text() == "X = 1\n"
    import json

    assert json.loads((pkg / "harness-overlay.json").read_text())["commit"] == "c0ffee"


def test_a_repository_that_is_not_executorch_is_refused(tmp_path, history):
    repo, revs = history
    with pytest.raises(ConfigError, match="not a git checkout"):
        check_repo(tmp_path)
    with pytest.raises(ConfigError, match="invalid revision nope: not a commit"):
        check_repo(repo, "nope")
