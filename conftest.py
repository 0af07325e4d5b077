"""pytest plugin: one test per conv case, results collected across xdist workers.

Options: --sweep NAME, --case DESCRIPTOR (repeatable; overrides --sweep),
--seed N, --random N, --results PATH, --target NAME, --canary NAME. Each worker appends its results to
its own JSONL file (flushed per case); the controller merges them, in sweep
order, into --results when the session ends. This plugin knows cases and
results, nothing of TOSA or ExecuTorch.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.config import ConfigError, ConvConfig, parse_descriptor
from harness.policy.targets import DEFAULT_TARGET, TARGETS, get_target
from harness.results.case_result import CaseResult, new_run_id
from harness.results.store import ResultWriter, merge

DEFAULT_RESULTS = "reports/pytest/results.jsonl"


def pytest_addoption(parser):
    group = parser.getgroup("harness", "conv numerics harness")
    group.addoption("--sweep", default="smoke", help="named sweep to run (default: smoke)")
    group.addoption(
        "--case", action="append", default=[], metavar="DESCRIPTOR", help="run this case (repeatable; replaces --sweep)"
    )
    group.addoption("--seed", type=int, default=0, help="data seed, and seed of --random cases (default: 0)")
    group.addoption("--random", type=int, default=0, metavar="N", help="append N seeded random cases to the sweep")
    group.addoption("--results", default=DEFAULT_RESULTS, help=f"merged JSONL results (default: {DEFAULT_RESULTS})")
    group.addoption("--target", default=DEFAULT_TARGET,
                    help=f"target to lower for and run on: {', '.join(TARGETS)} (default: {DEFAULT_TARGET})")
    group.addoption("--canary", default="", metavar="NAME", help="inject this fault into the backend for every case")


def _cases(config) -> list[ConvConfig]:
    """The selected cases; a bad descriptor or sweep is a one-line usage error."""
    if not hasattr(config, "_harness_cases"):
        from harness.cases.sweeps import sweep

        try:
            get_target(config.getoption("target"))
            if config.getoption("case"):
                config._harness_cases = [parse_descriptor(d) for d in config.getoption("case")]
            else:
                config._harness_cases = sweep(
                    config.getoption("sweep"), config.getoption("random"), config.getoption("seed")
                )
        except ConfigError as e:
            raise pytest.UsageError(str(e)) from None
    return config._harness_cases


def pytest_configure(config):
    _cases(config)  # fail fast, before collection, on a bad --case or --sweep
    worker = getattr(config, "workerinput", None)
    config._harness_run_id = worker["harness_run_id"] if worker else new_run_id()


def pytest_configure_node(node):  # xdist: hand the run id to each worker
    node.workerinput["harness_run_id"] = node.config._harness_run_id


def pytest_generate_tests(metafunc):
    if "conv_case" in metafunc.fixturenames:
        cases = _cases(metafunc.config)
        metafunc.parametrize("conv_case", cases, ids=[c.descriptor for c in cases])


def _part_path(config, worker_id: str) -> Path:
    results = Path(config.getoption("results"))
    return results.with_name(f"{results.stem}.{config._harness_run_id}.{worker_id}.part{results.suffix}")


class HarnessRun:
    """What a sweep test needs: seed, target, run id, where to keep failures, a writer."""

    def __init__(self, config, worker_id: str):
        self.seed: int = config.getoption("seed")
        self.target: str = config.getoption("target")
        self.run_id: str = config._harness_run_id
        self.canary: str = config.getoption("canary")
        self.artifacts_dir = Path(config.getoption("results")).parent / "artifacts"
        self._writer = ResultWriter(_part_path(config, worker_id))

    def record(self, result: CaseResult) -> None:
        self._writer.write(result)

    def close(self) -> None:
        self._writer.close()


@pytest.fixture(scope="session")
def harness_run(request):
    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")
    run = HarnessRun(request.config, worker)
    yield run
    run.close()


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput"):
        return  # workers leave merging to the controller
    results = Path(config.getoption("results"))
    parts = sorted(results.parent.glob(f"{results.stem}.{config._harness_run_id}.*.part{results.suffix}"))
    if not parts:
        return
    order = [c.descriptor for c in _cases(config)]
    merged = merge(parts, results, order)
    for p in parts:
        os.remove(p)
    from harness.report.summary import outcome_counts, summarize

    (results.parent / "summary.md").write_text(summarize(merged, "pytest sweep"))
    counts = ", ".join(f"{n} {k}" for k, n in outcome_counts(merged).items())
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"harness: {len(merged)} case results ({counts}) -> {results}")
