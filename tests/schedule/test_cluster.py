"""Sweeps on a Ray cluster started on this machine: the same results as local workers, case by case.

The cluster is `--cluster local` (2 CPUs here). The stand-in case functions
(no torch) check the protocol: every case once, a crash costs its case, a
hang is a timeout; the real cases check that a cluster run equals a local run.
"""

from __future__ import annotations

import pytest

from harness.run.settings import FunctionRef
from harness.schedule.plan import Schedule

pytest.importorskip("ray", reason="the optional extra 'cluster' (ray) is not installed: pip install -e '.[cluster]'")

from harness.history.db import History  # noqa: E402
from harness.results.case_result import Outcome  # noqa: E402
from harness.schedule.sweep import SweepRequest, run_sweep  # noqa: E402

SMALL = "^conv2d_n[12]_ic(3|8)_oc(8|16)_g1_i1[67]x1[56]_.*_q(fp32|a8w8)_dsnormal_cxnone$"


def _sweep(tmp_path, name: str, **kw):
    return run_sweep(
        SweepRequest("smoke", filter=SMALL, jobs=2, results=tmp_path / name / "r.jsonl", db=tmp_path / "h.sqlite", **kw)
    )


@pytest.mark.processes
def test_a_crash_and_a_hang_on_the_cluster_cost_only_their_cases(tmp_path):
    crashed = _sweep(tmp_path, "crash", cluster="local", case_fn=FunctionRef("tests.crashing_case", "run_case"))
    hung = _sweep(
        tmp_path, "hang", cluster="local", case_fn=FunctionRef("tests.hanging_case", "run_case"), time_limit=5.0
    )
    for done, what in ((crashed, "the cluster lost this case"), (hung, "timeout: no result after 5 s")):
        assert done.complete and len(done.results) == done.run.expected == 8
        bad = [r for r in done.results if r.outcome is not Outcome.PASS]
        assert bad and all("_ic3_" in r.descriptor and r.reason.startswith(what) for r in bad), bad
        assert all(r.outcome is Outcome.PASS for r in done.results if "_ic3_" not in r.descriptor)
    with History(tmp_path / "h.sqlite") as h:
        assert len(h.results(crashed.run.run_id)) == 8


@pytest.mark.lowering
def test_a_cluster_sweep_equals_a_local_one_case_by_case(tmp_path):
    local = _sweep(tmp_path, "local")
    cluster = _sweep(tmp_path, "cluster", cluster="local")
    assert [r.descriptor for r in cluster.results] == [r.descriptor for r in local.results]
    for a, b in zip(local.results, cluster.results):
        assert (a.outcome, a.metrics, a.tosa_ops, a.reason) == (b.outcome, b.metrics, b.tosa_ops, b.reason), (
            a.descriptor
        )


@pytest.mark.processes
def test_a_cluster_worker_is_replaced_after_its_task_budget_and_no_case_is_lost():
    from harness.config import parse_descriptor
    from harness.run.settings import RunSettings
    from harness.schedule.cluster import run_on_cluster

    configs = [parse_descriptor(f"conv2d_ic{ic}_oc4_i8x8_k3") for ic in range(1, 9)]
    seen = []
    schedule = Schedule(2, FunctionRef("tests.leaking_case", "run_case"), cluster="local", recycle_tasks=3)
    run_on_cluster(configs, RunSettings(), schedule, seen.append)
    assert sorted(r.descriptor for r in seen) == sorted(c.descriptor for c in configs)
    assert all(r.outcome is Outcome.PASS for r in seen)
    assert max(r.metrics["leaked"] for r in seen) <= 3  # no actor ran more than its budget
