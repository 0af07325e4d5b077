"""What changed between two runs: regressions, fixes, drift, flakes.

A regression is a case green in the baseline and not green now, or a green
case whose numbers drifted past a threshold below. A flake is a case whose
outcome differs between two runs that had to give the same answer: identical
versions (the harness commit included), seed, target and canary. Cases are
matched by descriptor.

Drift thresholds, each the smallest change that is not noise. Within one
release every number is deterministic (same seed, same bytes), so noise only
comes from what a new release may legitimately change: calibration (the
quantizer's observers), the accumulation order of a float conv.

* max_lsb (INT): up by 1 LSB or more. Integer outputs carry no noise: a new
  LSB of error is a changed rounding or scale somewhere, even where it stays
  within the context's tolerance.
* exact_share (INT): down by 0.01 or more (1% of the elements no longer equal
  to the reference): one element moving is covered by max_lsb; this catches
  a systematic shift that stays at 1 LSB.
* sqnr_db (INT): down by 1 dB or more. A recalibrated quantizer moves SQNR by
  tenths of a dB; 1 dB is 26% more noise power, the size of a real scale or
  rounding change (a scale 12% off costs about that).
* error_ratio (all, error as a share of the case's own limit): up by 0.25 or
  more. A float conv's error moves with its accumulation order, within what
  the DOT_PRODUCT rule allows for; a quarter of the case's budget is more than
  an order change gives on these sizes and well before the rule fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from harness.results.case_result import CaseResult
from harness.results.metrics import error_ratio

DRIFT_UP = {"max_lsb": 1.0, "error_ratio": 0.25}
DRIFT_DOWN = {"exact_share": 0.01, "sqnr_db": 1.0}


@dataclass(frozen=True)
class Drift:
    descriptor: str
    metric: str
    before: float
    after: float


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

    @property
    def regression(self) -> bool:
        return bool(self.new_failures or self.drift or [n for _, n in self.flakes if not n.green])

    def counts(self) -> dict[str, int]:
        return {k: len(getattr(self, k)) for k in ("new_failures", "fixed", "changed", "added", "removed", "stale",
                                                     "drift", "flakes")}


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


def _fingerprint(results: list[CaseResult]) -> set[tuple]:
    return {(json.dumps(r.versions, sort_keys=True), r.seed, r.target, r.canary) for r in results}


def diff(base: list[CaseResult], new: list[CaseResult], base_label: str = "base", new_label: str = "new") -> Diff:
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
    d.removed = [b for desc, b in before.items() if desc not in after]
    return d
