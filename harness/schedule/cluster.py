"""Run a sweep's cases as tasks on a Ray cluster instead of local worker processes.

The optional extra `cluster` (ray). A task is a pack of cases or one case
(`harness.schedule.packing`): it runs `harness.run.packed.run_pack` or
`harness.run.execute.run_case` (or a test's stand-in) in a Ray actor, one per
CPU, which sets itself up once (`setup_process`) before it gets work and runs
task after task, and returns the result's JSON lines. A task's time limit
starts when a set-up actor takes it, as a local worker's does: a node busy
importing torch never turns a case into a timeout. The driver streams each result, as it
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
from collections.abc import Callable, Iterable

from harness.config import ConfigError, ConvConfig
from harness.results.case_result import CaseResult
from harness.run.settings import FunctionRef, RunSettings
from harness.schedule.parallel import Task, lose_task, usable_runner
from harness.schedule.plan import Schedule


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


class _RayWorker:
    """A Ray actor that sets its process up once (imports, `setup_process`) and then runs task after task: the
    local worker's life on a cluster node. Its readiness is awaited before it gets work, so a case's clock (the
    time limit) starts when a set-up worker takes it, never while torch and ExecuTorch import."""

    def __init__(self, case_fn: FunctionRef):
        self.run_task, self.unusable = usable_runner(case_fn)  # unusable: the driver stops with this line

    def ready(self) -> str:
        return self.unusable

    def run(self, task: Task, settings: RunSettings) -> list[str]:
        return self.run_task(task, settings)


def run_on_cluster(
    configs: Iterable[ConvConfig],
    settings: RunSettings,
    schedule: Schedule,
    on_result: Callable[[CaseResult], None],
    *,
    tasks: Iterable[Task] | None = None,
    skip: Callable[[str], bool] | None = None,
) -> None:
    """Run every config on the schedule's cluster, a pack of up to its `pack` cases a task (harness.schedule.packing);
    call `on_result` as each case finishes. A failing case's artifacts are kept under the settings' keep_dir on
    the node that ran it. `tasks` (instead of `configs`): each with its own canary or mutant, as
    `harness.schedule.parallel.run_parallel` takes them; a pending task whose canary `skip` names is not sent."""
    from harness.schedule.packing import form_packs

    ray = _ray()
    address, jobs = schedule.cluster, schedule.jobs
    started_here = not ray.is_initialized()
    if started_here:
        local = address == "local"
        ray.init(
            address=None if local else address,
            num_cpus=jobs if local else None,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    if tasks is None:
        tasks = [
            Task(tuple(c.descriptor for c in t)) for t in form_packs(list(configs), settings.target, schedule.pack)
        ]
    slots = jobs if address == "local" else max(1, int(ray.cluster_resources().get("CPU", jobs)))
    try:
        _ActorPool(ray, settings, schedule, slots, on_result, skip).run(tasks)
    finally:
        if started_here:
            ray.shutdown()


class _ActorPool:
    """One `_RayWorker` actor per CPU of the cluster. A worker that dies or runs past the limit is killed, costs its
    task (`lose_task`) and is replaced by a new one, which gets work once it is set up; so is one that has run
    `recycle_tasks` tasks."""

    def __init__(
        self,
        ray,
        settings: RunSettings,
        schedule: Schedule,
        slots: int,
        on_result: Callable[[CaseResult], None],
        skip: Callable[[str], bool] | None,
    ):
        self.ray, self.case_fn, self.settings, self.slots = ray, schedule.case_fn, settings, slots
        self.on_result, self.time_limit, self.skip = on_result, schedule.time_limit, skip
        recycle_tasks = schedule.recycle_tasks
        self.actor = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_RayWorker)
        self.pending: deque[Task] = deque()
        self.starting: dict = {}  # ready ref -> actor being set up
        self.idle: list = []
        self.running: dict = {}  # ref -> (actor, task, when a set-up actor took it)
        self.failed_starts = 0
        self.recycle_tasks = recycle_tasks
        self.done: dict = {}  # actor -> tasks it finished

    def run(self, tasks: Iterable[Task]) -> None:
        self.pending.extend(tasks)
        try:
            for _ in range(max(1, min(self.slots, len(self.pending)))):
                self._start()
            while self.pending or self.running:
                self._dispatch()
                if not self.running and not self.starting:
                    if not self.pending:
                        break  # every task left was skipped
                    self._start()  # never leave a pending task without a worker to take it
                done, _ = self.ray.wait(list(self.running) + list(self.starting), num_returns=1, timeout=1.0)
                for ref in done:
                    if ref in self.starting:
                        self._ready(ref)
                    else:
                        self._finished(ref)
                self._expire()
        finally:
            for worker in self.idle + list(self.starting.values()) + [w for w, _, _ in self.running.values()]:
                self.ray.kill(worker, no_restart=True)

    def _start(self) -> None:
        worker = self.actor.remote(self.case_fn)
        self.starting[worker.ready.remote()] = worker

    def _dispatch(self) -> None:
        while self.idle and self.pending:
            task = self.pending.popleft()
            if self.skip and task.canary and self.skip(task.canary):
                continue
            worker = self.idle.pop()
            self.running[worker.run.remote(task, self.settings)] = (worker, task, time.monotonic())

    def _ready(self, ref) -> None:
        """A new actor is set up (or could not be): it joins the idle ones."""
        from harness.blame import BackendImportError

        worker = self.starting.pop(ref)
        try:
            unusable = self.ray.get(ref)
        except self.ray.exceptions.RayError as e:
            self.failed_starts += 1
            if self.failed_starts > self.slots:  # not one case could run: stop here, not after every task
                raise RuntimeError(
                    f"cluster workers failed to start ({type(e).__name__}: {str(e).strip().splitlines()[0][:200]})"
                ) from None
            self._start()
            return
        if unusable:
            raise BackendImportError(unusable)
        self.idle.append(worker)

    def _finished(self, ref) -> None:
        worker, task, _ = self.running.pop(ref)
        try:
            lines = self.ray.get(ref)
        except self.ray.exceptions.RayError as e:  # the worker died, or the task raised
            self._retire(
                worker,
                task,
                f"the cluster lost this case ({type(e).__name__}: "
                f"{str(e).strip().splitlines()[0][:200]}); run it alone with `python -m harness run`",
                type(e).__name__,
            )
            return
        done = self.done.pop(worker, 0) + 1
        if self.recycle_tasks and done >= self.recycle_tasks:  # retired between two tasks
            self.ray.kill(worker, no_restart=True)
            self._start()
        else:
            self.done[worker] = done
            self.idle.append(worker)
        for line in lines:
            self.on_result(_parse(line))

    def _expire(self) -> None:
        for ref, (worker, task, since) in list(self.running.items()) if self.time_limit else []:
            if time.monotonic() - since > self.time_limit:
                self.running.pop(ref)
                self._retire(
                    worker,
                    task,
                    f"timeout: no result after {self.time_limit:g} s (the tier's limit, "
                    "harness/policy/limits.py); its worker was replaced",
                    "Timeout",
                )

    def _retire(self, worker, task: Task, reason: str, error_type: str) -> None:
        self.ray.kill(worker, no_restart=True)
        lose_task(task, self.pending, self.on_result, self.settings, reason, error_type)
        if self.pending:
            self._start()


def _parse(line: str) -> CaseResult:
    from harness.results.store import parse_line

    return parse_line(line)
