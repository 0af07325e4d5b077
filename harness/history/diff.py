"""What changed between two runs: regressions, fixes, drift, flakes.

A regression is a case green in the baseline and not green now, or a green
case whose numbers drifted past a threshold below. Between two runs on different
ExecuTorch (a release, a tree: `backend_label`), the diff also says what the
backend itself did differently, from each case's actual outcome (before
expectations) and output bytes: fixed, broke, failing another way, or passing
with other numbers (`behaviour_changes`), whatever the registry says of it. A flake is a case whose
outcome differs between two runs that had to give the same answer: identical
versions (the harness commit included), seed, target and canary. Cases are
matched by descriptor.

Drift thresholds: `harness.policy.tolerances` (DRIFT_UP, DRIFT_DOWN), each with its argument.

What the NPU pays is tracked apart from the numbers: a case's Vela estimates (cycles, memory, operators on the
NPU and the CPU) that moved past `harness.policy.cost`'s thresholds are `cost` changes, whatever the outcome; an
increase is a cost regression (`cost_regression`), never a numeric one, so a nightly chooses whether it fails
on it (`--fail-on-cost`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from harness.policy.cost import COST_THRESHOLDS, COUNTS, moved
from harness.policy.tolerances import DRIFT_DOWN, DRIFT_UP
from harness.results.case_result import CaseResult
from harness.results.metrics import error_ratio

BEHAVIOURS = ("fixed", "broke", "other failure", "other numbers")


@dataclass(frozen=True)
class Drift:
    descriptor: str
    metric: str
    before: float
    after: float


@dataclass(frozen=True)
class CostChange:
    """A Vela estimate of one case that moved past its threshold (harness.policy.cost)."""

    descriptor: str
    metric: str
    before: float
    after: float

    @property
    def share(self) -> float | None:
        return (self.after - self.before) / self.before if self.before else None


@dataclass(frozen=True)
class BehaviourChange:
    """What the backend did differently with one case: `kind` is one of BEHAVIOURS."""

    descriptor: str
    kind: str
    before: str  # 'pass', a failure signature, or (other numbers) the case's worst error
    after: str
    explained: str = ""  # the known issue or rejection that accounts for the newer result, if any


@dataclass
class Diff:
    base: str  # labels: a run id or a file
    new: str
    new_failures: list[tuple[CaseResult | None, CaseResult]] = field(default_factory=list)
    fixed: list[tuple[CaseResult, CaseResult]] = field(default_factory=list)
    changed: list[tuple[CaseResult, CaseResult]] = field(default_factory=list)  # other outcome changes
    added: list[CaseResult] = field(default_factory=list)
    removed: list[CaseResult] = field(default_factory=list)
    stale: list[CaseResult] = field(default_factory=list)  # expectations that stopped holding since the baseline
    drift: list[Drift] = field(default_factory=list)
    flakes: list[tuple[CaseResult, CaseResult]] = field(default_factory=list)
    same_inputs: bool = False  # identical versions, seeds, target and canary: outcomes had to be equal
    backends: tuple[str, str] = ("", "")  # the ExecuTorch each side ran on
    behaviour: list[BehaviourChange] = field(default_factory=list)  # when they differ: what the backend did differently
    not_run: int = 0  # the new run was interrupted: base cases it never reached (not counted as removed)
    cost: list[CostChange] = field(default_factory=list)  # Vela estimates past their thresholds, either way

    @property
    def regression(self) -> bool:
        return bool(self.new_failures or self.drift or [n for _, n in self.flakes if not n.green])

    @property
    def cost_regression(self) -> bool:
        """What the NPU pays went up for some case (cycles, memory, an operator more on the NPU or the CPU):
        reported apart from the numbers, failing a run only on request."""
        return any(c.after > c.before for c in self.cost)

    def counts(self) -> dict[str, int]:
        counts = {
            k: len(getattr(self, k))
            for k in ("new_failures", "fixed", "changed", "added", "removed", "stale", "drift", "flakes")
        }
        return {**counts, "cost_changes": len(self.cost)}


def _numbers(r: CaseResult) -> dict[str, float]:
    m = r.metrics
    out = {k: float(m[k]) for k in ("max_lsb", "exact_share", "sqnr_db") if isinstance(m.get(k), (int, float))}
    ratio = error_ratio(r.rule, m)
    if ratio is not None:
        out["error_ratio"] = ratio
    return out


def _drift(b: CaseResult, n: CaseResult) -> list[Drift]:
    if b.seed != n.seed:
        return []  # other data: other numbers, nothing to compare
    before, after = _numbers(b), _numbers(n)
    out = []
    for metric in sorted(set(before) & set(after)):
        delta = after[metric] - before[metric]
        if delta >= DRIFT_UP.get(metric, float("inf")) or -delta >= DRIFT_DOWN.get(metric, float("inf")):
            out.append(Drift(n.descriptor, metric, before[metric], after[metric]))
    return out


def cost_changes(b: CaseResult, n: CaseResult) -> list[CostChange]:
    """The Vela estimates of one case that moved from `b` to `n` past their thresholds (both compiled by Vela)."""
    vb, vn = b.metrics.get("vela") or {}, n.metrics.get("vela") or {}
    return [
        CostChange(n.descriptor, metric, vb[metric], vn[metric])
        for metric in (*COST_THRESHOLDS, *COUNTS)
        if isinstance(vb.get(metric), (int, float))
        and isinstance(vn.get(metric), (int, float))
        and moved(metric, vb[metric], vn[metric])
    ]


def _fingerprint(results: list[CaseResult]) -> set[tuple]:
    return {(json.dumps(r.versions, sort_keys=True), r.seed, r.target, r.canary) for r in results}


def diff(
    base: list[CaseResult],
    new: list[CaseResult],
    base_label: str = "base",
    new_label: str = "new",
    interrupted: bool = False,
) -> Diff:
    """What changed from `base` to `new`; `interrupted`: `new` stopped early, so a base case it lacks was not
    reached, not removed."""
    d = Diff(base_label, new_label)
    fb, fn = _fingerprint(base), _fingerprint(new)
    d.same_inputs = bool(base) and bool(new) and len(fb) == 1 and fb == fn
    before = {r.descriptor: r for r in base}
    after = {r.descriptor: r for r in new}
    for desc, n in after.items():
        b = before.get(desc)
        if b is None:
            d.added.append(n)
            if not n.green:
                d.new_failures.append((None, n))
            continue
        if n.stale and not b.stale:
            d.stale.append(n)
        d.cost += cost_changes(b, n)
        if b.outcome != n.outcome or b.green != n.green:
            if d.same_inputs:
                d.flakes.append((b, n))
            elif b.green and not n.green:
                d.new_failures.append((b, n))
            elif n.green and not b.green:
                d.fixed.append((b, n))
            else:
                d.changed.append((b, n))
        elif n.green:
            d.drift += _drift(b, n)
    missing = [b for desc, b in before.items() if desc not in after]
    if interrupted:
        d.not_run = len(missing)
    else:
        d.removed = missing
    d.backends = (_backend(base), _backend(new))
    if d.backends[0] != d.backends[1]:
        d.behaviour = behaviour_changes(base, new)
    return d


def _backend(results: list[CaseResult]) -> str:
    from harness.history.db import backend_label

    return ", ".join(sorted({backend_label(r.versions) for r in results}))


def failure_of(r: CaseResult) -> str:
    """'pass', or what the backend's failure looked like: actual outcome, stage, error type."""
    actual = r.actual_outcome or r.outcome.value
    return "pass" if actual == "pass" else "/".join(filter(None, [actual, r.stage, r.error_type]))


def _message(r: CaseResult) -> str:
    """A failure's message without its numbers or the interpreter's node dump: two AttributeErrors about
    different attributes are two failures, the same crash at another size is one."""

    text = r.reason.split(" While executing ")[0].split(" [a new failure")[0]
    return re.sub(r"\d+(\.\d+)?", "N", text)[:160] if r.actual_outcome != "mismatch" else ""


def worst_number(r: CaseResult) -> str:
    m = r.metrics
    for key, unit in (("max_lsb", " LSB"), ("max_err", " x"), ("sqnr_db", " dB")):
        if m.get(key) is not None:
            return f"{m[key]}{unit}"
    return ""


def behaviour_changes(base: list[CaseResult], new: list[CaseResult]) -> list[BehaviourChange]:
    """Case by case, what the backend did differently (actual outcomes and output bytes, not verdicts)."""
    before = {r.descriptor: r for r in base}
    out = []
    for n in new:
        o = before.get(n.descriptor)
        if o is None:
            continue
        was, now = failure_of(o), failure_of(n)
        if was != "pass" and now == "pass":
            kind = "fixed"
        elif was == "pass" and now != "pass":
            kind = "broke"
        elif was != now or (now != "pass" and _message(o) != _message(n)):
            kind = "other failure"
        elif now == "pass" and o.output_sha256 and n.output_sha256 and o.output_sha256 != n.output_sha256:
            kind, was, now = "other numbers", worst_number(o) or "pass", worst_number(n) or "pass"
        else:
            continue
        out.append(BehaviourChange(n.descriptor, kind, was, now, n.issue or n.rejection))
    return out
