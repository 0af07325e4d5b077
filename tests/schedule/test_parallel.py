"""Parallel sweeps survive a worker that dies mid-case."""

from __future__ import annotations

import pytest

from harness.config import parse_descriptor
from harness.results.case_result import Outcome
from harness.run.settings import FunctionRef, RunSettings
from harness.schedule.parallel import run_parallel
from harness.schedule.plan import Schedule


def _stand_in(module: str) -> FunctionRef:
    """A stand-in case function of tests/ (crashes, hangs, leaks), by reference."""
    return FunctionRef(f"tests.{module}", "run_case")


@pytest.mark.processes
def test_a_dying_worker_costs_only_its_case():
    descriptors = [f"conv2d_ic{ic}_oc4_i8x8_k3" for ic in (1, 2, 3, 4, 5, 6, 3, 8)]
    configs = [parse_descriptor(d) for d in descriptors]
    seen = []
    run_parallel(configs, RunSettings(7, run_id="r1"), Schedule(2, _stand_in("crashing_case")), seen.append)
    by = {}
    for r in seen:
        by.setdefault(r.descriptor, []).append(r)
    assert len(seen) == len(configs)
    for c in configs:
        (r,) = by[c.descriptor][:1]
        if c.in_channels == 3:
            assert r.outcome is Outcome.RUNNER_ERROR and "exit code 3" in r.reason
        else:
            assert r.outcome is Outcome.PASS and r.seed == 7
        assert r.run_id == "r1" and r.target == "tosa"


@pytest.mark.parametrize("stand_in, why", [("crashing_case", "exit code 3"), ("hanging_case", "timeout")])
@pytest.mark.processes
def test_a_lost_pack_costs_no_case_its_cases_run_again_alone(stand_in, why):
    descriptors = [f"conv2d_ic{ic}_oc4_i8x8_k3" for ic in (1, 2, 3, 4, 5, 6, 7, 8)]
    configs = [parse_descriptor(d) for d in descriptors]
    seen = []
    run_parallel(
        configs, RunSettings(run_id="r3"), Schedule(2, _stand_in(stand_in), time_limit=3.0, pack=4), seen.append
    )
    assert sorted(r.descriptor for r in seen) == sorted(c.descriptor for c in configs)  # each exactly once
    for r in seen:
        ic = parse_descriptor(r.descriptor).in_channels
        if ic == 3:
            assert r.outcome is Outcome.RUNNER_ERROR and why in r.reason and r.packed == 0
        else:
            assert r.outcome is Outcome.PASS and r.packed == (0 if ic <= 4 else 4), (ic, r.packed)


@pytest.mark.processes
def test_a_hanging_case_is_a_timeout_and_the_sweep_goes_on():
    descriptors = [f"conv2d_ic{ic}_oc4_i8x8_k3" for ic in (1, 3, 2, 4, 5)]
    configs = [parse_descriptor(d) for d in descriptors]
    seen = []
    run_parallel(configs, RunSettings(run_id="r2"), Schedule(2, _stand_in("hanging_case"), time_limit=3.0), seen.append)
    assert sorted(r.descriptor for r in seen) == sorted(c.descriptor for c in configs)
    for r in seen:
        if "_ic3_" in r.descriptor:
            assert r.outcome is Outcome.RUNNER_ERROR and r.reason.startswith("timeout: no result after 3 s")
            assert r.error_type == "Timeout" and r.run_id == "r2"
        else:
            assert r.outcome is Outcome.PASS


@pytest.mark.processes
def test_a_sweep_with_a_hanging_case_records_the_timeout_and_every_other_case(tmp_path):
    from harness.history.db import History
    from harness.schedule.sweep import SweepRequest, run_sweep

    req = SweepRequest(
        "smoke",
        filter="^conv2d_n[12]_ic(3|8)_oc(8|16)_g1_i1[67]x1[56]_.*_qfp32_dsnormal_cxnone$",
        jobs=2,
        results=tmp_path / "r.jsonl",
        db=tmp_path / "h.sqlite",
        case_fn=_stand_in("hanging_case"),
        time_limit=2.0,
    )
    done = run_sweep(req)
    timeouts = [r for r in done.results if r.reason.startswith("timeout")]
    assert done.complete and len(done.results) == done.run.expected > len(timeouts) >= 1
    assert all("_ic3_" in r.descriptor for r in timeouts) and all(r.green for r in done.results if r not in timeouts)
    with History(tmp_path / "h.sqlite") as h:
        assert len(h.results(done.run.run_id)) == done.run.expected


@pytest.mark.processes
def test_a_worker_whose_memory_grows_past_the_limit_is_recycled():
    from harness.schedule.parallel import WorkerStats

    configs = [parse_descriptor(f"conv2d_ic{ic}_oc4_i8x8_k3") for ic in range(1, 9)]
    seen, stats = [], WorkerStats()
    limit = 200 << 20  # a worker of this stand-in crosses it within three cases of 64 MiB
    run_parallel(
        configs, RunSettings(), Schedule(1, _stand_in("leaking_case"), recycle_rss=limit), seen.append, stats=stats
    )
    assert sorted(r.descriptor for r in seen) == sorted(c.descriptor for c in configs)
    assert all(r.outcome is Outcome.PASS for r in seen)
    assert stats.recycled >= 2 and len(stats.startup_s) >= 2 and stats.start_method == "forkserver"
    assert max(r.metrics["leaked"] for r in seen) < len(configs)  # no worker ran them all
    assert all(rss > 0 for rss in stats.rss_after_case)


@pytest.mark.processes
def test_a_worker_is_replaced_after_its_task_budget_and_no_case_is_lost():
    """A mutation campaign's workers slow as they load mutant after mutant: each is replaced after a number of
    tasks (harness/policy/limits.py MUTANT_WORKER_TASKS), between two tasks, so every case still runs once."""
    from harness.schedule.parallel import WorkerStats

    configs = [parse_descriptor(f"conv2d_ic{ic}_oc4_i8x8_k3") for ic in range(1, 9)]
    seen, stats = [], WorkerStats()
    run_parallel(
        configs,
        RunSettings(),
        Schedule(2, _stand_in("leaking_case"), recycle_tasks=3, recycle_rss=None),
        seen.append,
        stats=stats,
    )
    assert sorted(r.descriptor for r in seen) == sorted(c.descriptor for c in configs)
    assert all(r.outcome is Outcome.PASS for r in seen)
    assert stats.recycled >= 2 and len(stats.startup_s) >= 3
    assert max(r.metrics["leaked"] for r in seen) <= 3  # no worker ran more than its budget
