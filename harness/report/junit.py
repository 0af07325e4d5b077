"""A run as JUnit XML, the format CI dashboards read.

One testcase per case: class name `<TOSA op>.<scheme>`, name the descriptor.
A mismatch, a case not delegated or a stale expectation is a failure; a
lowering, runner or harness error is an error; a skipped case, a known issue
and a mistrusted case are skipped, with why; a pass and an expected
rejection pass. Every failure's text ends in its repro line.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.history.db import RunInfo
from harness.report.figures import op_of, scheme_of
from harness.report.summary import explanation
from harness.results.case_result import CaseResult, Outcome

_ERRORS = (Outcome.LOWERING_ERROR, Outcome.RUNNER_ERROR, Outcome.HARNESS_ERROR)
_SKIPS = (Outcome.SKIPPED, Outcome.KNOWN_ISSUE, Outcome.MISTRUSTED)


def _detail(r: CaseResult) -> str:
    lines = [f"{r.outcome.value}: {r.stale or r.reason}"]
    if "worst" in r.metrics:
        lines.append(f"worst element: {r.metrics['worst']}")
    if "where" in r.metrics:
        lines.append(f"where: {r.metrics['where']}")
    if r.added_by:
        lines.append(f"added by the {r.added_by}; next: {r.next_step}")
    lines.append(f"__REPRO: {r.repro}")
    return "\n".join(lines)


def junit_tree(run: RunInfo, results: list[CaseResult]) -> ET.ElementTree:
    suite = ET.Element(
        "testsuite",
        name=f"conv-harness {run.tier} on {run.target}",
        timestamp=time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(run.started)),
        hostname=run.host,
    )
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for r in results:
        seconds = r.timings_s.get("total", 0.0)
        total_time += seconds
        case = ET.SubElement(
            suite, "testcase", classname=f"{op_of(r)}.{scheme_of(r)}", name=r.descriptor, time=f"{seconds:.3f}"
        )
        counts["tests"] += 1
        if r.stale or (not r.outcome.ok and r.outcome not in _ERRORS):
            counts["failures"] += 1
            ET.SubElement(case, "failure", message=(r.stale or r.reason)[:300], type=r.outcome.value).text = _detail(r)
        elif r.outcome in _ERRORS:
            counts["errors"] += 1
            ET.SubElement(case, "error", message=r.reason[:300], type=r.error_type or r.outcome.value).text = _detail(r)
        elif r.outcome in _SKIPS:
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=f"{r.outcome.value}: {explanation(r)}"[:300])
        elif r.outcome is Outcome.EXPECTED_REJECTION:
            ET.SubElement(case, "system-out").text = explanation(r)
    for k, v in counts.items():
        suite.set(k, str(v))
    suite.set("time", f"{total_time:.3f}")
    suites = ET.Element(
        "testsuites",
        name=f"conv-harness run {run.run_id}",
        tests=str(counts["tests"]),
        failures=str(counts["failures"]),
        errors=str(counts["errors"]),
        time=f"{total_time:.3f}",
    )
    suites.append(suite)
    return ET.ElementTree(suites)


def write_junit(run: RunInfo, results: list[CaseResult], path: Path) -> Path:
    tree = junit_tree(run, results)
    ET.indent(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path
