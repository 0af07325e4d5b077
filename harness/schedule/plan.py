"""How a run's cases are spread: the scheduling settings, one object from the verb to the workers.

The sweep, the mutation trace and the mutants' runs hand a `Schedule` to `dispatch.run_anywhere`, which hands
it on to the local worker pool (`parallel`) or the Ray actors (`cluster`): the same settings in the same
fields, instead of a dozen loose arguments in three orders.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.policy.limits import WORKER_RECYCLE_RSS
from harness.run.settings import RUN_CONFIGURED, FunctionRef


@dataclass(frozen=True)
class Schedule:
    jobs: int = 1  # worker processes (on a cluster: actors, one per CPU it has)
    case_fn: FunctionRef = RUN_CONFIGURED  # what a worker runs per case (a stand-in in tests)
    time_limit: float | None = None  # seconds a task may run before its worker is replaced; None: no limit
    pack: int = 1  # the most cases lowered as one program (harness.schedule.packing; 1: every case alone)
    cluster: str = ""  # '' local workers; 'local', 'auto' or ray://HOST:PORT: a Ray cluster
    recycle_tasks: int | None = None  # a worker is replaced after that many tasks (a mutation campaign's)
    recycle_rss: int | None = WORKER_RECYCLE_RSS  # ... or once its resident memory is above this, between tasks
