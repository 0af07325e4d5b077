"""An interrupted run is diffed over the cases it reached; a resumed run never against itself."""

from __future__ import annotations

from harness.history.db import COMPLETE, History, RunInfo
from harness.history.diff import diff
from harness.report.diff_format import headline
from harness.results.case_result import Outcome
from tests.factories import case_result

BASE = [case_result(f"conv2d_ic{n}_oc8_i8x8_k3_qfp32") for n in range(1, 6)]


def test_cases_an_interrupted_run_did_not_reach_are_not_removed():
    d = diff(BASE, BASE[:2], "b", "n", interrupted=True)
    assert d.removed == [] and d.not_run == 3 and not d.regression
    assert headline(d) == "no regression: n against b (no changes; interrupted: 3 case(s) of b not reached)"
    complete = diff(BASE, BASE[:2], "b", "n")
    assert len(complete.removed) == 3 and complete.not_run == 0 and "3 removed" in headline(complete)


def test_an_interrupted_run_still_shows_its_new_failures():
    failing = [case_result(BASE[0].descriptor, Outcome.MISMATCH, versions={"executorch": "1.6.0"})]  # a new backend
    d = diff(BASE, failing, "b", "n", interrupted=True)
    assert d.regression and len(d.new_failures) == 1 and d.not_run == 4


def test_a_resumed_run_is_diffed_against_the_run_before_it(tmp_path):
    with History(tmp_path / "h.sqlite") as h:
        for run_id, started in (("20260101T000000-aaaaaa", 100.0), ("20260102T000000-bbbbbb", 200.0)):
            h.ensure_run(RunInfo(run_id, "smoke", 0, "tosa", started=started, status=COMPLETE))
            h.record(case_result(BASE[0].descriptor, run_id=run_id))
            h.finish_run(run_id, COMPLETE)
        resumed = h.run("20260102T000000-bbbbbb")
        # the resumed run ended after it began: asked for the last green run before its end, it is not its own
        assert h.resolve("last-green", like=resumed, before=1e12, excluding=resumed.run_id) == "20260101T000000-aaaaaa"
        assert h.resolve("last-green", like=resumed, before=1e12) == resumed.run_id  # what the resumed run once got
