"""pytest plugin: one test per conv case, results collected across xdist workers.

Options: --sweep NAME, --case DESCRIPTOR (repeatable; overrides --sweep),
--seed N, --random N, --filter REGEX, --shard K/N, --results PATH, --target
NAME, --canary NAME, --db PATH, --no-history, --executorch SPEC. Each worker appends its results
to its own JSONL file and records each in the run history (flushed, one
transaction per case); the controller merges the files, in sweep order, into
--results when the session ends and closes the run in the history. This
plugin knows cases and results, nothing of TOSA or ExecuTorch.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from harness.config import ConfigError, ConvConfig, parse_descriptor
from harness.policy.targets import DEFAULT_TARGET, TARGETS, check_case, get_target
from harness.history.db import COMPLETE, DEFAULT_DB, INTERRUPTED, History, HistoryError, RunInfo
from harness.results.case_result import CaseResult, new_run_id, versions
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
    group.addoption("--filter", default=None, metavar="REGEX", help="only the descriptors matching this regex")
    group.addoption("--shard", default=None, metavar="K/N", help="only the K-th of N cost-balanced parts of the sweep")
    group.addoption("--db", default=DEFAULT_DB, help=f"run history database (default: {DEFAULT_DB})")
    group.addoption("--no-history", action="store_true", help="do not record the sweep in the run history")
    group.addoption("--executorch", default="", metavar="SPEC", help="run against another ExecuTorch: a release "
                    "(1.4.1), a source checkout (PATH, or PATH@REV) laid over the installed core")


def _cases(config) -> list[ConvConfig]:
    """The selected cases; a bad descriptor or sweep is a one-line usage error."""
    if not hasattr(config, "_harness_cases"):
        from harness.tiers.selection import select

        try:
            get_target(config.getoption("target"))
            if config.getoption("case"):
                target = get_target(config.getoption("target"))
                config._harness_cases = [parse_descriptor(d) for d in config.getoption("case")]
                for c in config._harness_cases:
                    check_case(target, c)
            else:
                config._harness_cases = select(config.getoption("sweep"), config.getoption("random"),
                                               config.getoption("seed"), config.getoption("filter"),
                                               config.getoption("shard"), config.getoption("target"))
            if config.getoption("canary"):
                from harness.faults.canaries import get

                get(config.getoption("canary"))
        except ConfigError as e:
            raise pytest.UsageError(str(e)) from None
    return config._harness_cases


def pytest_configure(config):
    if config.getoption("executorch") and not hasattr(config, "workerinput"):  # workers inherit its PYTHONPATH
        from harness.cli.main import use_executorch
        from harness.overlays import OverlayError

        try:
            use_executorch(config.getoption("executorch"))
        except (ConfigError, OverlayError) as e:
            raise pytest.UsageError(str(e)) from None
    _cases(config)  # fail fast, before collection, on a bad --case or --sweep
    worker = getattr(config, "workerinput", None)
    config._harness_run_id = worker["harness_run_id"] if worker else new_run_id()
    config._harness_started = worker["harness_started"] if worker else time.time()


def pytest_configure_node(node):  # xdist: hand the run id and start time to each worker
    node.workerinput["harness_run_id"] = node.config._harness_run_id
    node.workerinput["harness_started"] = node.config._harness_started


def _run_info(config) -> RunInfo:
    """The pytest sweep as a run of the history (the same in the controller and every worker)."""
    cases = config.getoption("case")
    return RunInfo(config._harness_run_id, "cases" if cases else config.getoption("sweep"), config.getoption("seed"),
                   config.getoption("target"), random=config.getoption("random"),
                   filter=config.getoption("filter") or "", canary=config.getoption("canary"),
                   shard=config.getoption("shard") or "", expected=len(_cases(config)),
                   started=config._harness_started, versions=versions(), command=" ".join(["pytest", *sys.argv[1:]]))


def _history(config) -> History | None:
    if config.getoption("no_history"):
        return None
    try:
        return History(config.getoption("db"))
    except HistoryError as e:
        raise pytest.UsageError(str(e)) from None


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
        self._config = config
        self._history: History | None = None
        self._recording = not config.getoption("no_history")

    def record(self, result: CaseResult) -> None:
        self._writer.write(result)
        if self._recording:
            if self._history is None:  # the first case of this process records the run
                self._history = _history(self._config)
                self._history.ensure_run(_run_info(self._config))
            self._history.record(result)

    def close(self) -> None:
        self._writer.close()
        if self._history is not None:
            self._history.close()


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
    if not config.getoption("no_history"):
        with _history(config) as history:
            history.ensure_run(_run_info(config))  # a no-op unless no case recorded it
            interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or len(merged) < len(order)
            history.finish_run(config._harness_run_id, INTERRUPTED if interrupted else COMPLETE)
    from harness.report.figures import outcome_counts
    from harness.report.summary import summarize

    (results.parent / "summary.md").write_text(summarize(merged, "pytest sweep"))
    counts = ", ".join(f"{n} {k}" for k, n in outcome_counts(merged).items())
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"harness: {len(merged)} case results ({counts}) -> {results}")
