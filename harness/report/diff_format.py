"""A diff between two runs as text, as a PR-comment-sized Markdown summary, or as JSON."""

from __future__ import annotations

import json

from harness.history.diff import BEHAVIOURS, CostChange, Diff
from harness.results.case_result import CaseResult

MARKDOWN_ROWS = 15  # per section: a PR comment stays readable


REASON_CHARS = 160


def _case(r: CaseResult) -> str:
    why = r.stale or r.reason
    if len(why) > REASON_CHARS:
        why = why[: REASON_CHARS - 3] + "..."
    return f"{r.descriptor}: {r.outcome.value}" + (f" ({why})" if why else "")


def _sections(d: Diff) -> list[tuple[str, list[str]]]:
    return [
        ("New failures", [_case(n) + (f" [was {b.outcome.value}]" if b else " [new case]") for b, n in d.new_failures]),
        (
            "Flaky (same versions, seed, target and canary, different outcome)",
            [f"{n.descriptor}: {b.outcome.value} -> {n.outcome.value}" for b, n in d.flakes],
        ),
        ("Drift past threshold", [f"{x.descriptor}: {x.metric} {x.before:.4g} -> {x.after:.4g}" for x in d.drift]),
        ("NPU cost past threshold (Vela's cycles, memory, operators)", [_cost(x) for x in d.cost]),
        ("Stale expectations", [f"{r.descriptor}: {r.stale}" for r in d.stale]),
        ("Fixed", [f"{n.descriptor}: {b.outcome.value} -> {n.outcome.value}" for b, n in d.fixed]),
        ("Other outcome changes", [f"{n.descriptor}: {b.outcome.value} -> {n.outcome.value}" for b, n in d.changed]),
        ("Cases added", [r.descriptor for r in d.added]),
        ("Cases removed", [r.descriptor for r in d.removed]),
        *[
            (
                f"What the backend did differently ({d.backends[0]} -> {d.backends[1]}): {kind}",
                [
                    f"{c.descriptor}: {c.before} -> {c.after}" + (f" [{c.explained}]" if c.explained else "")
                    for c in d.behaviour
                    if c.kind == kind
                ],
            )
            for kind in BEHAVIOURS
        ],
    ]


def _cost(x: CostChange) -> str:
    share = f" ({x.share:+.1%})" if x.share is not None else ""
    return f"{x.descriptor}: {x.metric} {x.before:g} -> {x.after:g}{share}"


def headline(d: Diff) -> str:
    counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in d.counts().items() if n)
    verdict = ("REGRESSION" if d.regression else "no regression") + ("; COST REGRESSION" if d.cost_regression else "")
    partial = f"; interrupted: {d.not_run} case(s) of {d.base} not reached" if d.not_run else ""
    return f"{verdict}: {d.new} against {d.base}" + (f" ({counts}{partial})" if counts else f" (no changes{partial})")


def to_text(d: Diff) -> str:
    lines = [headline(d)]
    for title, rows in _sections(d):
        if rows:
            lines.append(f"{title} ({len(rows)}):")
            lines += [f"  {row}" for row in rows]
    return "\n".join(lines) + "\n"


def to_markdown(d: Diff) -> str:
    lines = [f"**{headline(d)}**", ""]
    for title, rows in _sections(d):
        if not rows:
            continue
        opened = title in ("New failures", "Drift past threshold") or title.startswith("NPU")
        lines.append(f"<details{' open' if opened else ''}><summary>{title}: {len(rows)}</summary>\n")
        lines += [f"- `{row}`" for row in rows[:MARKDOWN_ROWS]]
        if len(rows) > MARKDOWN_ROWS:
            lines.append(f"- ... and {len(rows) - MARKDOWN_ROWS} more")
        lines += ["", "</details>", ""]
    return "\n".join(lines)


def to_json(d: Diff) -> str:
    def pair(b, n):
        return {
            "descriptor": n.descriptor,
            "before": b.outcome.value if b else None,
            "after": n.outcome.value,
            "reason": n.stale or n.reason,
        }

    return json.dumps(
        {
            "base": d.base,
            "new": d.new,
            "regression": d.regression,
            "cost_regression": d.cost_regression,
            "same_inputs": d.same_inputs,
            "counts": d.counts(),
            "new_failures": [pair(b, n) for b, n in d.new_failures],
            "fixed": [pair(b, n) for b, n in d.fixed],
            "changed": [pair(b, n) for b, n in d.changed],
            "flakes": [pair(b, n) for b, n in d.flakes],
            "added": [r.descriptor for r in d.added],
            "removed": [r.descriptor for r in d.removed],
            "stale": [{"descriptor": r.descriptor, "stale": r.stale} for r in d.stale],
            "drift": [vars(x) for x in d.drift],
            "cost": [vars(x) for x in d.cost],
            "backends": list(d.backends),
            "behaviour": [vars(c) for c in d.behaviour],
        },
        indent=2,
    )
