"""Where the plugin's results go: a part file per worker, the run history, and the merged file at the end."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from harness.config import ConvConfig
from harness.history.db import COMPLETE, INTERRUPTED, History, HistoryError, RunInfo
from harness.results.case_result import CaseResult, versions
from harness.results.store import ResultWriter, merge
from harness.run.settings import RunSettings
from harness.schedule.on_demand import OnDemandPacks


class UsageError(ValueError):
    """An option the plugin cannot use (the plugin turns it into pytest's usage error)."""


def run_info(config, cases: list[ConvConfig]) -> RunInfo:
    """The pytest run as a run of the history (the same in the controller and every worker)."""
    o = config.getoption
    return RunInfo(
        config._harness_run_id,
        "cases" if o("harness_case") else o("harness_tier"),
        o("harness_seed"),
        o("harness_target"),
        random=o("harness_random"),
        filter=o("harness_filter") or "",
        canary=o("harness_canary"),
        shard=o("harness_shard") or "",
        expected=len(cases),
        started=config._harness_started,
        versions=versions(),
        command=" ".join(["pytest", *sys.argv[1:]]),
    )


def history(config) -> History | None:
    if config.getoption("harness_no_history"):
        return None
    try:
        return History(config.getoption("harness_db"))
    except HistoryError as e:
        raise UsageError(str(e)) from None


def part_path(config, worker_id: str) -> Path:
    results = Path(config.getoption("harness_results"))
    return results.with_name(f"{results.stem}.{config._harness_run_id}.{worker_id}.part{results.suffix}")


class HarnessRun:
    """What a case's test needs: its result (computed with its pack), and a place to record it."""

    def __init__(self, config, worker_id: str, cases: list[ConvConfig], packs: list):
        o = config.getoption
        self.settings = RunSettings(
            o("harness_seed"),
            o("harness_target"),
            str(Path(o("harness_results")).parent / "artifacts"),
            o("harness_canary"),
            config._harness_run_id,
        )
        self.packs = OnDemandPacks(packs, self.settings)
        self._writer = ResultWriter(part_path(config, worker_id))
        self._config, self._cases = config, cases
        self._history: History | None = None

    def result(self, config: ConvConfig) -> CaseResult:
        return self.packs.result(config)

    def record(self, result: CaseResult) -> None:
        self._writer.write(result)
        if not self._config.getoption("harness_no_history"):
            if self._history is None:  # the first case of this process records the run
                self._history = history(self._config)
                self._history.ensure_run(run_info(self._config, self._cases))
            self._history.record(result)

    def close(self) -> None:
        for result in self.packs.unclaimed():  # ran with its pack before -x or Ctrl-C stopped the session
            self.record(result)
        self._writer.close()
        if self._history is not None:
            self._history.close()


def proof_runner(config) -> Callable[[str, str], CaseResult]:
    """How the session's proof runs a case here: the session's seed and target, nothing recorded."""
    from harness.config import parse_descriptor
    from harness.run.execute import run_configured

    o = config.getoption

    def run(descriptor: str, canary: str) -> CaseResult:
        return run_configured(
            parse_descriptor(descriptor),
            RunSettings(o("harness_seed"), o("harness_target"), None, canary, config._harness_run_id),
        )

    return run


def finish(config, cases: Callable[[], list[ConvConfig]], interrupted: bool) -> tuple[str, str]:
    """Merge the workers' parts in selection order, close the run in the history (`interrupted`: Ctrl-C, -x,
    --sw stopped it; a -k that selects fewer cases does not), write the summary; the line to print ('' when no
    case ran), and why no case ran on the target's runner ('' when some did; harness.schedule.proof)."""
    results = Path(config.getoption("harness_results"))
    parts = sorted(results.parent.glob(f"{results.stem}.{config._harness_run_id}.*.part{results.suffix}"))
    if not parts:
        return "", ""
    order = [c.descriptor for c in cases()]
    merged = merge(parts, results, order)
    for p in parts:
        os.remove(p)
    if not config.getoption("harness_no_history"):
        with history(config) as h:
            h.ensure_run(run_info(config, cases()))  # a no-op unless no case recorded it
            h.finish_run(config._harness_run_id, INTERRUPTED if interrupted else COMPLETE)
    from harness.report.figures import outcome_counts
    from harness.report.summary import summarize

    (results.parent / "summary.md").write_text(summarize(merged, "pytest sweep"))
    from harness.schedule.proof import nothing_ran

    counts = ", ".join(f"{n} {k}" for k, n in outcome_counts(merged).items())
    return f"harness: {len(merged)} case results ({counts}) -> {results}", nothing_ran(merged)
