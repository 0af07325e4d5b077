"""The release page: one tier on every ExecuTorch and tool version it has run on, side by side.

For a run, the newest complete run of the same tier, target, seed, filter and
shard on each other setup in the history: an ExecuTorch (releases ordered by
version, source trees after them) with the tools it ran with (Vela, the
reference model, the ML SDK wheels: `--tools`), so that a Vela bump on one
release is a column of its own. A column's label names the tools only where
the page's setups differ in them. What each setup did is read from each case's
actual outcome (what the backend did, before expectations), so that a
release's fixes and breakages show whatever the registry says about them:

* per release: the counts of actual outcomes and of verdicts;
* per neighbouring pair: the cases fixed (a failure that now passes), broken
  (a pass that now fails), failing another way (another signature), and passing
  with other numbers (another output digest; the change in its worst error or
  SQNR), each with the expectation that explains it where there is one;
* per setup on an Ethos-U target, what the NPU pays: Vela's cycles and operators
  summed over the cases it compiled; per pair, every estimate that moved past its
  threshold (harness.policy.cost), case by case;
* the cases whose result differs anywhere, one row each, one cell per release.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from harness.history.db import COMPLETE, History, RunInfo, backend_label
from harness.history.diff import BehaviourChange, CostChange, behaviour_changes, cost_changes, worst_number
from harness.overlays.tools import TOOLS
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
    cost: list[CostChange] = field(default_factory=list)  # Vela estimates past their thresholds

    def count(self, kind: str) -> int:
        return sum(c.kind == kind for c in self.changes)


Setup = tuple[str, tuple[tuple[str, str], ...]]  # (ExecuTorch, ((tool, version), ...))


def setup_of(versions: dict) -> Setup:
    """What a run ran on: its ExecuTorch and the version of each tool it recorded."""
    return backend_label(versions), tuple((t, versions[t]) for t in TOOLS if versions.get(t))


def _version(text: str) -> tuple:
    try:
        return (0, Version(text), text)
    except InvalidVersion:
        return (1, Version("0"), text)


def _order(setup: Setup) -> tuple:
    return (_version(setup[0]), tuple(_version(v) for _, v in setup[1]))


def same_setup(a: Setup, b: Setup) -> bool:
    """The same ExecuTorch, and no tool both runs recorded at different versions (a run from before a tool's version
    was recorded is not another setup for that)."""
    ta, tb = dict(a[1]), dict(b[1])
    return a[0] == b[0] and all(ta[t] == tb[t] for t in ta.keys() & tb.keys())


def labels(setups: list[Setup]) -> list[str]:
    """Each setup's ExecuTorch, with the tools in which the setups differ ('1.5.1 · ethos-u-vela 5.2.0')."""
    varying = [t for t in TOOLS if len({dict(tools)[t] for _, tools in setups if t in dict(tools)}) > 1]
    return [" · ".join([label, *(f"{t} {dict(tools).get(t, '-')}" for t in varying)]) for label, tools in setups]


def releases_of(history: History, run: RunInfo) -> list[Release]:
    """The run's setup and the newest complete run of its kind on each other setup, oldest first."""
    found: dict[Setup, RunInfo] = {setup_of(run.versions): run}
    for s in history.summaries():
        r = s.run
        setup = setup_of(r.versions)
        if (
            r.status == COMPLETE
            and s.cases
            and not any(same_setup(setup, known) for known in found)
            and r.tier == run.tier
            and r.target == run.target
            and r.seed == run.seed
            and r.filter == run.filter
            and r.shard == run.shard
            and r.random == run.random
            and not r.canary
        ):
            found[setup] = r
    ordered = sorted(found, key=_order)
    return [
        Release(label, found[setup], {x.descriptor: x for x in history.results(found[setup].run_id)})
        for setup, label in zip(ordered, labels(ordered))
    ]


def cell(r: CaseResult | None) -> str:
    """One release's result of a case, in a few words."""
    if r is None:
        return "-"
    why = r.issue or r.rejection
    return " ".join(filter(None, [r.actual_outcome, f"({why})" if why else "", worst_number(r)]))


def step(older: Release, newer: Release) -> Step:
    cost = [c for d, n in newer.results.items() if d in older.results for c in cost_changes(older.results[d], n)]
    return Step(
        older.label,
        newer.label,
        behaviour_changes(list(older.results.values()), list(newer.results.values())),
        sorted(cost, key=lambda c: (c.descriptor, c.metric)),
    )


NPU_COST = ("cycles", "npu_cycles", "npu_ops", "cpu_ops")  # summed over a setup's cases Vela compiled


def npu_cost(results: dict[str, CaseResult]) -> dict | None:
    """What the NPU pays for a setup's cases: each estimate summed over the cases Vela compiled; None when none."""
    vela = [
        v
        for v in ((r.metrics.get("vela") or {}) for r in results.values())
        if isinstance(v.get("cycles"), (int, float))
    ]
    if not vela:
        return None
    return {"compiled": len(vela), **{m: sum(v.get(m) or 0 for v in vela) for m in NPU_COST}}


def page(history: History, run: RunInfo) -> dict | None:
    """What the release page shows; None when the history holds this tier on one setup only."""
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
                "tools": dict(setup_of(r.run.versions)[1]),
                "npu": npu_cost(r.results),
            }
        )
    return {
        "tier": run.tier,
        "target": run.target,
        "seed": run.seed,
        "columns": columns,
        "steps": steps,
        "rows": rows,
        "npu": any(c["npu"] for c in columns),
    }
