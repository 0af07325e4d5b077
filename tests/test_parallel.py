"""Parallel sweeps survive a worker that dies mid-case."""

from __future__ import annotations

from harness.config import parse_descriptor
from harness.run.parallel import run_parallel
from harness.results.case_result import Outcome


def test_a_dying_worker_costs_only_its_case():
    descriptors = [f"conv2d_ic{ic}_oc4_i8x8_k3" for ic in (1, 2, 3, 4, 5, 6, 3, 8)]
    configs = [parse_descriptor(d) for d in descriptors]
    seen = []
    run_parallel(configs, 7, "tosa", 2, seen.append, case_fn="tests.crashing_case:run_case", run_id="r1")
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
