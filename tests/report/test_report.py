"""The HTML report and JUnit XML of a run with failures, known issues, mistrusted cases, a stale
entry and a baseline: rendered in headless Chromium and checked from the rendered page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.history.db import History, RunInfo
from harness.history.diff import diff
from harness.report.html import write_report
from harness.results.case_result import CaseResult, Outcome
from tests.browser import chromium, headless
from tests.factories import case_result

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "reports" / "report-test" / "screenshot.png"
V = {"torch": "2.13.0+cpu", "executorch": "1.5.1", "executorch-git": "3b6068392324", "harness-commit": "abc"}
INT = "conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s{s}x{s}_p1x1_d1x1_b1_pmzeros_q{q}_dsnormal_cx{cx}"


def _case(descriptor, outcome, run_id, **kw) -> CaseResult:
    kw.setdefault(
        "timings_s", {"build": 0.01, "quantize": 0.1, "lower": 0.8, "run": 0.04, "judge": 0.003, "total": 0.95}
    )
    versions = dict(V, **({"harness-commit": "def"} if run_id == "r3" else {}))  # last night's change
    return case_result(descriptor, outcome, run_id=run_id, versions=versions, **kw)


def _run(run_id: str, broken: bool) -> list[CaseResult]:
    passing = {
        "max_lsb": 0,
        "n_diff": 0,
        "n_total": 1152,
        "exact_share": 1.0,
        "fq_max_lsb": 1,
        "fq_tolerance_lsb": 1,
        "sqnr_db": 38.2,
        "sqnr_floor_db": 14.0,
    }
    rs = [
        _case(INT.format(s=s, q=q, cx="none"), Outcome.PASS, run_id, rule="int-exact", metrics=dict(passing))
        for s in (1, 2)
        for q in ("a8w8", "a8w8-pt")
    ]
    rs.append(
        _case(
            INT.format(s=1, q="fp16", cx="relu"),
            Outcome.PASS,
            run_id,
            rule="dot-product",
            metrics={"max_err": 0.47, "err_limit": 4, "n_total": 1152, "n_inexact": 300},
        )
    )
    rs.append(
        _case(
            INT.format(s=1, q="a8w8", cx="relu6"),
            Outcome.KNOWN_ISSUE,
            run_id,
            issue="int-relu6-not-delegated",
            actual_outcome="not_delegated",
            reason="left on CPU: aten.hardtanh.default",
        )
    )
    rs.append(
        _case(
            INT.format(s=2, q="a16w8", cx="relu"),
            Outcome.MISTRUSTED,
            run_id,
            rule="int-fake-quant",
            reason="93% of the reference output is one value",
            metrics=dict(passing, max_lsb=0),
        )
    )
    rs.append(
        _case(
            "tconv2d_n1_ic4_oc4_g1_i6x6_k3x3_s1x1_p0x0_d2x2_op0x0_b1_pmzeros_qfp32_dsnormal_cxnone",
            Outcome.EXPECTED_REJECTION,
            run_id,
            rejection="tconv-dilation",
            actual_outcome="not_delegated",
            reason="left on CPU: aten.convolution.default",
        )
    )
    if broken:
        rs[0] = _case(
            rs[0].descriptor,
            Outcome.MISMATCH,
            run_id,
            rule="int-exact",
            conv_ops=["CONV2D"],
            reason="vs integer-exact: 12 element(s) off by more than 0 LSB (max 3) <script>alert(1)</script>",
            metrics=dict(
                passing,
                max_lsb=3,
                n_over=12,
                exact_share=0.99,
                worst={"n": 0, "c": 3, "pos": [0, 5], "out": 17, "ref": 14},
                where={
                    "n_diff": 12,
                    "border": 12,
                    "interior": 0,
                    "border_share": 1.0,
                    "border_positions_share": 0.3,
                    "channels": "0-3",
                    "n_channels": 4,
                    "of_channels": 8,
                },
            ),
        )
        rs[1] = _case(
            rs[1].descriptor,
            Outcome.LOWERING_ERROR,
            run_id,
            stage="lower",
            error_type="KeyError",
            reason="lower: KeyError: 'val'",
        )
        rs[2] = _case(
            rs[2].descriptor,
            Outcome.PASS,
            run_id,
            rule="int-exact",
            metrics=dict(passing),
            issue="int-relu6-not-delegated",
            stale="known issue int-relu6-not-delegated no longer reproduces",
        )
    return rs


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    with History(out / "h.sqlite") as h:
        for i, (run_id, broken) in enumerate((("r1", False), ("r2", False), ("r3", True))):
            h.ensure_run(
                RunInfo(
                    run_id,
                    "smoke",
                    0,
                    "tosa",
                    started=1000.0 * (i + 1),
                    ended=1000.0 * (i + 1) + 300,
                    status="complete",
                    versions=V,
                    command="python -m harness sweep",
                )
            )
            for r in _run(run_id, broken):
                h.record(r)
        run, results = h.run("r3"), h.results("r3")
        page = write_report(h, run, results, out, diff(h.results("r2"), results, "r2", "r3"))
    return page, results


@pytest.mark.processes  # starts headless Chromium
def test_the_rendered_page_has_its_plots_and_failure_rows(report, tmp_path):
    page, results = report
    browser = chromium()
    dom = headless(browser, tmp_path / "a", "--dump-dom", page.as_uri()).stdout
    plots = len(re.findall(r'<img class="plot"', dom))
    assert plots >= 11  # 5 heatmap pairs, the trend, the stage times
    assert f'data-plots-loaded="{plots}"' in dom, "a plot did not decode in the browser"
    rows = re.findall(r'<tr class="failure-row">.*?</tr>', dom, re.S)
    not_green = [r for r in results if not r.green]
    assert len(rows) == len(not_green) == 3
    for r in not_green:
        assert any(r.descriptor.replace("_", "_<wbr>") in row for row in rows), r.descriptor
    assert "REGRESSION: r3 against r2 (3 new failures, 1 stale)" in dom and "int-relu6-not-delegated" in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script>alert(1)" not in dom
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    headless(browser, tmp_path / "b", "--window-size=1400,2200", f"--screenshot={SCREENSHOT}", page.as_uri())
    assert SCREENSHOT.stat().st_size > 50_000


def test_junit_xml_reads_as_ci_dashboards_read_it(report):
    from junitparser import Error, Failure, JUnitXml, Skipped

    page, results = report
    xml = JUnitXml.fromfile(str(page.with_name("junit.xml")))
    (suite,) = list(xml)
    cases = list(suite)
    assert suite.tests == len(results) == len(cases)
    kinds = {c.name: type(c.result[0]).__name__ if c.result else "pass" for c in cases}
    assert sorted(kinds.values()).count("Failure") == 2  # the mismatch and the stale pass
    assert (suite.failures, suite.errors, suite.skipped) == (2, 1, 2)  # lowering error; known issue, mistrusted
    mismatch = next(c for c in cases if c.name == results[0].descriptor)
    assert mismatch.classname == "CONV2D.a8w8" and isinstance(mismatch.result[0], Failure)
    assert "__REPRO: python -m harness run" in mismatch.result[0].text
    assert any(isinstance(c.result[0], Error) for c in cases if c.result)
    assert any(isinstance(c.result[0], Skipped) and "known issue" in c.result[0].message for c in cases if c.result)


def test_cross_target_comparisons():
    from harness.report.cross_target import refused_here_run_there, tosa_differences

    here = [
        CaseResult("a", 0, Outcome.EXPECTED_REJECTION, rejection="u55-stride", tosa_ops=[]),
        CaseResult("b", 0, Outcome.PASS, tosa_ops=["TRANSPOSE", "CONV2D", "RESCALE", "TRANSPOSE"]),
        CaseResult("c", 0, Outcome.KNOWN_ISSUE, issue="u55-int16-tconv-vela", actual_outcome="lowering_error"),
    ]
    there = [CaseResult("a", 0, Outcome.PASS), CaseResult("b", 0, Outcome.PASS), CaseResult("c", 0, Outcome.MISMATCH)]
    refused = refused_here_run_there(here, there, "ethos-u85-256")
    assert [(x.descriptor, x.here, x.there) for x in refused] == [("a", "u55-stride", "ethos-u85-256")]
    generic = [CaseResult("b", 0, Outcome.PASS, tosa_ops=["TRANSPOSE", "CONV2D", "TRANSPOSE"])]
    assert tosa_differences(here, generic) == [{"descriptor": "b", "extra": "RESCALE", "missing": ""}]


@pytest.mark.parametrize("target", ["vgf", "vgf-emu"])
def test_a_vgf_run_is_compared_with_the_generic_lowering(tmp_path, target):
    """The report's cross-target section: a vgf (or vgf-emu) run against the newest complete tosa run of the tier."""
    from harness.history.db import COMPLETE, History, RunInfo
    from harness.report.html import _cross_target

    h = History(tmp_path / "h.sqlite")
    generic = RunInfo("r-tosa", "smoke", 0, "tosa", started=1000.0, ended=1300.0, expected=1)
    h.ensure_run(generic)
    h.record(CaseResult("b", 0, Outcome.PASS, target="tosa", run_id="r-tosa", tosa_ops=["CONV2D"]))
    h.finish_run("r-tosa", COMPLETE, 1300.0)
    vgf = RunInfo("r-vgf", "smoke", 0, target, started=2000.0, ended=2300.0, expected=1)
    here = [
        CaseResult("b", 0, Outcome.LOWERING_ERROR, target=target, run_id="r-vgf", reason="model-converter exited 1")
    ]
    cross = _cross_target(h, vgf, here)
    h.close()
    assert cross["others"] == ["tosa"] and cross["generic"] == "r-tosa"
    assert [(x.descriptor, x.there) for x in cross["refused"]] == [("b", "tosa")]


def test_a_green_run_does_not_look_red_in_the_config_space():
    """A known issue is green and its error is not drawn as unexplained: it has its own view."""
    from harness.report.figures import grid

    d = "conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxnone"
    results = [
        case_result(d, Outcome.PASS, rule="int-exact", metrics={"max_lsb": 0}),
        case_result(
            d, Outcome.KNOWN_ISSUE, seed=1, rule="int-exact", issue="x", metrics={"max_lsb": 57, "fq_tolerance_lsb": 1}
        ),
    ]
    g = grid(results, "kernel", "stride")
    assert g.pass_rate == [[1.0]] and g.known_share == [[0.5]] and g.has_known
    assert g.max_ratio == [[0.0]], "the known issue's 57 LSB is its own view, not an unexplained error"
    red = [case_result(d, Outcome.MISMATCH, seed=2, rule="int-exact", metrics={"max_lsb": 3})]
    assert grid(results + red, "kernel", "stride").pass_rate == [[2 / 3]]
