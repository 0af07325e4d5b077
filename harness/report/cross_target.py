"""Comparisons across targets, from the run history: what one target refuses that another runs, and
where a target's TOSA graph differs from the generic lowering's for the same case."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from harness.history.db import COMPLETE, History, RunInfo
from harness.results.case_result import CaseResult, Outcome

REFUSALS = (Outcome.EXPECTED_REJECTION, Outcome.NOT_DELEGATED, Outcome.LOWERING_ERROR, Outcome.KNOWN_ISSUE)


@dataclass
class Refusal:
    descriptor: str
    here: str  # what became of it on this run's target
    there: str  # the other target, where it passed


def latest_runs_of_other_targets(history: History, run: RunInfo, prefix: str) -> dict[str, str]:
    """The newest complete run of the same tier, filter and shard on each other target named `prefix*`."""
    out: dict[str, str] = {}
    for s in history.summaries():
        r = s.run
        if (
            r.status == COMPLETE
            and r.target != run.target
            and r.target.startswith(prefix)
            and r.tier == run.tier
            and r.filter == run.filter
            and r.shard == run.shard
            and r.target not in out
            and s.cases
        ):
            out[r.target] = r.run_id
    return out


def refused_here_run_there(here: list[CaseResult], there: list[CaseResult], there_name: str) -> list[Refusal]:
    passed = {r.descriptor for r in there if r.outcome is Outcome.PASS}
    return [
        Refusal(r.descriptor, r.rejection or r.issue or r.actual_outcome, there_name)
        for r in here
        if r.outcome in REFUSALS and r.descriptor in passed
    ]


def _ops(r: CaseResult) -> Counter:
    return Counter(r.tosa_ops)


def tosa_differences(here: list[CaseResult], generic: list[CaseResult]) -> list[dict]:
    """Cases both lowered, whose TOSA operators differ: what is extra here, what is missing."""
    theirs = {r.descriptor: r for r in generic if r.tosa_ops}
    out = []
    for r in here:
        g = theirs.get(r.descriptor)
        if g is None or not r.tosa_ops or _ops(r) == _ops(g):
            continue
        extra, missing = _ops(r) - _ops(g), _ops(g) - _ops(r)
        out.append(
            {
                "descriptor": r.descriptor,
                "extra": " ".join(sorted(extra.elements())),
                "missing": " ".join(sorted(missing.elements())),
            }
        )
    return out
