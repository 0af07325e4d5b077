"""Durable results: append, read back, merge in order, corrupt files named."""

from __future__ import annotations

import pytest

from harness.results import CaseResult, Outcome, ResultsFileError, ResultWriter, merge, read_results


def _result(d: str, outcome=Outcome.PASS) -> CaseResult:
    return CaseResult(d, 0, outcome, metrics={"max_lsb": 0, "worst": {"n": 0, "c": 1, "pos": [2]}})


def test_each_result_is_on_disk_as_soon_as_written(tmp_path):
    path = tmp_path / "r.jsonl"
    writer = ResultWriter(path)
    writer.write(_result("a"))
    # Not closed: a crash now must not lose the line.
    assert [r.descriptor for r in read_results(path)] == ["a"]
    writer.write(_result("b", Outcome.MISMATCH))
    back = read_results(path)
    assert [(r.descriptor, r.outcome) for r in back] == [("a", Outcome.PASS), ("b", Outcome.MISMATCH)]
    assert back[0].metrics["worst"] == {"n": 0, "c": 1, "pos": [2]}
    writer.close()


def test_merge_orders_by_sweep_order(tmp_path):
    for name, ds in (("w1", ["c", "a"]), ("w2", ["b"])):
        with ResultWriter(tmp_path / f"{name}.jsonl") as w:
            for d in ds:
                w.write(_result(d))
    merged = merge([tmp_path / "w1.jsonl", tmp_path / "w2.jsonl"], tmp_path / "all.jsonl", ["a", "b", "c"])
    assert [r.descriptor for r in merged] == ["a", "b", "c"]
    assert [r.descriptor for r in read_results(tmp_path / "all.jsonl")] == ["a", "b", "c"]


def test_corrupt_results_file_is_one_clear_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_result("a").to_json() + "\n{not json\n")
    with pytest.raises(ResultsFileError) as e:
        read_results(path)
    assert "line 2" in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)
    path.write_text('{"descriptor": "a", "seed": 0, "outcome": "exploded"}\n')
    with pytest.raises(ResultsFileError, match="line 1"):
        read_results(path)
    with pytest.raises(ResultsFileError, match="cannot read"):
        read_results(tmp_path / "missing.jsonl")


def test_green_and_stale():
    assert _result("a").green
    assert _result("a", Outcome.EXPECTED_REJECTION).green
    assert _result("a", Outcome.MISTRUSTED).green  # proves nothing, fails nothing
    assert not _result("a", Outcome.NOT_DELEGATED).green
    stale = _result("a")
    stale.stale = "known issue x no longer reproduces"
    assert not stale.green


def test_repro_line():
    assert _result("conv2d_x").repro == "python -m harness run 'conv2d_x' --seed 0"
