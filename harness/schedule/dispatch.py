"""Where a run's cases go: local worker processes (`parallel`) or a Ray cluster (`cluster`), one call for both.

The sweep, the mutation trace and the mutants' runs all schedule through here, so `--cluster` means the same
to each: the same tasks, the same results, case by case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from harness.config import ConvConfig
from harness.results.case_result import CaseResult
from harness.run.settings import RunSettings
from harness.schedule.parallel import Task, run_parallel
from harness.schedule.plan import Schedule


def run_anywhere(
    configs: Iterable[ConvConfig],
    settings: RunSettings,
    schedule: Schedule,
    on_result: Callable[[CaseResult], None],
    *,
    tasks: Iterable[Task] | None = None,
    skip: Callable[[str], bool] | None = None,
) -> None:
    """Run the configs (or `tasks`, each with its canary) on the schedule's local workers, or on its Ray cluster
    ('local' starts one here with `jobs` CPUs); `on_result` sees each case as it ends."""
    if schedule.cluster:
        from harness.schedule.cluster import run_on_cluster

        run_on_cluster(configs, settings, schedule, on_result, tasks=tasks, skip=skip)
    else:
        run_parallel(configs, settings, schedule, on_result, tasks=tasks, skip=skip)
