"""How a run's error splits between the stages, per scheme and context (`harness.judging.attribution`).

For each (scheme, context): the quantizer's share (the fake-quantized model against fp64: its median and
lowest SQNR, its worst LSB), the lowering's (how many cases the lowering changed at all, its worst error in its
unit and that case, its lowest SQNR), the second executor's where one ran, and for the cases that did not pass,
which stage broke its own check. A row reads: "the scheme costs this much; the lowering adds this much on top".
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field

from harness.config import parse_descriptor
from harness.results.case_result import CaseResult

STAGES = ("quantization", "lowering", "executor")


@dataclass
class StageFigures:
    cases: int = 0
    changed: int = 0  # cases in which the stage changed the output at all (worst > 0)
    worst: float | None = None
    unit: str = ""
    worst_case: str = ""
    sqnrs: list[float] = field(default_factory=list)

    @property
    def median_sqnr(self) -> float | None:
        return statistics.median(self.sqnrs) if self.sqnrs else None

    @property
    def min_sqnr(self) -> float | None:
        return min(self.sqnrs) if self.sqnrs else None


@dataclass
class Row:
    scheme: str
    context: str
    cases: int = 0
    stages: dict[str, StageFigures] = field(default_factory=dict)
    added_by: Counter = field(default_factory=Counter)


def rows(results: list[CaseResult]) -> list[Row]:
    """One row per (scheme, context) among the cases that carry an attribution, in first-seen order."""
    table: dict[tuple[str, str], Row] = {}
    for r in results:
        a = r.metrics.get("attribution")
        if not a:
            continue
        c = parse_descriptor(r.descriptor)
        row = table.setdefault((c.scheme, c.context), Row(c.scheme, c.context))
        row.cases += 1
        if a.get("added_by"):
            row.added_by[a["added_by"]] += 1
        for name in STAGES:
            if name not in a:
                continue
            s, fig = a[name], row.stages.setdefault(name, StageFigures())
            fig.cases += 1
            worst = s.get("worst")
            size = math.inf if worst is None else worst  # None: a non-finite error, worse than any number
            if size > 0:
                fig.changed += 1
            if fig.cases == 1 or size > (math.inf if fig.worst is None else fig.worst):
                fig.worst, fig.unit, fig.worst_case = worst, s.get("unit", ""), r.descriptor
            if s.get("sqnr_db") is not None:
                fig.sqnrs.append(s["sqnr_db"])
    return list(table.values())


def _worst_text(f: StageFigures) -> str:
    if not f.changed:
        return "none"
    worst = "non-finite" if f.worst is None else f"{f.worst:g} {f.unit}"
    return f"{worst} (`{f.worst_case}`)"


def _sqnr_text(f: StageFigures) -> str:
    if f.median_sqnr is None:
        return "identical"
    return f"median {f.median_sqnr:.1f} dB, lowest {f.min_sqnr:.1f} dB"


def markdown(results: list[CaseResult]) -> list[str]:
    """The summary's section: one line per (scheme, context), each stage's share."""
    found = rows(results)
    if not found:
        return []
    lines = [
        "## Where the error comes from",
        "",
        "Per scheme and context: the quantizer's share (fake-quant against fp64) and the lowering's (the output "
        "against fake-quant for INT, against fp64 for float, in units of the rule's per-element limit); cases "
        "changed: those in which the stage moved any element.",
        "",
        "| scheme | context | cases | quantization | lowering: cases changed | lowering: worst | lowering: SQNR "
        "| executor | not passing, added by |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in found:
        q, low, ex = (row.stages.get(n) for n in STAGES)
        lines.append(
            f"| {row.scheme} | {row.context} | {row.cases} | "
            + (f"{_sqnr_text(q)}; worst {_worst_text(q)}" if q else "-")
            + " | "
            + (f"{low.changed} of {low.cases} | {_worst_text(low)} | {_sqnr_text(low)}" if low else "- | - | -")
            + " | "
            + (f"{ex.changed} of {ex.cases} differ; worst {_worst_text(ex)}" if ex else "-")
            + " | "
            + (", ".join(f"{n} {k}" for k, n in row.added_by.most_common()) or "-")
            + " |"
        )
    return lines + [""]
