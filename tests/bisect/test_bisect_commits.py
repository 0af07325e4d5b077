"""Commit bisection over a repository laid out as ExecuTorch's source tree (`tests/executorch_tree.py`), each step
on the commit's own core, read from git without a checkout.

The history: c1 the installed package, c2 a note, c3 a seeded fault (the trailing pad trimmed one row too far when
the stride leaves a remainder), c4 a note, c5 a syntax error in the backend, c6 its revert, c7 the fault fixed, c8
a note. A second branch of history starts from c1: d1 the conv left on the CPU, d2 a note, d3 delegated again with
the fault (left on the CPU, then wrong). A 2 MB blob that no package needs sits in c1, so a clone without it (as a
partial clone lacks large blobs) must still bisect.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.bisect.commits import bisect_commits, check_repo, line_between, state_of
from harness.config import ConfigError
from harness.overlays import ARM
from tests import executorch_tree as et

pytestmark = pytest.mark.lowering

CASE = "conv1d_n1_ic4_oc8_g1_i20_k3_s2_p1_d1_b1_pmzeros_qfp32_dsnormal_cxnone"  # stride 2 leaves a remainder
PASS_FILE = ARM / "_passes" / "rewrite_conv_pass.py"
SUPPORT_FILE = ARM / "operator_support" / "convolution_support.py"
CORRECT = "            )\n\n        return pad - mod_remainder\n"
FAULTY = "            )\n\n        return pad - mod_remainder - (1 if mod_remainder else 0)\n"
SUPPORTED = "        transposed, output_padding, groups = self._get_conv_params(node)\n"
REFUSED = SUPPORTED + "        return False  # seeded: every conv left on the CPU\n"


def _note(repo: Path, text: str) -> str:
    (repo / "NOTES").write_text(text)
    return et.commit(repo, f"note {text}")


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("executorch")
    (repo / "examples").mkdir()
    (repo / "examples" / "weights.bin").write_bytes(os.urandom(2 << 20))  # no package file: never read
    revs = {"c1": et.make(repo)}
    revs["c2"] = _note(repo, "a")
    et.edit(repo / PASS_FILE, CORRECT, FAULTY)
    revs["c3"] = et.commit(repo, "c3 seeded fault: trim one more row")
    revs["c4"] = _note(repo, "b")
    init = repo / ARM / "_passes" / "__init__.py"
    init.write_text(init.read_text() + "\nsyntax error(\n")
    revs["c5"] = et.commit(repo, "c5 broken import")
    et.git(repo, "revert", "--no-edit", "HEAD")
    revs["c6"] = et.git(repo, "rev-parse", "HEAD")
    et.edit(repo / PASS_FILE, FAULTY, CORRECT)
    revs["c7"] = et.commit(repo, "c7 the fix")
    revs["c8"] = _note(repo, "c")
    et.git(repo, "checkout", "--quiet", "-b", "other", revs["c1"])
    et.edit(repo / SUPPORT_FILE, SUPPORTED, REFUSED)
    revs["d1"] = et.commit(repo, "d1 conv left on the CPU")
    revs["d2"] = _note(repo, "d")
    et.edit(repo / SUPPORT_FILE, REFUSED, SUPPORTED)
    et.edit(repo / PASS_FILE, CORRECT, FAULTY)
    revs["d3"] = et.commit(repo, "d3 delegated again, and wrong")
    et.git(repo, "checkout", "--quiet", "master" if "master" in et.git(repo, "branch") else "main")
    return repo, revs


def _partial_clone(repo: Path, into: Path) -> Path:
    """A clone without the large blob, whose origin is then gone: a checkout of c1 cannot be made from it."""
    et.git(repo, "config", "uploadpack.allowFilter", "true")
    subprocess.run(
        ["git", "clone", "--quiet", "--bare", "--filter=blob:limit=1m", f"file://{repo}", str(into)],
        check=True,
        capture_output=True,
    )
    et.git(into, "remote", "set-url", "origin", f"file://{repo}-gone")
    return into


def test_a_partial_clone_without_a_large_blob_is_bisected_to_the_seeded_commit(history, tmp_path):
    repo, revs = history
    clone = _partial_clone(repo, tmp_path / "partial.git")
    worktree = subprocess.run(
        ["git", "-C", str(clone), "worktree", "add", "--detach", str(tmp_path / "w"), revs["c1"]],
        capture_output=True,
        text=True,
    )
    assert worktree.returncode != 0, "the clone must lack a blob a full checkout needs"
    b = bisect_commits(clone, revs["c1"], revs["c6"], CASE, cache=tmp_path / "cache")
    assert b.error == "" and b.direction == "regression" and b.first == revs["c3"], b
    assert b.subject.startswith("c3 seeded fault") and b.other == "pass"
    assert [s.commit for s in b.steps if s.state == "untestable"] in ([], [revs["c5"]])


def test_a_fix_is_bisected_when_good_is_the_newer_end(history, tmp_path):
    repo, revs = history
    b = bisect_commits(repo, revs["c8"], revs["c4"], CASE, cache=tmp_path / "cache")
    assert b.error == "" and b.direction == "fix" and b.first == revs["c7"], b
    assert b.asked.startswith(("mismatch", "runner_error")) and b.other == "pass"
    assert all(s.commit != revs["c5"] or s.state == "untestable" for s in b.steps)


def test_left_on_the_cpu_then_wrong_is_bisected(history, tmp_path):
    repo, revs = history
    b = bisect_commits(repo, revs["d1"], revs["d3"], CASE, cache=tmp_path / "cache")
    assert b.error == "" and b.first == revs["d3"], b
    assert b.other.startswith("not_delegated") and b.asked.startswith(("mismatch", "runner_error")), b


def test_a_third_state_on_the_way_is_listed_not_placed(history, tmp_path, monkeypatch):
    """c1 passes, c3 fails; asking about c3's failure from c1 over a line whose middle fails another way."""
    from harness.bisect import commits

    repo, revs = history
    real = commits.try_commit

    def third_at_c2(top, commit, *rest):
        step = real(top, commit, *rest)
        if commit == revs["c2"]:
            step.signature = "lowering_error/RuntimeError/somewhere-else"
        return step

    monkeypatch.setattr(commits, "try_commit", third_at_c2)
    b = bisect_commits(repo, revs["c1"], revs["c4"], CASE, cache=tmp_path / "cache")
    assert [s.commit for s in b.third] == [revs["c2"]], b
    assert b.first == revs["c3"] or revs["c2"] in b.candidates, b


def test_an_interrupted_bisection_leaves_the_clone_its_branch_and_its_own_bisect_as_they_were(history, tmp_path):
    repo, revs = history
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True, capture_output=True)
    et.git(clone, "bisect", "start", revs["c8"], revs["c1"])  # the user's own bisection, under way
    (clone / "NOTES").write_text("an uncommitted edit\n")
    before = {
        k: et.git(clone, *a)
        for k, a in {
            "head": ("rev-parse", "HEAD"),
            "status": ("status", "--porcelain"),
            "log": ("bisect", "log"),
            "wt": ("worktree", "list"),
        }.items()
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "bisect",
            "commits",
            CASE,
            "--repo",
            str(clone),
            "--good",
            revs["c1"],
            "--bad",
            revs["c6"],
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, HARNESS_CACHE=str(tmp_path / "cache")),
        start_new_session=True,
        # a shell starts a foreground job with SIGINT at its default (CI may run us with it ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    first = proc.stdout.readline()  # the first tried commit's line: the bisection is under way
    assert first.strip(), "the bisection printed nothing"
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    after = {
        k: et.git(clone, *a)
        for k, a in {
            "head": ("rev-parse", "HEAD"),
            "status": ("status", "--porcelain"),
            "log": ("bisect", "log"),
            "wt": ("worktree", "list"),
        }.items()
    }
    assert after == before


def test_the_line_between_two_commits_and_its_direction(history):
    repo, revs = history
    direction, order = line_between(repo, revs["c1"], revs["c4"])
    assert direction == "regression" and order == [revs[c] for c in ("c1", "c2", "c3", "c4")]
    direction, order = line_between(repo, revs["c8"], revs["c6"])
    assert direction == "fix" and order == [revs[c] for c in ("c8", "c7", "c6")]
    with pytest.raises(ConfigError, match="neither is an ancestor of the other"):
        line_between(repo, revs["c4"], revs["d3"])


def test_a_state_is_pass_or_a_signature_and_a_harness_error_says_nothing():
    assert state_of(None) == "" and state_of({"actual_outcome": "harness_error"}) == ""
    assert state_of({"actual_outcome": "pass"}) == "pass"
    failed = {
        "descriptor": CASE,
        "seed": 0,
        "outcome": "lowering_error",
        "actual_outcome": "lowering_error",
        "stage": "lower",
        "error_type": "AttributeError",
        "metrics": {},
    }
    numel = state_of({**failed, "reason": "lower: AttributeError: 'SymInt' object has no attribute 'numel'"})
    name = state_of({**failed, "reason": "lower: AttributeError: 'TosaArg' object has no attribute 'name'"})
    assert numel == "lowering_error/lower/AttributeError: 'SymInt' object has no attribute 'numel'" and numel != name
    assert state_of({**failed, "reason": "lower: AttributeError: no producer for s53 [a new failure: x]"}) == state_of(
        {**failed, "reason": "lower: AttributeError: no producer for s7"}
    )  # symbols left out


def test_a_repository_that_is_not_executorch_is_refused(tmp_path, history):
    repo, revs = history
    with pytest.raises(ConfigError, match="not a git checkout"):
        check_repo(tmp_path)
    with pytest.raises(ConfigError, match="invalid revision nope: not a commit"):
        check_repo(repo, "nope")
