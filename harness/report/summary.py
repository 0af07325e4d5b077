"""The Markdown summary of a run: counts, where failures sit, how to repro.

Every figure says which cases it covers (`harness.report.figures`), and an
error is shown against its own case's limit, as a ratio.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from harness.expectations.known_issues import entry
from harness.expectations.rejections import rejection
from harness.report import attribution
from harness.report.figures import (
    error_text,
    groups_by_signature,
    op_of,
    outcome_counts,
    scheme_numbers,
    scheme_of,
    unfloored_reasons,
    where_text,
)
from harness.results.case_result import CaseResult, Outcome


def explanation(r: CaseResult) -> str:
    """Why a case is explained: its registry entry, its documented rejection, or its own reason."""
    if r.issue:
        known = entry(r.issue)
        return f"known issue {r.issue}: {known.reason if known else '(no longer in the registry)'}"
    if r.rejection:
        rule = rejection(r.rejection)
        return f"documented rejection {r.rejection}: {rule.reason if rule else '(no longer documented)'}"
    return r.reason


def _numerics_table(results: list[CaseResult]) -> list[str]:
    rows = [
        f"| {n.scheme} | {n.cases} | {n.exact_share:.4%} | {n.worst_ratio:.2f}"
        + (f" (`{n.worst_case}`)" if n.worst_ratio > 0 else "")
        + " | "
        + (f"{n.min_sqnr:.1f} dB (floor {n.min_sqnr_floor:.0f})" if n.min_sqnr is not None else "-")
        + (f"; {n.unfloored} without a floor" if n.unfloored else "")
        + " |"
        for n in scheme_numbers(results)
    ]
    if not rows:
        return []
    unfloored = [
        f"- SQNR not checked on `{d}` data in {s} ({n} case(s)): {why}" for s, d, n, why in unfloored_reasons(results)
    ]
    return [
        "Numbers over the judged cases that passed (known issues and mistrusted cases apart); an error is given "
        "as a share of its own case's limit (1.00 = at the limit).",
        "",
        "| scheme | cases | elements exact | worst error / own limit | SQNR nearest its floor |",
        "|---|---|---|---|---|",
        *rows,
        "",
        *unfloored,
        *([""] if unfloored else []),
    ]


def _op_scheme_table(results: list[CaseResult]) -> list[str]:
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    schemes: list[str] = []
    for r in results:
        scheme = scheme_of(r)
        if scheme not in schemes:
            schemes.append(scheme)
        table[(op_of(r), scheme)][r.outcome.value] += 1
    lines = ["| conv op | " + " | ".join(schemes) + " |", "|---|" + "---|" * len(schemes)]
    for op in sorted({op for op, _ in table}):
        cells = [
            ", ".join(f"{n} {k}" for k, n in sorted(table[(op, s)].items())) if (op, s) in table else ""
            for s in schemes
        ]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return lines + [""]


def _failures(results: list[CaseResult]) -> list[str]:
    failures = groups_by_signature(results)
    if not failures:
        return []
    lines = ["## Not green, by signature", ""]
    for sig, rs in failures:
        lines.append(f"### {sig}: {len(rs)} case(s)")
        for r in rs:
            lines.append(f"- **{r.outcome.value}** `{r.descriptor}`: {r.stale or r.reason}")
            lines += [f"  - {detail}" for detail in (error_text(r), where_text(r)) if detail]
            if "worst" in r.metrics:
                lines.append(f"  - worst element {r.metrics['worst']}")
            if r.added_by:
                lines.append(f"  - error added by the {r.added_by}; next: `{r.next_step}`")
            lines.append(f"  - repro: `{r.repro}`")
            if r.artifacts:
                lines.append(f"  - artifacts: `{r.artifacts}`")
        lines.append("")
    return lines


def _explained(results: list[CaseResult]) -> list[str]:
    explained = [
        r
        for r in results
        if r.green
        and r.outcome in (Outcome.KNOWN_ISSUE, Outcome.EXPECTED_REJECTION, Outcome.SKIPPED, Outcome.MISTRUSTED)
    ]
    if not explained:
        return []
    lines = ["## Explained (not failures)", ""]
    groups: dict[tuple[str, str], list[CaseResult]] = defaultdict(list)
    for r in explained:
        groups[(r.outcome.value, explanation(r))].append(r)
    for (outcome, why), rs in groups.items():
        lines.append(f"- **{outcome}**, {len(rs)} case(s): {why}")
        for r in rs:
            actual = f" (actually {r.actual_outcome}: {r.reason})" if r.outcome is Outcome.KNOWN_ISSUE else ""
            lines.append(f"  - `{r.descriptor}`{actual}")
    return lines + [""]


def _timings(results: list[CaseResult]) -> list[str]:
    totals = [r.timings_s.get("total") for r in results if r.timings_s.get("total")]
    if not totals:
        return []
    stages = sorted({k for r in results for k in r.timings_s if k != "total"})
    med = {s: statistics.median([r.timings_s[s] for r in results if s in r.timings_s]) for s in stages}
    return [
        f"Per-case time: median {statistics.median(totals):.3f} s, max {max(totals):.3f} s, "
        f"sum {sum(totals):.1f} s; stage medians: " + ", ".join(f"{s} {t:.3f}" for s, t in med.items())
    ]


def summarize(results: list[CaseResult], title: str = "Conv numerics sweep") -> str:
    """Markdown: totals, op x scheme table, numbers, failures by signature with repro, explained cases, timings."""
    lines = [f"# {title}", ""]
    if not results:
        return "\n".join(lines + ["No results."]) + "\n"
    v = results[0].versions
    counts = outcome_counts(results)
    green = sum(r.green for r in results)
    lines += [
        "Versions: " + ", ".join(f"{k} {v[k]}" for k in sorted(v)) + f"; seed {results[0].seed}.",
        "",
        f"**{len(results)} cases: {green} green, {len(results) - green} not.** "
        + ", ".join(f"{n} {k}" for k, n in counts.items()),
        "",
    ]
    lines += _op_scheme_table(results) + _numerics_table(results) + attribution.markdown(results)
    lines += [f"Mistrusted share: {counts.get('mistrusted', 0) / len(results):.1%} (never counted as passes).", ""]
    lines += _failures(results) + _explained(results) + _timings(results)
    return "\n".join(lines) + "\n"
