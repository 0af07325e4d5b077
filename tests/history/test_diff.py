"""Diffing runs: regressions, fixes, drift at its thresholds, flakes, and the command's exit status."""

from __future__ import annotations

import json

import pytest

from harness.cli.main import main
from harness.history.diff import diff
from harness.policy.tolerances import DRIFT_DOWN, DRIFT_UP
from harness.report.diff_format import to_json, to_markdown, to_text
from harness.results.case_result import CaseResult, Outcome
from harness.results.store import write_results
from tests.factories import case_result

V = {"torch": "2.13.0", "executorch": "1.5.1", "harness-commit": "abc"}


def _r(d, outcome=Outcome.PASS, seed=0, versions=V, canary="", rule=None, **metrics) -> CaseResult:
    if rule is None:
        rule = "int-exact" if "max_lsb" in metrics else "dot-product" if "max_err" in metrics else ""
    return case_result(d, outcome, seed, versions=dict(versions), canary=canary, rule=rule, metrics=metrics)


def test_outcome_changes_are_sorted_into_their_kinds():
    base = [_r("a"), _r("b", Outcome.MISMATCH), _r("c"), _r("d", Outcome.KNOWN_ISSUE), _r("gone")]
    new = [
        _r("a", Outcome.LOWERING_ERROR, versions={**V, "executorch": "1.6.0"}),
        _r("b"),
        _r("c"),
        _r("d", Outcome.EXPECTED_REJECTION),
        _r("fresh", Outcome.MISMATCH),
    ]
    new[2].stale = "known issue x no longer reproduces"
    d = diff(base, new)
    assert [n.descriptor for _, n in d.new_failures] == ["a", "c", "fresh"]  # a stale pass is not green
    assert [n.descriptor for _, n in d.fixed] == ["b"]
    assert [n.descriptor for _, n in d.changed] == ["d"]
    assert [r.descriptor for r in d.added] == ["fresh"] and [r.descriptor for r in d.removed] == ["gone"]
    assert [r.descriptor for r in d.stale] == ["c"]
    assert d.regression and not d.same_inputs and not d.flakes


@pytest.mark.parametrize(
    "metric, before, step",
    [
        ("max_lsb", 0, DRIFT_UP["max_lsb"]),
        ("exact_share", 1.0, -DRIFT_DOWN["exact_share"]),
        ("sqnr_db", 40.0, -DRIFT_DOWN["sqnr_db"]),
    ],
)
def test_drift_is_flagged_at_its_threshold_and_not_below(metric, before, step):
    other = {"max_lsb": 0, "exact_share": 1.0, "sqnr_db": 40.0, "rule": "int-fake-quant", "fq_tolerance_lsb": 100}
    base = [_r("a", **{**other, metric: before})]
    assert metric in [x.metric for x in diff(base, [_r("a", **{**other, metric: before + step})]).drift]
    assert not diff(base, [_r("a", **{**other, metric: before + 0.9 * step})]).drift
    assert not diff(base, [_r("a", seed=1, **{**other, metric: before + step})]).drift  # other data: no comparison


def test_float_drift_is_a_share_of_the_cases_own_limit():
    base = [_r("a", max_err=10.0, err_limit=100)]
    assert [x.metric for x in diff(base, [_r("a", max_err=36.0, err_limit=100)]).drift] == ["error_ratio"]
    assert not diff(base, [_r("a", max_err=30.0, err_limit=100)]).drift


def test_an_outcome_change_on_identical_inputs_is_a_flake_and_a_canary_is_not():
    base = [_r("a"), _r("b")]
    flaky = diff(base, [_r("a"), _r("b", Outcome.MISMATCH)])
    assert flaky.same_inputs and [n.descriptor for _, n in flaky.flakes] == ["b"] and flaky.regression
    canary = diff(base, [_r("a", canary="pad-off-by-one"), _r("b", Outcome.MISMATCH, canary="pad-off-by-one")])
    assert not canary.same_inputs and [n.descriptor for _, n in canary.new_failures] == ["b"]


def test_renderings_say_the_same_thing():
    d = diff([_r("a")], [_r("a", Outcome.MISMATCH, versions={**V, "harness-commit": "def"})], "base", "new")
    assert to_text(d).startswith("REGRESSION: new against base (1 new failures)")
    assert "<summary>New failures: 1</summary>" in to_markdown(d)
    assert json.loads(to_json(d))["new_failures"][0] == {
        "descriptor": "a",
        "before": "pass",
        "after": "mismatch",
        "reason": "",
    }


def test_the_diff_command_exits_by_its_rule(tmp_path, capsys):
    base, same, worse = (tmp_path / f"{n}.jsonl" for n in ("base", "same", "worse"))
    write_results([_r("a"), _r("b")], base)
    write_results([_r("a"), _r("b")], same)
    write_results([_r("a"), _r("b", Outcome.MISMATCH, versions={**V, "harness-commit": "def"})], worse)
    db = str(tmp_path / "none.sqlite")
    assert main(["diff", str(base), str(same), "--db", db]) == 0
    assert "no regression" in capsys.readouterr().out
    assert main(["diff", str(base), str(worse), "--db", db, "--format", "markdown"]) == 1
    assert "New failures: 1" in capsys.readouterr().out


# Vela's estimates of conv2d_ic8_oc8_i12x12_k3_p1_qa8w8 on ethos-u55-128 (harness/policy/cost.py measured them):
# the bare conv, the same with a fused relu (the same work, another command stream), with an add after it
BARE = {"npu_ops": 5, "cpu_ops": 0, "sram_kib": 2.98, "off_chip_flash_kib": 0.73, "cycles": 5312, "npu_cycles": 4432}
RELU = {**BARE, "sram_kib": 2.97, "off_chip_flash_kib": 0.72, "cycles": 5296, "npu_cycles": 4416}
ADD = {**BARE, "npu_ops": 6, "sram_kib": 4.12, "off_chip_flash_kib": 0.75, "cycles": 7056, "npu_cycles": 6176}


def _vela(d, vela, outcome=Outcome.PASS) -> CaseResult:
    return case_result(d, outcome, 0, versions=dict(V), rule="int-exact", metrics={"max_lsb": 0, "vela": vela})


def test_what_the_npu_pays_is_tracked_apart_from_the_numbers():
    assert not diff([_vela("a", BARE)], [_vela("a", RELU)]).cost  # the same work: below every threshold
    d = diff([_vela("a", BARE)], [_vela("a", ADD)], "base", "new")
    assert {c.metric for c in d.cost} == {"cycles", "npu_cycles", "sram_kib", "npu_ops"}  # flash: +0.02 KiB
    assert d.cost_regression and not d.regression
    text = to_text(d)
    assert text.startswith("no regression; COST REGRESSION: new against base (4 cost changes)")
    assert "  a: cycles 5312 -> 7056 (+32.8%)" in text and "NPU cost past threshold" in text
    assert json.loads(to_json(d))["cost_regression"] is True
    cheaper = diff([_vela("a", ADD)], [_vela("a", BARE)])
    assert cheaper.cost and not cheaper.cost_regression  # reported, and no regression
    assert diff([_vela("a", BARE)], [_vela("a", {**BARE, "cpu_ops": 1})]).cost_regression  # an op left the NPU


def test_the_diff_command_fails_on_cost_only_when_asked(tmp_path, capsys):
    base, dearer, wrong = (tmp_path / f"{n}.jsonl" for n in ("base", "dearer", "wrong"))
    write_results([_vela("a", BARE)], base)
    write_results([_vela("a", ADD)], dearer)
    write_results([_vela("a", ADD, Outcome.MISMATCH)], wrong)
    db = str(tmp_path / "none.sqlite")
    assert main(["diff", str(base), str(dearer), "--db", db]) == 0
    assert "a: npu_ops 5 -> 6 (+20.0%)" in capsys.readouterr().out
    assert main(["diff", str(base), str(dearer), "--db", db, "--fail-on-cost"]) == 4
    capsys.readouterr()
    assert main(["diff", str(base), str(wrong), "--db", db, "--fail-on-cost"]) == 1  # the numbers say it first
    out = capsys.readouterr().out
    assert out.startswith("REGRESSION; COST REGRESSION:") and "  a: pass -> mismatch" in out  # same inputs: a flake
