"""The sweep as pytest tests: one per conv case (selected by the `--harness-*` options of harness.pytest_plugin).

Run it from anywhere with the package installed:

    pytest --pyargs harness.pytest_plugin.test_cases --harness-tier smoke -n auto
"""

from __future__ import annotations

import pytest

from harness.results.case_result import CaseResult, Outcome


def check_result(result: CaseResult) -> None:
    """Turn a case result into the pytest verdict, with the repro line."""
    detail = f"{result.outcome.value}: {result.reason}\n__REPRO: {result.repro}"
    worst = result.metrics.get("worst")
    if worst:
        detail += f"\nworst element: {worst}"
    if result.artifacts:
        detail += f"\nartifacts: {result.artifacts}"
    if result.stale:
        pytest.fail(f"stale expectation: {result.stale}\n__REPRO: {result.repro}", pytrace=False)
    if result.outcome is Outcome.SKIPPED:
        pytest.skip(result.reason)
    if result.outcome is Outcome.MISTRUSTED:  # proves nothing: not a pass, not a failure
        pytest.xfail(f"mistrusted: {result.reason}")
    if result.outcome is Outcome.KNOWN_ISSUE:
        pytest.xfail(f"known issue {result.issue} (actual outcome {result.actual_outcome}); see the results file")
    if not result.outcome.ok:
        pytest.fail(detail, pytrace=False)


def test_case(conv_case, harness_run):
    result = harness_run.result(conv_case)
    harness_run.record(result)
    check_result(result)
