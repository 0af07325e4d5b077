"""A human summary of a results file: counts, where failures sit, how to repro."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from harness.config import parse_descriptor
from harness.results import CaseResult, Outcome

_ORDER = [o.value for o in Outcome]


def _op_of(r: CaseResult) -> str:
    if r.conv_ops:
        return "+".join(sorted(set(r.conv_ops)))
    c = parse_descriptor(r.descriptor)
    return f"({'t' if c.transposed else ''}conv{c.rank}d)"


def outcome_counts(results: list[CaseResult]) -> dict[str, int]:
    counts = Counter(r.outcome.value for r in results)
    return {k: counts[k] for k in _ORDER if counts[k]}


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

    lsb = [r.metrics["max_lsb"] for r in results if "max_lsb" in r.metrics]
    exact = [r.metrics["exact_share"] for r in results if "exact_share" in r.metrics]
    fp = [r.metrics["max_err"] for r in results if "max_err" in r.metrics]
    if lsb:
        lines.append(f"Quantized cases compared: {len(lsb)}; largest error {max(lsb)} LSB; "
                     f"mean exact-match share {statistics.mean(exact):.4f}.")
    if fp:
        lines.append(f"fp32 cases compared: {len(fp)}; largest normalized DOT_PRODUCT error {max(fp):.3g}.")
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
            lines.append(f"  - repro: `{r.repro}`")
            if r.artifacts:
                lines.append(f"  - artifacts: `{r.artifacts}`")
        lines.append("")
    explained = [r for r in results if r.outcome in (Outcome.KNOWN_ISSUE, Outcome.EXPECTED_REJECTION, Outcome.SKIPPED)]
    if explained:
        lines += ["## Explained (not failures)", ""]
        for r in explained:
            lines.append(f"- {r.outcome.value} `{r.descriptor}`: {r.reason}")
        lines.append("")

    totals = [r.timings_s.get("total") for r in results if r.timings_s.get("total")]
    if totals:
        stages = sorted({k for r in results for k in r.timings_s if k != "total"})
        med = {s: statistics.median([r.timings_s[s] for r in results if s in r.timings_s]) for s in stages}
        lines.append(f"Per-case time: median {statistics.median(totals):.3f} s, max {max(totals):.3f} s, "
                     f"sum {sum(totals):.1f} s; stage medians: " + ", ".join(f"{s} {t:.3f}" for s, t in med.items()))
    return "\n".join(lines) + "\n"
