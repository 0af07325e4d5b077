"""Commit bisection: the ExecuTorch commit that made a case fail the way it does, or that fixed it.

The ends name two states. `--bad` is the end the user asks about: the case's
outcome there (a wrong number, a crash, left on the CPU) is its signature
(`harness.bisect.shrink.Signature`). `--good` is the other end, in whatever
state it is (a pass, or "left on the CPU" before a change made it delegated and
wrong). The direction comes from history: when `--good` is an ancestor of
`--bad` the search names the first commit in the asked state (a regression);
when `--bad` is an ancestor of `--good`, the first commit out of it (the fix).
The line searched is `git rev-list --first-parent` between the ends.

Each commit is tried as `--executorch REPO@COMMIT` is: its package files are
read from git into a cached overlay (`harness.overlays.tree`: its own exir,
passes, serializers and Arm backend over the installed wheel's compiled parts),
never checked out, so a partial or blobless clone works and the user's clone,
its branch, index and own bisect state are never touched (an interrupt leaves
nothing to undo). The case runs in a subprocess under that overlay. A commit
whose state is neither end's (a third outcome) is listed with its signature and
skipped, as is one that cannot run (it does not import beside this torch, or
the harness's own code failed there: never the commit's doing).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import overlays
from harness.bisect.search import ASKED, OTHER, search
from harness.bisect.versions import result_signature, run_case_under
from harness.config import ConfigError
from harness.overlays import ARM, DEFAULT_CACHE, git


def check_repo(repo: str | Path, *revs: str) -> Path:
    """The repository's directory (a checkout's top, or a bare repository); ConfigError unless each rev is a
    commit with backends/arm."""
    path = Path(repo).expanduser()
    if not path.is_dir() or git(path, "rev-parse", "--git-dir", check=False).returncode:
        raise ConfigError(f"invalid --repo={repo}: not a git checkout")
    top = git(path, "rev-parse", "--show-toplevel", check=False).stdout.strip()
    top = Path(top) if top else path.resolve()
    for rev in revs:
        if git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False).returncode:
            raise ConfigError(f"invalid revision {rev}: not a commit of {top}")
        if git(top, "cat-file", "-e", f"{rev}:{ARM.as_posix()}", check=False).returncode:
            raise ConfigError(f"invalid revision {rev}: {top} has no {ARM.as_posix()} there (an ExecuTorch checkout?)")
    return top


@dataclass
class Step:
    commit: str
    state: str  # 'asked' (the --bad end's signature), 'other' (the --good end's), 'third', 'untestable'
    signature: str = ""  # 'pass', or the failure's signature
    detail: str = ""
    seconds: float = 0.0


@dataclass
class CommitBisection:
    descriptor: str
    good: str
    bad: str
    direction: str = ""  # 'regression' (--good is an ancestor of --bad) or 'fix' (--bad is an ancestor of --good)
    asked: str = ""  # the signature at --bad
    other: str = ""  # the state at --good ('pass' or a signature)
    first: str = ""  # the first commit in the asked state (regression) or out of it (fix)
    subject: str = ""
    commits: int = 0  # on the line between the ends
    candidates: list[str] = field(default_factory=list)  # when untestable commits leave it open
    steps: list[Step] = field(default_factory=list)
    error: str = ""

    @property
    def third(self) -> list[Step]:
        """Commits met on the way in neither end's state: listed, never guessed."""
        return [s for s in self.steps if s.state == "third"]

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)


def line_between(top: Path, good: str, bad: str) -> tuple[str, list[str]]:
    """The direction and the commits from the --good end to the --bad end, both ends included."""

    def is_ancestor(a: str, b: str) -> bool:
        return git(top, "merge-base", "--is-ancestor", a, b, check=False).returncode == 0

    if is_ancestor(good, bad):
        direction, old, new = "regression", good, bad
    elif is_ancestor(bad, good):
        direction, old, new = "fix", bad, good
    else:
        raise ConfigError(
            f"invalid --good={good[:12]} --bad={bad[:12]}: neither is an ancestor of the other; "
            "name two commits on one line of history"
        )
    line = [old, *git(top, "rev-list", "--first-parent", "--reverse", f"{old}..{new}").stdout.split()]
    if line[-1] != new:  # the newer end is off the first-parent line (a merged branch's commit)
        line = [old, *git(top, "rev-list", "--ancestry-path", "--reverse", f"{old}..{new}").stdout.split()]
    return direction, (line if direction == "regression" else line[::-1])


def state_of(result: dict | None) -> str:
    """'pass' or the failure's signature; for an error, with its message's head (numbers and names of symbols
    left out): one AttributeError of a pass is not another's; '' for a result that says nothing of the commit."""
    if result is None or result.get("actual_outcome") == "harness_error":
        return ""
    if result["actual_outcome"] == "pass":
        return "pass"
    signature = result_signature(result)
    if result.get("error_type"):
        head = (result.get("reason") or "").split(" While executing")[0].split(" [")[0]
        head = re.sub(r"\b[su]?\d+\b", "N", head.split(": ", 2)[-1])[:100]
        signature += f": {head}"
    return signature


def try_commit(top: Path, commit: str, descriptor: str, seed: int, target: str, cache: Path) -> Step:
    """Run the case on `commit`'s own ExecuTorch; the Step's state is left for the caller to set."""
    from harness.expectations.commits import named_commits

    start = time.perf_counter()
    try:
        overlay = overlays.tree(f"{top}@{commit}", cache, named_commits())
    except ConfigError as e:
        return Step(commit, "untestable", detail=str(e), seconds=time.perf_counter() - start)
    result, why = run_case_under(overlay.path, descriptor, seed, target)
    elapsed = time.perf_counter() - start
    if result is None:
        return Step(commit, "untestable", detail=why, seconds=elapsed)
    ran = result.get("versions", {}).get("executorch-tree", "")
    if not ran.endswith(f"@{commit[:12]}"):
        return Step(
            commit,
            "untestable",
            detail=f"the case ran on {ran or 'the installed release'}, not {commit[:12]}: the overlay did not take",
            seconds=elapsed,
        )
    if result["actual_outcome"] == "harness_error":
        return Step(
            commit,
            "untestable",
            detail=f"the harness's own code failed there: {result.get('reason', '')[:200]}",
            seconds=elapsed,
        )
    return Step(commit, "", state_of(result), result.get("reason", "")[:200], elapsed)


def bisect_commits(
    repo: str | Path,
    good: str,
    bad: str,
    descriptor: str,
    seed: int = 0,
    target: str = "tosa",
    say=None,
    cache: Path = DEFAULT_CACHE,
) -> CommitBisection:
    top = check_repo(repo, good, bad)
    report = CommitBisection(descriptor, good, bad)
    good, bad = (git(top, "rev-parse", f"{rev}^{{commit}}").stdout.strip() for rev in (good, bad))
    if good == bad:
        raise ConfigError(f"invalid --good={report.good} --bad={report.bad}: they name the same commit")
    report.direction, order = line_between(top, good, bad)
    report.commits = len(order)

    def trial(commit: str, end: str = "") -> Step:
        step = try_commit(top, commit, descriptor, seed, target, cache)
        if step.state != "untestable":
            step.state = end or (
                ASKED if step.signature == report.asked else OTHER if step.signature == report.other else "third"
            )
        report.steps.append(step)
        if say:
            say(f"{commit[:12]} {step.state:10s} {step.signature or step.detail} ({step.seconds:.0f} s)")
        return step

    end = trial(bad, ASKED)
    if end.state == "untestable" or end.signature == "pass":
        report.error = (
            f"--bad {bad[:12]} is not a failure to bisect: "
            f"{'the case passes there' if end.signature == 'pass' else end.detail}"
        )
        return report
    report.asked = end.signature
    start = trial(good, OTHER)
    if start.state == "untestable":
        report.error = f"the case cannot be tested at --good {good[:12]}: {start.detail}"
        return report
    if start.signature == report.asked:
        report.error = f"the case fails the same way at both ends ({report.asked}): nothing to bisect"
        return report
    report.other = start.signature
    found = search(order, lambda c: trial(c).state)
    if found.open:
        report.candidates = [order[i] for i in found.open] + [order[found.asked]]
    else:
        report.first = order[found.asked] if report.direction == "regression" else order[found.other]
        report.subject = git(top, "log", "-1", "--format=%s", report.first).stdout.strip()
    return report
