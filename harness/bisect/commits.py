"""Commit bisection: the ExecuTorch commit whose Arm backend makes a case fail.

`git bisect run` over a checkout of ExecuTorch, in a temporary worktree of
it (the user's checkout, its branch and its own bisect state stay as they
are). At each commit the checkout's `backends/arm` Python sources are laid
over the installed ExecuTorch (`harness.overlays.build`). The case runs
in a subprocess under that overlay (`harness.bisect.versions.run_case_under`)
and the step exits 0 (passes), 1 (fails with the bad commit's signature) or
125 (cannot be tested: the sources do not import, or it fails another way),
which is `git bisect run`'s protocol; a `harness_error` (the harness's own code
failed) is 125 too, never good or bad. The rest of ExecuTorch (exir, the
compiled parts) stays the installed release's, so the bisection is over the
Arm backend's history only; a commit that needs a newer core is untestable.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.bisect.versions import run_case_under
from harness.config import ConfigError
from harness.overlays import ARM, build, tree_facts

GOOD, BAD, SKIP = 0, 1, 125


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and done.returncode:
        raise ConfigError(f"git {' '.join(args)} failed in {repo}: {done.stderr.strip().splitlines()[-1:]}")
    return done


def check_repo(repo: str | Path, *revs: str) -> Path:
    """The checkout's top directory; ConfigError if it is not a git checkout with backends/arm at every rev."""
    path = Path(repo)
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if not path.is_dir() or done.returncode:
        raise ConfigError(f"invalid --repo={repo}: not a git checkout")
    top = Path(done.stdout.strip())
    for rev in revs:
        if _git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False).returncode:
            raise ConfigError(f"invalid revision {rev}: not a commit of {top}")
        if _git(top, "cat-file", "-e", f"{rev}:{ARM.as_posix()}", check=False).returncode:
            raise ConfigError(f"invalid revision {rev}: {top} has no {ARM.as_posix()} there (an ExecuTorch checkout?)")
    return top


@dataclass
class CommitBisection:
    descriptor: str
    good: str
    bad: str
    first_bad: str = ""  # the commit's hash
    subject: str = ""
    candidates: list[str] = field(default_factory=list)  # when skipped commits leave it open
    steps: list[str] = field(default_factory=list)  # git bisect's log, one line per tested commit
    error: str = ""


def try_commit(tree: Path, descriptor: str, seed: int, target: str, signature: str | None, scratch: Path) -> tuple[int, str]:
    """Exit code for `git bisect run` and a line saying why, for the checkout at `tree`."""
    from harness.bisect.versions import _signature

    from harness.expectations.commits import named_commits

    overlay = build(tree / ARM, scratch, tree_facts(tree, None, named_commits()))
    result, why = run_case_under(overlay, descriptor, seed, target)
    if result is None:
        return SKIP, why
    if result["actual_outcome"] == "pass":
        return GOOD, "pass"
    if result["actual_outcome"] == "harness_error":  # the harness's own failure says nothing of the commit
        return SKIP, f"the harness's own code failed there: {result.get('reason', '')[:200]}"
    sig = _signature(result)
    if signature is None or sig == signature:
        return BAD, sig
    return SKIP, f"fails another way: {sig}"


def bisect_commits(repo: str | Path, good: str, bad: str, descriptor: str, seed: int = 0, target: str = "tosa",
                   say=None) -> CommitBisection:
    top = check_repo(repo, good, bad)
    report = CommitBisection(descriptor, good, bad)
    good, bad = (_git(top, "rev-parse", f"{rev}^{{commit}}").stdout.strip() for rev in (good, bad))
    with tempfile.TemporaryDirectory(prefix="harness-bisect-") as tmp:
        work, scratch = Path(tmp) / "tree", Path(tmp) / "overlay"
        _git(top, "worktree", "add", "--detach", str(work), bad)
        try:
            ends = {}
            for name, rev, wanted in (("bad", bad, None), ("good", good, None)):
                _git(work, "checkout", "--quiet", "--detach", rev)
                code, why = try_commit(work, descriptor, seed, target, wanted, scratch)
                ends[name] = (code, why)
                if say:
                    say(f"{name} end {rev}: {why}")
            if ends["bad"][0] != BAD:
                report.error = f"the case does not fail at --bad {bad}: {ends['bad'][1]}"
                return report
            if ends["good"][0] != GOOD:
                report.error = f"the case does not pass at --good {good}: {ends['good'][1]}"
                return report
            signature = ends["bad"][1]
            _git(work, "bisect", "start", bad, good)
            step = [sys.executable, "-m", "harness", "bisect", "commit-step", descriptor, "--seed", str(seed),
                    "--target", target, "--signature", signature, "--scratch", str(scratch)]
            done = _git(work, "bisect", "run", *step, check=False)
            log = _git(work, "bisect", "log", check=False).stdout
            report.steps = [line for line in log.splitlines() if line.startswith(("# good", "# bad", "# skip"))]
            found = re.search(r"^([0-9a-f]{40}) is the first bad commit", done.stdout, re.M)
            if found:
                report.first_bad = found.group(1)
                report.subject = _git(work, "log", "-1", "--format=%s", report.first_bad).stdout.strip()
            elif "skipped" in done.stdout:
                report.candidates = re.findall(r"^([0-9a-f]{40})$", done.stdout, re.M)
            else:
                report.error = f"git bisect run ended without a verdict: {(done.stdout + done.stderr).strip()[-300:]}"
        finally:
            _git(work, "bisect", "reset", "--quiet", check=False)
            _git(top, "worktree", "remove", "--force", str(work), check=False)
    return report
