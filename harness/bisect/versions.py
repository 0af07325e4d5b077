"""Release bisection: under which ExecuTorch release a case starts to fail (or is fixed).

Each release is installed once into a cached overlay (`harness.overlays`: its
wheel only, torch, tosa-tools and Vela stay the main environment's). The case
runs under a release in a subprocess, `python -m harness run --json` with the
overlay first on PYTHONPATH; the result must name that release (the proof the
overlay was used). The installed release needs no overlay.

A release is good when the case passes under it, bad when it fails with the
bad release's failure signature (`harness.bisect.shrink.Signature`), and
untestable when it cannot be installed, the harness cannot import under it,
the harness's own code failed the case there (`harness_error`: never the
release's doing), or the case fails another way (the verdict says how). Each
trial keeps its signature and says whether it failed the same way as the bad
end. Binary search between --good and --bad skips untestable releases; when
--good is the newer, the search names the release that fixed the case. A
case that passes at both ends gives no bisection but the answer that no
release differs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from harness import overlays
from harness.bisect.search import ASKED, OTHER, search
from harness.config import ConfigError
from harness.overlays import DEFAULT_CACHE, PACKAGE, OverlayError, installed_version
from harness.speedups.state import ENV_OFF

__all__ = ["DEFAULT_CACHE", "OverlayError", "available_releases", "between", "bisect_releases", "installed_version"]


def _key(v: str) -> Version:
    return Version(v)


def available_releases() -> list[str]:
    """The executorch releases the package index offers for this Python, oldest first (`pip index versions`)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", PACKAGE], capture_output=True, text=True, timeout=300
    )
    match = re.search(r"Available versions: (.*)", done.stdout)
    if done.returncode or not match:
        raise OverlayError(f"pip index versions {PACKAGE} failed: {(done.stderr or done.stdout).strip()[-300:]}")
    return sorted((v.strip() for v in match.group(1).split(",")), key=_key)


def between(releases: list[str], a: str, b: str) -> list[str]:
    """The releases from a to b inclusive, oldest first; ConfigError if either is not a release."""
    for name, v in (("--good", a), ("--bad", b)):
        if v not in releases:
            raise ConfigError(f"invalid {name}={v}: not an {PACKAGE} release; releases: {', '.join(releases)}")
    if a == b:
        raise ConfigError(f"invalid --good={a} --bad={b}: they must be two different releases")
    lo, hi = sorted((releases.index(a), releases.index(b)))
    return releases[lo : hi + 1]


@dataclass
class Trial:
    version: str
    verdict: str  # 'good', 'bad' or 'untestable'
    outcome: str = ""
    signature: str = ""
    detail: str = ""
    seconds: float = 0.0
    overlay_seconds: float = 0.0
    overlay_reused: bool = True
    same_failure: bool = False  # failed with the bad end's signature


def run_case_under(
    path: Path | None, descriptor: str, seed: int, target: str, timeout: float = 1800
) -> tuple[dict | None, str]:
    """The case's JSON result under the overlay at `path` (None: the installed release), or None and why.

    The child runs the plain flow, speed-ups off: their proof is per ExecuTorch, so on a commit's fresh overlay it
    would cost more than the one case it speeds up, and a step's verdict then rests on the backend's own code
    alone, never on a speed-up outside its proof sample."""
    env = dict(os.environ, **{ENV_OFF: "1"})
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), *filter(None, [env.get("PYTHONPATH")])])
    cmd = [sys.executable, "-m", "harness", "run", descriptor, "--seed", str(seed), "--target", target, "--json"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"no result in {timeout:.0f} s"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode not in (0, 1) or not lines:
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:] or ["no output"]
        return None, f"the harness cannot run under it (exit {done.returncode}): {tail[0][:300]}"
    return json.loads(lines[-1]), ""


def judge_release(version: str, result: dict | None, why: str, bad_signature: str | None) -> tuple[str, str]:
    """(verdict, detail) of one release's result against the bad release's signature (None: any failure is bad)."""
    if result is None:
        return "untestable", why
    ran = result.get("versions", {}).get(PACKAGE)
    if ran != version:
        return "untestable", f"the case ran under {PACKAGE} {ran}, not {version}: the overlay did not take"
    if result["actual_outcome"] == "pass":
        return "good", ""
    if result["actual_outcome"] == "harness_error":
        return "untestable", f"the harness's own code failed there: {result.get('reason', '')[:200]}"
    sig = result_signature(result)
    if bad_signature is None or sig == bad_signature:
        return "bad", result.get("reason", "")[:200]
    return "untestable", f"fails another way: {sig}: {result.get('reason', '')[:200]}"


def result_signature(result: dict) -> str:
    from harness.bisect.shrink import signature
    from harness.results.case_result import CaseResult

    return str(signature(CaseResult.from_dict(result)))


@dataclass
class ReleaseBisection:
    descriptor: str
    good: str
    bad: str
    direction: str  # 'regression' (good is older) or 'fix' (good is newer)
    releases: list[str]
    trials: list[Trial] = field(default_factory=list)
    first: str = ""  # the first bad release (regression) or the first good one (fix)
    candidates: list[str] = field(default_factory=list)  # when untestable releases leave it open
    error: str = ""
    signature: str = ""  # the bad end's failure
    no_difference: bool = False  # the case passes at both ends: no release to name


def bisect_releases(
    descriptor: str,
    good: str,
    bad: str,
    seed: int = 0,
    target: str = "tosa",
    cache: Path = DEFAULT_CACHE,
    releases: list[str] | None = None,
    say=None,
) -> ReleaseBisection:
    """Verify both ends, then binary-search the releases between them."""
    releases = between(releases if releases is not None else available_releases(), good, bad)
    direction = "regression" if _key(good) < _key(bad) else "fix"
    report = ReleaseBisection(descriptor, good, bad, direction, releases)

    def trial(version: str, bad_signature: str | None) -> Trial:
        start = time.perf_counter()
        try:
            built = overlays.release(version, cache)
            path, spent, reused = built.path, built.seconds, built.reused
        except OverlayError as e:
            t = Trial(version, "untestable", detail=str(e), seconds=time.perf_counter() - start)
        else:
            result, why = run_case_under(path, descriptor, seed, target)
            verdict, detail = judge_release(version, result, why, bad_signature)
            sig = result_signature(result) if result and result["actual_outcome"] != "pass" else ""
            t = Trial(
                version,
                verdict,
                result["actual_outcome"] if result else "",
                sig,
                detail,
                time.perf_counter() - start,
                spent,
                reused,
                same_failure=bool(bad_signature) and sig == bad_signature,
            )
        report.trials.append(t)
        if say:
            say(t)
        return t

    end = trial(bad, None)
    if end.verdict == "good":
        start = trial(good, None)
        if start.verdict == "good":
            report.no_difference = True
        else:
            report.error = (
                f"the case passes under --bad {bad} and does not under --good {good} "
                f"({start.signature or start.detail}): swap them"
            )
        return report
    if end.verdict != "bad":
        report.error = f"the case cannot be tested under --bad {bad}: {end.detail}"
        return report
    signature = report.signature = end.signature
    end.same_failure = True
    start = trial(good, signature)
    if start.verdict != "good":
        report.error = f"the case does not pass under --good {good}: {start.outcome or ''} {start.detail}".strip()
        return report
    # From the good end to the bad one.
    order = releases if direction == "regression" else releases[::-1]
    verdicts = {"good": OTHER, "bad": ASKED}
    found = search(order, lambda v: verdicts.get(trial(v, signature).verdict, ""))
    if found.open:  # every release left between is untestable: the change is in one of them or at the end
        report.candidates = [order[i] for i in found.open] + [order[found.asked]]
    else:
        report.first = order[found.asked] if direction == "regression" else order[found.other]
    return report
