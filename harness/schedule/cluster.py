"""Run a sweep's cases as tasks on a Ray cluster instead of local worker processes.

The optional extra `cluster` (ray). A task is a pack of cases or one case
(`harness.schedule.packing`): it runs `harness.run.packed.run_pack` or
`harness.run.execute.run_case` (or a test's stand-in) in a Ray worker process,
which sets itself up once (`setup_process`) and is reused for the next task,
and returns the result's JSON line. The driver streams each result, as it
arrives, into the same results file and run history as a local sweep
(`harness.schedule.sweep`), so everything downstream is the same. A case's result
depends on its descriptor and seed only, so a cluster run gives the same
results as a local one, case by case. A worker that dies in a case (a segfault,
the OOM killer) costs that case, a `runner_error` as locally; a case past the
time limit is cancelled and is a `runner_error` timeout. No case is retried
(a retry would hide a crash), but a lost pack's cases are run again, each alone.

ADDRESS: `local` starts a cluster on this machine for the sweep (`-j` CPUs);
anything else is passed to `ray.init` (`auto`, `ray://head:10001`): every node
needs the same environment (docs/guide/running.md, "Across machines").
"""

from __future__ import annotations

import time
from collections import deque
from typing import Callable, Iterable

from harness.config import ConfigError, ConvConfig
from harness.results.case_result import CaseResult
from harness.run.settings import RunSettings
from harness.schedule.parallel import Task, lose_task, task_runner


def _ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("invalid --cluster: Ray is not installed; pip install -e '.[cluster]'") from None
    return ray


def check_cluster(address: str) -> None:
    """ConfigError (one line) if Ray is missing or the address is not one `ray.init` takes."""
    _ray()
    if address not in ("local", "auto") and not address.startswith("ray://") and ":" not in address:
        raise ConfigError(f"invalid --cluster={address}: expected local, auto, ray://HOST:PORT or HOST:PORT")


def _run_task(case_fn: str, task: Task, settings: RunSettings) -> list[str]:
    """The task body, in a Ray worker: set the process up once, run the case or pack, return the JSON lines."""
    return task_runner(case_fn)(task, settings)


def run_on_cluster(configs: Iterable[ConvConfig], settings: RunSettings, address: str, jobs: int,
                   on_result: Callable[[CaseResult], None], case_fn: str, time_limit: float | None = None,
                   pack: int = 1) -> None:
    """Run every config on the cluster at `address`, a pack of up to `pack` cases a task (harness.schedule.packing);
    call `on_result` as each case finishes. A failing case's artifacts are kept under the settings' keep_dir on
    the node that ran it."""
    from harness.schedule.packing import form_packs

    ray = _ray()
    started_here = not ray.is_initialized()
    if started_here:
        local = address == "local"
        ray.init(address=None if local else address, num_cpus=jobs if local else None, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    remote = ray.remote(num_cpus=1, max_retries=0)(_run_task)

    def lost(task: Task, reason: str, error_type: str) -> None:
        lose_task(task, pending, on_result, settings, reason, error_type)

    slots = jobs if address == "local" else max(1, int(ray.cluster_resources().get("CPU", jobs)))
    pending = deque(Task(tuple(c.descriptor for c in t)) for t in form_packs(list(configs), settings.target, pack))
    running: dict = {}  # ref -> (task, when submitted): never more than the cluster has CPUs, so a task's
    # clock starts when it can start, not while it waits behind others
    try:
        while pending or running:
            while pending and len(running) < slots:
                task = pending.popleft()
                running[remote.remote(case_fn, task, settings)] = (task, time.monotonic())
            done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in done:
                task, _ = running.pop(ref)
                try:
                    lines = ray.get(ref)
                except ray.exceptions.RayError as e:  # the worker died, or the task raised
                    lost(task, f"the cluster lost this case ({type(e).__name__}: "
                         f"{str(e).strip().splitlines()[0][:200]}); run it alone with `python -m harness run`",
                         type(e).__name__)
                    continue
                for line in lines:
                    on_result(_parse(line))
            for ref, (task, since) in list(running.items()) if time_limit else []:
                if time.monotonic() - since > time_limit:
                    ray.cancel(ref, force=True)
                    running.pop(ref)
                    lost(task, f"timeout: no result after {time_limit:g} s (the tier's limit, "
                         "harness/policy/limits.py); the task was cancelled", "Timeout")
    finally:
        if started_here:
            ray.shutdown()


def _parse(line: str) -> CaseResult:
    from harness.results.store import parse_line

    return parse_line(line)
