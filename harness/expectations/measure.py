"""What the registry's entries meet in stored results: the worst case each covers, and whether it fits.

For every entry, the results it is about (its descriptor, fields and families,
on the ExecuTorch each result ran on), which of them fail the way it lists, the
worst of their metrics, whether each is explained by the entry's signature, and
the bounds the policy's margin gives (`harness.policy.expectations`). This is
how a mismatch entry's bounds are set and re-checked (`python -m harness
registry RESULTS...`), never by hand.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field

from harness.expectations.applies import ANY, backend_of
from harness.expectations.known_issues import KnownIssue, registry
from harness.policy.expectations import lsb_bound, share_bound, sqnr_floor
from harness.policy.targets import TARGETS
from harness.results.case_result import CaseResult


@dataclass
class EntryMeasure:
    issue: KnownIssue
    cases: int = 0  # results it is about
    outcomes: Counter = field(default_factory=Counter)  # their actual outcomes
    explained: int = 0  # of the failures it lists, how many its signature explains
    unexplained: list[str] = field(default_factory=list)  # descriptors of listed failures outside the signature
    releases: set[str] = field(default_factory=set)  # backends the failures were seen on
    worst_lsb: float | None = None
    worst_err: float | None = None
    worst_share: float | None = None
    worst_sqnr: float | None = None
    interior: int = 0  # mismatches with errors inside the image
    border: int = 0  # mismatches with errors on the border
    replay_fits: int = 0  # mismatches within their tolerance of the entry's replayed mechanism
    replay_worst: float | None = None  # the farthest a mismatch lay from it (LSB, or units of the float rule)

    def proposed(self) -> dict:
        """The bounds the policy's margin gives for what was measured."""
        out: dict = {}
        if self.worst_lsb is not None:
            out["max_lsb"] = lsb_bound(self.worst_lsb)
        if self.worst_err is not None:
            out["max_err"] = round(self.worst_err * 1.5, 1)
        if self.worst_share is not None:
            out["max_share"] = share_bound(self.worst_share)
        if self.worst_sqnr is not None:
            out["min_sqnr_db"] = sqnr_floor(self.worst_sqnr)
        out["locus"] = "any" if self.interior else "border" if self.border else "any"
        return out


def _track(m: EntryMeasure, metrics: dict) -> None:
    def worse(old, new, pick):
        return new if old is None else pick(old, new)

    if "max_lsb" in metrics:
        m.worst_lsb = worse(m.worst_lsb, metrics["max_lsb"], max)
    elif "max_err" in metrics:
        m.worst_err = worse(m.worst_err, metrics["max_err"], max)
    if metrics.get("n_total"):
        m.worst_share = worse(m.worst_share, metrics.get("n_over", 0) / metrics["n_total"], max)
    if metrics.get("sqnr_db") is not None:
        m.worst_sqnr = worse(m.worst_sqnr, metrics["sqnr_db"], min)
    where = metrics.get("where") or {}
    m.interior += bool(where.get("interior"))
    m.border += bool(where.get("border")) and not where.get("interior")


def _track_replay(m: EntryMeasure, fit: dict | None) -> None:
    if fit is None:
        return
    m.replay_fits += bool(fit.get("fits"))
    off = fit.get("max_lsb", fit.get("max_err"))
    if off is not None:
        m.replay_worst = off if m.replay_worst is None else max(m.replay_worst, off)


def measure(results: list[CaseResult], any_release: bool = False) -> list[EntryMeasure]:
    """Each registry entry against the results (each on the backend its versions name; with `any_release`, as
    if every entry held everywhere: how to see whether an entry also holds on another release)."""
    found = {i.id: EntryMeasure(i) for i in registry()}
    for r in results:
        family = TARGETS[r.target].family if r.target in TARGETS else "tosa"
        backend = ANY if any_release else backend_of(r.versions, _tree_marker(r.versions))
        judged = reclassify(r, backend)
        if judged.outcome.value == "expected_rejection":
            continue  # a documented refusal: no entry's business
        matching = [i for i in registry() if i.matches(r.descriptor, family, backend)]
        by = (
            next((i for i in matching if i.id == judged.issue), None) if judged.outcome.value == "known_issue" else None
        )
        for issue in matching:
            m = found[issue.id]
            m.cases += 1
            m.outcomes[r.actual_outcome] += 1
            if r.actual_outcome not in issue.outcomes or (by is not None and by is not issue):
                continue  # not its kind of failure, or another entry's
            m.releases.add(r.versions.get("executorch-tree") or r.versions.get("executorch", ""))
            if r.actual_outcome == "mismatch":
                _track(m, r.metrics)
                if issue.mismatch is not None and issue.mismatch.replay:
                    _track_replay(m, r.metrics.get("replays", {}).get(issue.mismatch.replay))
            if by is issue:
                m.explained += 1
            else:
                m.unexplained.append(r.descriptor)
    return list(found.values())


def _tree_marker(versions: dict) -> dict:
    """A result's tree, as its overlay marker would give it (commits contained are not in a result)."""
    tree = versions.get("executorch-tree")
    if not tree:
        return {}
    source, _, commit = tree.rpartition("@")
    return {
        "kind": "tree",
        "source": source,
        "commit": commit.removesuffix("+dirty"),
        "dirty": commit.endswith("+dirty"),
        "version": versions.get("executorch-tree-version", ""),
    }


def reclassify(r: CaseResult, backend=None) -> CaseResult:
    """`r` judged again by today's expectations, on the ExecuTorch it ran on (or `backend`); its reason stands in
    for the error message, which results do not keep (it holds the message and, for a refusal, the
    partitioner's)."""

    from harness.config import parse_descriptor
    from harness.expectations.classify import Observation, classify
    from harness.results.case_result import Outcome

    actual = Outcome(r.actual_outcome or r.outcome.value)
    if actual is Outcome.EXPECTED_REJECTION or actual is Outcome.KNOWN_ISSUE:
        return r  # a result from before actual outcomes were kept: nothing to judge again
    reason = r.reason.split(" [a new failure")[0]
    seen = Observation(
        actual,
        reason,
        r.rule,
        r.metrics,
        r.stage,
        reason,
        r.error_type,
        None if r.error_frames is None else tuple(r.error_frames),
    )
    family = TARGETS[r.target].family if r.target in TARGETS else "tosa"
    backend = backend if backend is not None else backend_of(r.versions, _tree_marker(r.versions))
    verdict = classify(parse_descriptor(r.descriptor), seen, family, backend)
    return dataclasses.replace(
        r,
        outcome=verdict.outcome,
        reason=verdict.reason,
        rejection=verdict.rejection,
        issue=verdict.issue,
        stale=verdict.stale,
    )
