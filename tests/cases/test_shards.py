"""Shards: a deterministic, cost-balanced partition whose union is exactly the tier; merging them back."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import pytest

from harness.cases.selection import select
from harness.cases.shards import assign, expected_cost, parse_shard, shard
from harness.config import ConfigError
from harness.history.db import HistoryError
from harness.history.ingest import merge_shards
from harness.results.case_result import CaseResult, Outcome
from harness.results.store import read_results, write_results


@functools.cache
def _nightly():
    return select("nightly")


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_the_shards_are_disjoint_and_together_exactly_the_tier(n):
    tier = _nightly()
    of = assign(tier, n)  # once: each `shard` call assigns the whole tier again
    parts = [[c for c, p in zip(tier, of) if p == k] for k in range(n)]
    assert shard(tier, f"{n}/{n}") == parts[-1]  # what --shard K/N keeps is that part
    descriptors = [c.descriptor for p in parts for c in p]
    assert sorted(descriptors) == sorted(c.descriptor for c in tier) and len(set(descriptors)) == len(tier)
    order = {c.descriptor: i for i, c in enumerate(tier)}
    for p in parts:  # each in sweep order
        assert [order[c.descriptor] for c in p] == sorted(order[c.descriptor] for c in p)


def test_shards_are_balanced_by_expected_cost():
    tier = _nightly()
    parts = assign(tier, 4)
    load = [sum(expected_cost(c) for c, p in zip(tier, parts) if p == k) for k in range(4)]
    assert max(load) / min(load) < 1.01  # 2,708 cases: greedy dealing is all but exact
    assert expected_cost(select("smoke", pattern="_dyspatial$")[0]) > 2 * expected_cost(select("smoke")[0])


@pytest.mark.processes
def test_a_shard_is_the_same_in_another_process():
    code = "from harness.cases.selection import select; print([c.descriptor for c in select('smoke', shard='2/5')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str([c.descriptor for c in select("smoke", shard="2/5")])


@pytest.mark.parametrize("spec", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2"])
def test_bad_shards_are_one_line(spec):
    with pytest.raises(ConfigError, match="invalid --shard") as e:
        parse_shard(spec)
    assert "\n" not in str(e.value)


def _shard_file(path, descriptors, seed=0, versions=None, outcome=Outcome.PASS):
    write_results([CaseResult(d, seed, outcome, versions=versions or {"torch": "2.13.0"}) for d in descriptors], path)
    return str(path)


def test_merge_joins_shards_reporting_duplicates_and_gaps(tmp_path):
    tier = [c.descriptor for c in select("smoke")]
    a = _shard_file(tmp_path / "a.jsonl", tier[:200])
    b = _shard_file(tmp_path / "b.jsonl", tier[199:430])  # one case twice, the last six missing
    report = merge_shards([a, b], tmp_path / "all.jsonl", tier, tier="smoke")
    assert len(report.duplicates) == 1 and tier[199] in report.duplicates[0]
    assert report.gaps == tier[430:]
    merged = read_results(tmp_path / "all.jsonl")
    assert [r.descriptor for r in merged] == tier[:430] and len({r.run_id for r in merged}) == 1
    assert report.run.expected == len(tier) and report.run.tier == "smoke"


def test_merge_refuses_mixed_versions_or_seeds(tmp_path):
    a = _shard_file(tmp_path / "a.jsonl", ["conv2d_a"])
    b = _shard_file(tmp_path / "b.jsonl", ["conv2d_b"], seed=1)
    with pytest.raises(HistoryError, match="mixes seeds: 0, 1"):
        merge_shards([a, b], tmp_path / "all.jsonl")
    c = _shard_file(tmp_path / "c.jsonl", ["conv2d_c"], versions={"torch": "2.14.0"})
    with pytest.raises(HistoryError, match="mixes versions"):
        merge_shards([a, c], tmp_path / "all.jsonl")
    assert not (tmp_path / "all.jsonl").exists()
    json.loads((tmp_path / "a.jsonl").read_text())  # the shards are left as they were
