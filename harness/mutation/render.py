"""A mutation report on disk: `mutation.json` (every mutant, the scores) and `mutation.md` (what a reviewer reads)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from harness.mutation.report import STATUSES, MutationReport

WEAK_EQUIVALENCE_CASES = 2  # an equivalence shown on this few judged cases is reported as weak


def write(report: MutationReport, out: Path) -> None:
    """`mutation.json` (every mutant) and `mutation.md` (scores, survivors with their diffs)."""
    out.mkdir(parents=True, exist_ok=True)
    data = asdict(report) | {
        "scores": {t: report.score(t) for t in report.modules},
        "score": report.score(),
        "conventional_scores": {t: report.conventional_score(t) for t in report.modules},
        "conventional_score": report.conventional_score(),
        "counts": {t: report.counts(t) for t in report.modules},
        "operators": {
            o: {
                "counts": report.counts(operator=o),
                "score": report.score(operator=o),
                "conventional_score": report.conventional_score(operator=o),
            }
            for o in report.operators()
        },
    }
    (out / "mutation.json").write_text(json.dumps(data, indent=2) + "\n")
    header = [
        "| {} | mutants | killed | survived | masked | equivalent | unreached | invalid | score | conventional |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]

    def pct(score: float | None) -> str:
        return "" if score is None else f"{score:.1%}"

    def row(label: str, c: dict, **which) -> str:
        return (
            f"| {label} | {sum(c.values())} | "
            + " | ".join(str(c[s]) for s in STATUSES)
            + f" | {pct(report.score(**which))} | {pct(report.conventional_score(**which))} |"
        )

    lines = [
        f"# Mutation testing: tier `{report.tier}`",
        "",
        "Score: killed / (killed + survived + masked), the mutants that ran and were not shown equivalent "
        "(every case that reached them gave bit-identical outputs); unreached mutants are counted apart. "
        "Conventional: killed / (all - equivalent - invalid), an unreached mutant counted as not killed.",
        "",
        header[0].format("module"),
        header[1],
    ]
    lines += [row(t, report.counts(t), module=t) for t in report.modules]
    lines += ["", "By operator class (all modules):", "", header[0].format("operator"), header[1]]
    lines += [row(o, report.counts(operator=o), operator=o) for o in report.operators()]
    lines.append(row("all", report.counts()))
    sampled = (
        ""
        if report.fraction >= 1
        else f" A seeded sample: {report.fraction:.0%} of each module's mutants (seed {report.seed})."
    )
    n_carried = sum(1 for m in report.mutants if m.carried)
    carried_text = (
        f" {n_carried} kills carried from an earlier report (their killing case is in this tier)." if n_carried else ""
    )
    survivors = [m for m in report.mutants if m.status == "survived"]
    hidden = sum(1 for m in survivors if m.outputs_changed)
    broken = (
        f" {len(report.not_green)} cases were not green without a mutant and judged none: "
        f"{', '.join(report.not_green[:5])}{' ...' if len(report.not_green) > 5 else ''}."
        if report.not_green
        else ""
    )
    pending = (
        f" {len(report.undecided)} mutants are undecided (no run decided them): "
        f"{', '.join(report.undecided[:5])}{' ...' if len(report.undecided) > 5 else ''}."
        if report.undecided
        else ""
    )
    lines += [
        "",
        f"Wall time {report.wall_s:.0f} s.{sampled}{carried_text}{broken}{pending}",
        "",
        f"Of {len(survivors)} survivors, {hidden} changed some output's bits within the tolerance (the judge "
        f"hid them), {len(survivors) - hidden} left every output it produced bit-identical.",
        "",
        "## Survivors, masked and unreached mutants",
        "",
    ]
    for m in report.mutants:
        if m.status in ("survived", "masked", "unreached"):
            changed = (
                f"; outputs changed within tolerance on {m.outputs_changed}, e.g. {m.changed_case}"
                if m.outputs_changed
                else ""
            )
            why = [m.reason, ""] if m.reason else []
            lines += [
                f"### {m.name} ({m.status}; {m.cases_run} cases{changed}) line {m.line}: {m.operator} {m.description}",
                "",
                *why,
                "```diff",
                m.diff.rstrip(),
                "```",
                "",
            ]
    weak = [m for m in report.mutants if m.status == "equivalent" and m.judged <= WEAK_EQUIVALENCE_CASES]
    unreasoned = [m for m in report.mutants if m.status == "unreached" and not m.reason]
    lines += [
        "## Equivalent (harness/policy/mutation_equivalents.toml)",
        "",
        f"{len(weak)} of {sum(m.status == 'equivalent' for m in report.mutants)} equivalences rest on "
        f"{WEAK_EQUIVALENCE_CASES} judged cases or fewer: weak, marked (weak) below. {len(unreasoned)} unreached "
        "mutants have no reason yet.",
        "",
    ]
    lines += [
        f"- {m.name} line {m.line} {m.operator} {m.description}"
        f"{f' (weak: {m.judged} judged case(s))' if m in weak else ''}: {m.reason}"
        for m in report.mutants
        if m.status == "equivalent" or (m.status == "killed" and "the listing is wrong" in m.reason)
    ]
    (out / "mutation.md").write_text("\n".join(lines) + "\n")
