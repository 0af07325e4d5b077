"""The release page: one tier on every ExecuTorch it has run on, side by side.

For a run, the newest complete run of the same tier, target, seed, filter and
shard on each other ExecuTorch in the history (releases ordered by version,
source trees after them). What each release did is read from each case's
actual outcome (what the backend did, before expectations), so that a
release's fixes and breakages show whatever the registry says about them:

* per release: the counts of actual outcomes and of verdicts;
* per neighbouring pair: the cases fixed (a failure that now passes), broken
  (a pass that now fails), failing another way (another signature), and passing
  with other numbers (another output digest; the change in its worst error or
  SQNR), each with the expectation that explains it where there is one;
* the cases whose result differs anywhere, one row each, one cell per release.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from harness.history.db import COMPLETE, History, RunInfo, backend_label
from harness.history.diff import BehaviourChange, behaviour_changes, worst_number
from harness.report.figures import short
from harness.results.case_result import CaseResult


@dataclass
class Release:
    label: str
    run: RunInfo
    results: dict[str, CaseResult]  # descriptor -> result


@dataclass
class Step:
    older: str
    newer: str
    changes: list[BehaviourChange] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(c.kind == kind for c in self.changes)


def _order(label: str) -> tuple:
    try:
        return (0, Version(label), label)
    except InvalidVersion:
        return (1, Version("0"), label)


def releases_of(history: History, run: RunInfo) -> list[Release]:
    """The run's release and the newest complete run of its kind on each other ExecuTorch, oldest first."""
    found: dict[str, RunInfo] = {backend_label(run.versions): run}
    for s in history.summaries():
        r = s.run
        label = backend_label(r.versions)
        if (
            r.status == COMPLETE
            and s.cases
            and label not in found
            and r.tier == run.tier
            and r.target == run.target
            and r.seed == run.seed
            and r.filter == run.filter
            and r.shard == run.shard
            and r.random == run.random
            and not r.canary
        ):
            found[label] = r
    return [
        Release(label, r, {x.descriptor: x for x in history.results(r.run_id)})
        for label, r in sorted(found.items(), key=lambda kv: _order(kv[0]))
    ]


def cell(r: CaseResult | None) -> str:
    """One release's result of a case, in a few words."""
    if r is None:
        return "-"
    why = r.issue or r.rejection
    return " ".join(filter(None, [r.actual_outcome, f"({why})" if why else "", worst_number(r)]))


def step(older: Release, newer: Release) -> Step:
    return Step(older.label, newer.label, behaviour_changes(list(older.results.values()), list(newer.results.values())))


def page(history: History, run: RunInfo) -> dict | None:
    """What the release page shows; None when the history holds this tier on one ExecuTorch only."""
    rels = releases_of(history, run)
    if len(rels) < 2:
        return None
    steps = [step(a, b) for a, b in zip(rels, rels[1:])]
    differing = sorted({c.descriptor for s in steps for c in s.changes})
    rows = [
        {
            "descriptor": d,
            "cells": [cell(r.results.get(d)) for r in rels],
            "reason": short(
                next(
                    (
                        r.results[d].reason
                        for r in reversed(rels)
                        if d in r.results and r.results[d].actual_outcome != "pass"
                    ),
                    "",
                )
            ),
        }
        for d in differing
    ]
    columns = []
    for r in rels:
        actual: dict[str, int] = {}
        for x in r.results.values():
            actual[x.actual_outcome] = actual.get(x.actual_outcome, 0) + 1
        columns.append(
            {
                "label": r.label,
                "run_id": r.run.run_id,
                "cases": len(r.results),
                "green": sum(x.green for x in r.results.values()),
                "actual": dict(sorted(actual.items())),
            }
        )
    return {"tier": run.tier, "target": run.target, "seed": run.seed, "columns": columns, "steps": steps, "rows": rows}
