"""A human summary of a results file: counts, where failures sit, how to repro."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from harness.cases.known_issues import entry
from harness.cases.rejections import rejection
from harness.config import parse_descriptor
from harness.results.case_result import CaseResult, Outcome

_ORDER = [o.value for o in Outcome]


def _op_of(r: CaseResult) -> str:
    if r.conv_ops:
        return "+".join(sorted(set(r.conv_ops)))
    c = parse_descriptor(r.descriptor)
    return f"({'t' if c.transposed else ''}conv{c.rank}d)"


def explanation(r: CaseResult) -> str:
    """Why a case is explained: its registry entry, its documented rejection, or its own reason."""
    if r.issue:
        known = entry(r.issue)
        return f"known issue {r.issue}: {known.reason if known else '(no longer in the registry)'}"
    if r.rejection:
        rule = rejection(r.rejection)
        return f"documented rejection {r.rejection}: {rule.reason if rule else '(no longer documented)'}"
    return r.reason


def outcome_counts(results: list[CaseResult]) -> dict[str, int]:
    counts = Counter(r.outcome.value for r in results)
    return {k: counts[k] for k in _ORDER if counts[k]}


def _numerics_table(results: list[CaseResult]) -> list[str]:
    """Per scheme: how exact the compared outputs were."""
    rows = []
    by_scheme: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        if "n_total" in r.metrics:
            by_scheme[parse_descriptor(r.descriptor).scheme].append(r)
    for scheme, rs in by_scheme.items():
        total = sum(r.metrics["n_total"] for r in rs)
        if "exact_share" in rs[0].metrics:
            exact = sum(r.metrics["exact_share"] * r.metrics["n_total"] for r in rs)
            sqnr = [r.metrics["sqnr_db"] for r in rs if r.metrics.get("sqnr_db") is not None]
            rows.append(f"| {scheme} | {len(rs)} | {exact / total:.4%} | {max(r.metrics['max_lsb'] for r in rs)} LSB | "
                        f"{max(r.metrics.get('fq_max_lsb', 0) for r in rs)} LSB | {min(sqnr) if sqnr else '-'} dB |")
        else:
            exact = total - sum(r.metrics.get("n_inexact", 0) for r in rs)
            rows.append(f"| {scheme} | {len(rs)} | {exact / total:.4%} | max err {max(r.metrics['max_err'] for r in rs):.3g} "
                        f"(limit {min(r.metrics['err_limit'] for r in rs)}+) | - | - |")
    if not rows:
        return []
    return ["| scheme | cases compared | elements exact | worst vs exact oracle / DOT_PRODUCT | worst vs fake-quant | min SQNR |",
            "|---|---|---|---|---|---|", *rows, ""]


def summarize(results: list[CaseResult], title: str = "Conv numerics sweep") -> str:
    """Markdown: totals, op x scheme table, failures with repro, timings."""
    lines = [f"# {title}", ""]
    if not results:
        return "\n".join(lines + ["No results."]) + "\n"
    v = results[0].versions
    lines.append("Versions: " + ", ".join(f"{k} {v[k]}" for k in sorted(v)) + f"; seed {results[0].seed}.")
    lines.append("")
    counts = outcome_counts(results)
    green = sum(r.green for r in results)
    lines.append(f"**{len(results)} cases: {green} green, {len(results) - green} not.** "
                 + ", ".join(f"{n} {k}" for k, n in counts.items()))
    lines.append("")

    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    schemes: list[str] = []
    for r in results:
        scheme = parse_descriptor(r.descriptor).scheme
        if scheme not in schemes:
            schemes.append(scheme)
        table[(_op_of(r), scheme)][r.outcome.value] += 1
    ops = sorted({op for op, _ in table})
    lines.append("| conv op | " + " | ".join(schemes) + " |")
    lines.append("|---|" + "---|" * len(schemes))
    for op in ops:
        cells = []
        for s in schemes:
            c = table.get((op, s))
            cells.append(", ".join(f"{n} {k}" for k, n in sorted(c.items())) if c else "")
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    lines.append("")

    lines += _numerics_table(results)
    mistrusted = counts.get("mistrusted", 0)
    lines.append(f"Mistrusted share: {mistrusted / len(results):.1%}.")
    lines.append("")

    bad = [r for r in results if not r.green]
    if bad:
        lines += ["## Not green", ""]
        for r in bad:
            lines.append(f"- **{r.outcome.value}** `{r.descriptor}`: {r.stale or r.reason}")
            if "worst" in r.metrics:
                lines.append(f"  - worst element {r.metrics['worst']}")
            if "where" in r.metrics:
                w = r.metrics["where"]
                lines.append(f"  - {w['border']} differing on the border, {w['interior']} inside; "
                             f"channels {w['channels']} ({w['n_channels']} of {w['of_channels']})")
            lines.append(f"  - repro: `{r.repro}`")
            if r.artifacts:
                lines.append(f"  - artifacts: `{r.artifacts}`")
        lines.append("")
    explained = [r for r in results if r.outcome in (Outcome.KNOWN_ISSUE, Outcome.EXPECTED_REJECTION, Outcome.SKIPPED,
                                                     Outcome.MISTRUSTED)]
    if explained:
        lines += ["## Explained (not failures)", ""]
        groups: dict[tuple[str, str], list[CaseResult]] = defaultdict(list)
        for r in explained:
            groups[(r.outcome.value, explanation(r))].append(r)
        for (outcome, why), rs in groups.items():
            lines.append(f"- **{outcome}**, {len(rs)} case(s): {why}")
            for r in rs:
                actual = f" (actually {r.actual_outcome}: {r.reason})" if r.outcome is Outcome.KNOWN_ISSUE else ""
                lines.append(f"  - `{r.descriptor}`{actual}")
        lines.append("")

    totals = [r.timings_s.get("total") for r in results if r.timings_s.get("total")]
    if totals:
        stages = sorted({k for r in results for k in r.timings_s if k != "total"})
        med = {s: statistics.median([r.timings_s[s] for r in results if s in r.timings_s]) for s in stages}
        lines.append(f"Per-case time: median {statistics.median(totals):.3f} s, max {max(totals):.3f} s, "
                     f"sum {sum(totals):.1f} s; stage medians: " + ", ".join(f"{s} {t:.3f}" for s, t in med.items()))
    return "\n".join(lines) + "\n"
