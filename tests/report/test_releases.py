"""The release page: a tier on every ExecuTorch in the history, side by side, from what each backend did."""

from __future__ import annotations

import re
import time

import pytest

from harness.history.db import COMPLETE, History, RunInfo
from harness.report.html import write_report
from harness.report.releases import page
from harness.results.case_result import CaseResult, Outcome
from tests.browser import chromium, headless
from tests.factories import case_result


def _run(
    history: History,
    run_id: str,
    executorch: str,
    results: list[CaseResult],
    started: float,
    tree: str = "",
    tools: dict | None = None,
    target: str = "tosa",
) -> RunInfo:
    versions = {"torch": "2.13.0", "executorch": executorch, **({"executorch-tree": tree} if tree else {})}
    versions.update(tools or {})
    run = RunInfo(run_id, "smoke", 0, target, started=started, ended=started + 1, status=COMPLETE, versions=versions)
    history.ensure_run(run)
    for r in results:
        r.run_id, r.versions = run_id, versions
        history.record(r)
    history.finish_run(run_id, COMPLETE, started + 1)
    return run


NAMES = {n: f"conv2d_ic4_oc{k}_i8x8_k3_p1_qa8w8" for k, n in enumerate(("fixed", "broke", "same", "numbers", "a"), 4)}


def _r(d: str, actual: str, digest: str = "", issue: str = "", **metrics) -> CaseResult:
    outcome = Outcome.KNOWN_ISSUE if issue else Outcome(actual)
    return case_result(
        NAMES[d],
        outcome,
        actual_outcome=actual,
        issue=issue,
        output_sha256=digest,
        metrics=metrics,
        stage="lower" if actual == "lowering_error" else "",
        error_type="AttributeError" if actual == "lowering_error" else "",
        reason="lower: AttributeError: x" if actual != "pass" else "",
    )


@pytest.mark.processes  # starts headless Chromium
def test_each_step_names_what_it_fixed_broke_and_changed(tmp_path):
    t = time.time() - 100
    with History(tmp_path / "h.sqlite") as h:
        _run(
            h,
            "old",
            "1.4.1",
            [
                _r("fixed", "lowering_error"),
                _r("broke", "pass", "d1"),
                _r("same", "pass", "d2"),
                _r("numbers", "pass", "d3", max_lsb=0),
            ],
            t,
        )
        _run(
            h,
            "tree",
            "1.5.1",
            [_r("fixed", "pass"), _r("broke", "pass"), _r("same", "pass"), _r("numbers", "pass")],
            t + 5,
            tree="/src/executorch@0123456789ab",
        )
        new = _run(
            h,
            "new",
            "1.5.1",
            [
                _r("fixed", "pass", "d0"),
                _r("broke", "mismatch", issue="some-entry", max_lsb=9),
                _r("same", "pass", "d2"),
                _r("numbers", "pass", "d4", max_lsb=1),
            ],
            t + 10,
        )
        p = page(h, new)
        assert [c["label"] for c in p["columns"]] == ["1.4.1", "1.5.1", "/src/executorch@0123456789ab"]
        first = p["steps"][0]
        back = {v: k for k, v in NAMES.items()}
        kinds = {back[c.descriptor]: (c.kind, c.before, c.after, c.explained) for c in first.changes}
        assert kinds == {
            "fixed": ("fixed", "lowering_error/lower/AttributeError", "pass", ""),
            "broke": ("broke", "pass", "mismatch", "some-entry"),
            "numbers": ("other numbers", "0 LSB", "1 LSB", ""),
        }
        assert sorted(back[r["descriptor"]] for r in p["rows"]) == ["broke", "fixed", "numbers"]
        broke = next(r for r in p["rows"] if r["descriptor"] == NAMES["broke"])
        assert broke["cells"] == ["pass", "mismatch (some-entry) 9 LSB", "pass"]  # the tree comes after the releases
        write_report(h, new, h.results("new"), tmp_path / "out")
    html = (tmp_path / "out" / "releases.html").read_text()
    assert html.count('class="release"') == 3 and html.count('class="differs"') == 3
    assert 'id="releases-link"' in (tmp_path / "out" / "index.html").read_text()
    browser = chromium()  # as a reader sees it
    dom = headless(browser, tmp_path / "profile", "--dump-dom", (tmp_path / "out" / "releases.html").as_uri()).stdout
    assert len(re.findall(r'<tr class="release">', dom)) == 3 and len(re.findall(r'<tr class="differs">', dom)) == 3
    assert '1.4.1</span> → <span class="mono">1.5.1</span>:\n    1 fixed, 1 broke, 0 failing another way,' in dom
    assert "mismatch (some-entry) 9 LSB" in dom


def _vela(cycles: int, npu_ops: int = 1) -> dict:
    return {"vela": {"cycles": cycles, "npu_cycles": cycles - 100, "npu_ops": npu_ops, "cpu_ops": 0}}


def test_a_tool_bump_is_a_column_of_its_own_with_what_the_npu_pays(tmp_path):
    """Two runs on one ExecuTorch, Vela 5.1.0 and 5.2.0 (`--tools`): two columns named by the tool that differs
    (not the ones that agree), the NPU's cycles summed per column, and each estimate past its threshold listed."""
    t = time.time() - 100
    common = {"tosa-tools": "2026.5.0"}
    with History(tmp_path / "h.sqlite") as h:
        old = [_r("same", "pass", "d1", **_vela(5_312)), _r("numbers", "pass", "d2", **_vela(10_000))]
        new = [_r("same", "pass", "d1", **_vela(5_328)), _r("numbers", "pass", "d2", **_vela(11_744, npu_ops=2))]
        unrecorded = [_r("same", "pass", "d1", **_vela(5_312))]
        for r in (*old, *new, *unrecorded):
            r.target = "ethos-u55-128"
        # a run from before the tools' versions were recorded is not a setup of its own
        _run(h, "unrecorded", "1.5.1", unrecorded, t - 5, target="ethos-u55-128")
        _run(h, "v51", "1.5.1", old, t, tools={**common, "ethos-u-vela": "5.1.0"}, target="ethos-u55-128")
        run = _run(h, "v52", "1.5.1", new, t + 5, tools={**common, "ethos-u-vela": "5.2.0"}, target="ethos-u55-128")
        p = page(h, run)
        assert [c["label"] for c in p["columns"]] == ["1.5.1 · ethos-u-vela 5.1.0", "1.5.1 · ethos-u-vela 5.2.0"]
        assert [c["npu"]["cycles"] for c in p["columns"]] == [15_312, 17_072]
        (s,) = p["steps"]
        assert not s.changes  # the same outcomes and bytes: only the cost moved
        # 16 cycles is a different command stream, not a change (harness.policy.cost); +1,744 and an operator are
        assert [(c.descriptor, c.metric, c.before, c.after) for c in s.cost] == [
            (NAMES["numbers"], "cycles", 10_000, 11_744),
            (NAMES["numbers"], "npu_cycles", 9_900, 11_644),
            (NAMES["numbers"], "npu_ops", 1, 2),
        ]
        write_report(h, run, h.results("v52"), tmp_path / "out")
    html = (tmp_path / "out" / "releases.html").read_text()
    assert html.count('<tr class="cost dearer">') == 3 and "15,312 cycles" in html and "+17.4%" in html


def test_one_release_makes_no_page(tmp_path):
    with History(tmp_path / "h.sqlite") as h:
        run = _run(h, "only", "1.5.1", [_r("a", "pass")], time.time())
        assert page(h, run) is None
        write_report(h, run, h.results("only"), tmp_path / "out")
    assert not (tmp_path / "out" / "releases.html").exists()
