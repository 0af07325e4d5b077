"""The HTML report of a run: one static, self-contained page (plots embedded), and its JUnit XML.

Rendered with jinja2 from `templates/index.html.j2`, every value escaped.
What comes first is what a backend engineer opens it for: the verdict and
the diff against the baseline; then failures by signature with their repro
lines, known issues with their registry entries, where in the config space
errors sit, the trend of the last runs, time per stage and the versions.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import jinja2
import markupsafe

from harness.expectations.known_issues import entry
from harness.history.db import History, RunInfo
from harness.history.diff import Diff
from harness.report import attribution, plots
from harness.report.cross_target import (
    latest_runs_of_other_targets,
    refused_here_run_there,
    tosa_differences,
)
from harness.report.diff_format import headline
from harness.report.figures import (
    HEATMAPS,
    error_text,
    grid,
    groups_by_signature,
    outcome_counts,
    scheme_numbers,
    short,
    signature,
    unfloored_reasons,
    where_text,
)
from harness.report.junit import write_junit
from harness.report.releases import page as release_page
from harness.report.summary import explanation
from harness.results.case_result import CaseResult, Outcome

ROWS_PER_GROUP = 50  # cases listed per failure signature; the results file has them all
_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
# A descriptor may break after each '_' (escaped first, then the break hints added).
_ENV.filters["wrap"] = lambda text: markupsafe.Markup(str(markupsafe.escape(text)).replace("_", "_<wbr>"))


def source_url(link: str, executorch_git: str) -> str | None:
    """A registry `link` ("executorch/backends/arm/... (detail)") as a URL into ExecuTorch's sources at this build."""
    m = re.match(r"executorch/(\S+\.py)", link)
    if not m or not re.fullmatch(r"[0-9a-f]{7,40}", executorch_git or ""):
        return None
    return f"https://github.com/pytorch/executorch/blob/{executorch_git}/{m.group(1)}"


def _case_row(r: CaseResult) -> dict:
    return {
        "descriptor": r.descriptor,
        "outcome": r.outcome.value,
        "reason": r.stale or r.reason,
        "short": short(r.stale or r.reason),
        "error": error_text(r),
        "where": where_text(r),
        "worst": r.metrics.get("worst", ""),
        "repro": r.repro,
        "added_by": r.added_by,
        "next_step": r.next_step,
        "artifacts": r.artifacts or "",
    }


def _failure_groups(results: list[CaseResult]) -> list[dict]:
    out = []
    for sig, rs in groups_by_signature(results):
        rows = [_case_row(r) for r in rs[:ROWS_PER_GROUP]]
        typical = rows[0]["short"]
        for row in rows:
            row["same_reason"] = row["short"] == typical
        out.append(
            {
                "signature": sig,
                "count": len(rs),
                "typical": typical,
                "cases": rows,
                "more": max(0, len(rs) - ROWS_PER_GROUP),
            }
        )
    return out


def _diff_groups(pairs: list[tuple[CaseResult | None, CaseResult]], unpaired: str = "new case") -> list[dict]:
    """A diff section's cases by signature: one line each, the shared reason once."""
    groups: dict[str, list] = {}
    for b, n in pairs:
        groups.setdefault(signature(n) if not n.green else n.outcome.value, []).append((b, n))
    return [
        {
            "signature": sig,
            "typical": short(ps[0][1].stale or ps[0][1].reason),
            "repro": ps[0][1].repro,
            "cases": [
                {"descriptor": n.descriptor, "change": f"{b.outcome.value} → {n.outcome.value}" if b else unpaired}
                for b, n in ps
            ],
        }
        for sig, ps in sorted(groups.items(), key=lambda kv: -len(kv[1]))
    ]


def _known_issues(results: list[CaseResult], executorch_git: str) -> list[dict]:
    groups: dict[str, list[CaseResult]] = {}
    for r in results:
        if r.outcome is Outcome.KNOWN_ISSUE:
            groups.setdefault(r.issue, []).append(r)
    out = []
    for issue, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        known = entry(issue)
        out.append(
            {
                "id": issue,
                "reason": known.reason if known else "(no longer in the registry)",
                "link": known.link if known else "",
                "url": source_url(known.link, executorch_git) if known else None,
                "cases": [
                    {"descriptor": r.descriptor, "actual": r.actual_outcome, "reason": r.reason, "repro": r.repro}
                    for r in rs
                ],
            }
        )
    return out


def _explained(results: list[CaseResult]) -> list[dict]:
    groups: dict[tuple[str, str], int] = {}
    for r in results:
        if r.green and r.outcome in (Outcome.EXPECTED_REJECTION, Outcome.MISTRUSTED, Outcome.SKIPPED):
            key = (r.outcome.value, explanation(r))
            groups[key] = groups.get(key, 0) + 1
    return [{"outcome": o, "why": w, "cases": n} for (o, w), n in sorted(groups.items(), key=lambda kv: -kv[1])]


def _cross_target(history: History | None, run: RunInfo, results: list[CaseResult]) -> dict | None:
    """For an Ethos-U or VGF run (vgf or vgf-emu): what it refuses that another target of its kind ran (another Ethos-U
    configuration; for VGF, the generic lowering), and where its TOSA graphs differ from the generic lowering's,
    each against the newest complete run of the same tier on that target."""
    if history is None or not (run.target.startswith("ethos-u") or run.target in ("vgf", "vgf-emu")):
        return None
    others = latest_runs_of_other_targets(history, run, "ethos-u" if run.target.startswith("ethos-u") else "tosa")
    refused = [
        x
        for name, run_id in sorted(others.items())
        for x in refused_here_run_there(results, history.results(run_id), name)
    ]
    generic = latest_runs_of_other_targets(history, run, "tosa").get("tosa")
    return {
        "others": sorted(others),
        "refused": refused,
        "generic": generic,
        "tosa_diff": tosa_differences(results, history.results(generic)) if generic else [],
    }


def context(history: History | None, run: RunInfo, results: list[CaseResult], d: Diff | None, trend: int = 30) -> dict:
    """Everything the template shows (plots included), as plain values."""
    versions = results[0].versions if results else run.versions
    trend_runs = history.summaries(trend, like=run) if history is not None else []
    return {
        "run": run,
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.started)),
        "wall_min": f"{run.wall_s / 60:.1f}" if run.wall_s is not None else "-",
        "cases": len(results),
        "green": sum(r.green for r in results),
        "counts": outcome_counts(results),
        "diff": d,
        "diff_headline": headline(d) if d else "",
        "diff_sections": []
        if d is None
        else [
            (title, _diff_groups(pairs, unpaired))
            for title, pairs, unpaired in (
                ("New failures", d.new_failures, "new case"),
                ("Flaky", d.flakes, ""),
                ("Stale expectations", [(None, r) for r in d.stale], "expectation no longer holds"),
                ("Fixed", d.fixed, ""),
                ("Other outcome changes", d.changed, ""),
            )
            if pairs
        ],
        "failures": _failure_groups(results),
        "known": _known_issues(results, versions.get("executorch-git", "")),
        "explained": _explained(results),
        "numbers": scheme_numbers(results),
        "attribution": attribution.rows(results),
        "unfloored": unfloored_reasons(results),
        "heatmaps": [
            {
                "title": f"{y} x {x}",
                "pass": plots.heatmap(g, "pass_rate"),
                "error": plots.heatmap(g, "ratio"),
                "known": plots.heatmap(g, "known") if g.has_known else None,
                "cycles": plots.heatmap(g, "cycles") if g.has_cycles else None,
            }
            for x, y in HEATMAPS
            for g in [grid(results, x, y)]
            if g.xs and g.ys
        ],
        "cross": _cross_target(history, run, results),
        "trend": plots.trend(trend_runs) if len(trend_runs) > 1 else None,
        "trend_runs": len(trend_runs),
        "stages": plots.stage_times(results) if results else None,
        "versions": sorted(versions.items()),
    }


def write_report(
    history: History | None, run: RunInfo, results: list[CaseResult], out: Path, d: Diff | None = None, trend: int = 30
) -> Path:
    """Write `out/index.html` and `out/junit.xml` (and `out/releases.html` when the history holds the tier on
    another ExecuTorch too); returns the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    page = out / "index.html"
    releases = release_page(history, run) if history is not None else None
    page.write_text(
        _ENV.get_template("index.html.j2").render(
            **context(history, run, results, d, trend), releases=releases is not None
        ),
        encoding="utf-8",
    )
    write_junit(run, results, out / "junit.xml")
    if releases is not None:
        (out / "releases.html").write_text(_ENV.get_template("releases.html.j2").render(**releases), encoding="utf-8")
    return page
