"""Merging mutation reports of one tier's parts: the verdict of the union of their cases, mutant by mutant."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from harness.config import ConfigError
from harness.mutation.merge import combine, merge
from harness.mutation.report import MutantResult

REPORT = Path(__file__).resolve().parents[2] / "benchmarks/results/mutation/smoke_all_ops_after.json"


def _row(status: str, **kw) -> MutantResult:
    return MutantResult("mutant:t:1", "f", 1, "const", "1 -> 2", status, **kw)


def test_a_kill_in_any_part_kills_and_the_parts_cases_add_up():
    row = combine([_row("survived", cases_run=5, judged=5), _row("killed", cases_run=1, killed_by="c", outcome="m")])
    assert (row.status, row.killed_by, row.cases_run) == ("killed", "c", 6)
    assert combine([_row("killed", cases_run=1), _row("invalid", cases_run=1)]).status == "invalid"


def test_green_parts_give_the_unions_verdict():
    assert combine([_row("unreached"), _row("unreached")]).status == "unreached"
    masked = combine([_row("masked", cases_run=2, masked_by="issue-a"), _row("unreached")])
    assert (masked.status, masked.masked_by, masked.judged) == ("masked", "issue-a", 0)
    row = combine([_row("masked", cases_run=2, masked_by="issue-a"), _row("survived", cases_run=3, judged=3)])
    assert (row.status, row.cases_run, row.judged, row.masked_by) == ("survived", 5, 3, "issue-a")


def _pieces(tmp_path, first: list[dict], second: list[dict], **second_fields) -> list[Path]:
    data = json.loads(REPORT.read_text())
    paths = []
    for i, (rows, extra) in enumerate(((first, {}), (second, second_fields))):
        piece = {**data, "mutants": rows, "undecided": [r["name"] for r in second] if i == 0 else [], **extra}
        paths.append(tmp_path / f"p{i}.json")
        paths[-1].write_text(json.dumps(piece))
    return paths


def test_a_listing_is_judged_again_on_the_union_of_the_parts_cases(tmp_path):
    rows = json.loads(REPORT.read_text())["mutants"]
    equivalent = next(r for r in rows if r["status"] == "equivalent")
    killed = next(r for r in rows if r["status"] == "killed")
    reached_by_new_cases = {**equivalent, "status": "survived", "cases_run": 3, "judged": 3, "reason": ""}
    report, undecided = merge(_pieces(tmp_path, [equivalent, killed], [reached_by_new_cases]))
    merged = {m.name: m for m in report.mutants}
    assert not undecided and merged[killed["name"]].status == "killed"
    row = merged[equivalent["name"]]
    assert row.status == "equivalent" and row.cases_run == equivalent["cases_run"] + 3
    assert f"(ran {row.cases_run} cases, outputs bit-identical)" in row.reason
    changed = {**reached_by_new_cases, "outputs_changed": 1, "changed_case": "conv2d_new"}
    report, _ = merge(_pieces(tmp_path, [equivalent], [changed]))
    (row,) = report.mutants
    assert row.status == "survived" and "the listing is wrong" in row.reason and "conv2d_new" in row.reason


def test_a_mutant_no_part_decided_stays_undecided(tmp_path):
    rows = json.loads(REPORT.read_text())["mutants"]
    paths = _pieces(tmp_path, rows[:1], rows[1:2])
    data = json.loads(paths[0].read_text())
    paths[0].write_text(json.dumps({**data, "undecided": ["mutant:rewrite_conv_pass:29"]}))
    report, undecided = merge(paths)
    assert undecided == ["mutant:rewrite_conv_pass:29"] == report.undecided and len(report.mutants) == 2
    assert len(report.versions["pieces"]) == 2


def test_parts_of_other_tiers_or_versions_are_refused_in_one_line(tmp_path):
    rows = json.loads(REPORT.read_text())["mutants"][:1]
    with pytest.raises(ConfigError, match=r"p1.json: tier 'nightly', not 'smoke'"):
        merge(_pieces(tmp_path, rows, rows, tier="nightly"))
    versions = {**json.loads(REPORT.read_text())["versions"], "executorch": "1.4.1"}
    with pytest.raises(ConfigError, match=r"p1.json: versions .* differ"):
        merge(_pieces(tmp_path, rows, rows, versions=versions))
    ok = {**json.loads(REPORT.read_text())["versions"], "harness-commit": "0123abc"}  # the harness may differ
    assert merge(_pieces(tmp_path, rows, rows, versions=ok))[0].mutants
    newer = {**json.loads(REPORT.read_text())["versions"], "ai-ml-sdk-model-converter": "0.11.0"}
    assert merge(_pieces(tmp_path, rows, rows, versions=newer))[0].mutants  # a version the older run did not record
    with pytest.raises(ConfigError, match=r"p1.json: versions .* differ"):
        merge(_pieces(tmp_path, rows, rows, versions={**newer, "tosa-tools": "2026.8.0"}))
    (tmp_path / "bad.json").write_text("[]")
    with pytest.raises(ConfigError, match="bad.json: it lacks tier"):
        merge([tmp_path / "bad.json", tmp_path / "p0.json"])


def test_a_stopped_runs_journal_is_a_piece_its_begun_mutants_undecided(tmp_path):
    from harness.mutation.journal import Journal
    from harness.results.case_result import CaseResult, Outcome

    data = json.loads(REPORT.read_text())
    equivalent = next(r for r in data["mutants"] if r["status"] == "equivalent")
    journal = Journal(tmp_path / "mutation.journal.jsonl", {"tier": "smoke", "versions": data["versions"]}, False)
    journal.record(MutantResult(**{**equivalent, "status": "survived", "cases_run": 2, "judged": 2, "reason": ""}))
    journal.record_case(CaseResult("conv2d_x", 0, Outcome.PASS, canary="mutant:rewrite_conv_pass:29"))
    (tmp_path / "report.json").write_text(json.dumps({**data, "mutants": [equivalent], "undecided": []}))
    report, undecided = merge([tmp_path / "report.json", tmp_path / "mutation.journal.jsonl"])
    journal_gz = tmp_path / "kept.journal.jsonl.gz"  # as pieces are kept in the repository
    journal_gz.write_bytes(gzip.compress((tmp_path / "mutation.journal.jsonl").read_bytes()))
    assert merge([tmp_path / "report.json", journal_gz])[0].mutants == report.mutants
    (row,) = report.mutants
    assert row.status == "equivalent" and row.cases_run == equivalent["cases_run"] + 2
    assert undecided == ["mutant:rewrite_conv_pass:29"]
    (tmp_path / "x.jsonl").write_text("not json\n")
    with pytest.raises(ConfigError, match="invalid mutation journal .*x.jsonl"):
        merge([tmp_path / "report.json", tmp_path / "x.jsonl"])


def test_a_merged_report_merges_again_and_keeps_the_runs_it_was_made_of(tmp_path):
    from harness.mutation.render import write

    rows = json.loads(REPORT.read_text())["mutants"]
    first, _ = merge(_pieces(tmp_path, rows[:1], rows[1:2]))
    write(first, tmp_path / "merged")
    later = tmp_path / "later.json"
    later.write_text(json.dumps({**json.loads(REPORT.read_text()), "mutants": rows[2:3], "undecided": []}))
    report, undecided = merge([tmp_path / "merged" / "mutation.json", later])
    assert [m.name for m in report.mutants] == [r["name"] for r in rows[:3]] and not undecided
    assert [p["report"] for p in report.versions["pieces"]] == [
        str(tmp_path / "p0.json"),
        str(tmp_path / "p1.json"),
        str(later),
    ]
