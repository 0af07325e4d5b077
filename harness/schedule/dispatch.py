"""Where a run's cases go: local worker processes (`parallel`) or a Ray cluster (`cluster`), one call for both.

The sweep, the mutation trace and the mutants' runs all schedule through here, so `--cluster` means the same
to each: the same tasks, the same results, case by case.
"""

from __future__ import annotations

from typing import Callable, Iterable

from harness.config import ConvConfig
from harness.policy.limits import WORKER_RECYCLE_RSS
from harness.results.case_result import CaseResult
from harness.run.settings import RunSettings
from harness.schedule.parallel import DEFAULT_CASE_FN, Task, run_parallel


def run_anywhere(configs: Iterable[ConvConfig], settings: RunSettings, jobs: int,
                 on_result: Callable[[CaseResult], None], *, case_fn: str = DEFAULT_CASE_FN,
                 time_limit: float | None = None, pack: int = 1, cluster: str = "",
                 tasks: Iterable[Task] | None = None, skip: Callable[[str], bool] | None = None,
                 recycle_tasks: int | None = None) -> None:
    """Run the configs (or `tasks`, each with its canary) on `jobs` local workers, or on the Ray cluster at
    `cluster` ('local' starts one here with `jobs` CPUs); `on_result` sees each case as it ends. A worker is
    replaced after `recycle_tasks` tasks, where given."""
    if cluster:
        from harness.schedule.cluster import run_on_cluster

        run_on_cluster(configs, settings, cluster, jobs, on_result, case_fn, time_limit, pack, tasks, skip,
                       recycle_tasks)
    else:
        run_parallel(configs, settings, jobs, on_result, case_fn=case_fn, time_limit=time_limit,
                     recycle_rss=WORKER_RECYCLE_RSS, pack=pack, tasks=tasks, skip=skip, recycle_tasks=recycle_tasks)
