"""Run cases in worker processes that survive each other's crashes.

Workers are forked from a fork server that has already imported the case
function's module (torch, ExecuTorch, the lowering: about 7 s, paid once per
sweep instead of once per worker), so a worker, or its replacement after a
crash, a timeout or a recycle, is ready in about 0.4 s; each then sets itself
up (`setup_process`: threads, logs, frozen heap) and runs one case at a time.
HARNESS_START_METHOD=spawn starts every worker from scratch instead. A worker
whose resident memory after a case is above the recycle limit
(harness/policy/limits.py) is retired after that case and replaced. If a worker dies in
the middle of a case (a segfault in native code, the OOM killer), that case
gets a `runner_error` result naming the exit code, a new worker takes its
place, and the sweep goes on. A case with no result after the time limit
is a `runner_error` whose reason starts with `timeout`, its worker is killed
and replaced, and the sweep goes on. The parent never imports torch.
"""

from __future__ import annotations

import functools
import importlib
import json
import multiprocessing as mp
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import wait

from harness.config import ConvConfig
from harness.policy.targets import get_target
from harness.results.case_result import CaseResult, Outcome
from harness.run.settings import RUN_CONFIGURED, FunctionRef, RunSettings
from harness.schedule.plan import Schedule

PACK_FN_MODULE = "harness.run.packed"  # its run_pack runs a task of more than one case


@dataclass(frozen=True)
class Task:
    """What a worker runs at once: one case, or a pack of them; with its own fault, for a mutation campaign."""

    descriptors: tuple[str, ...]
    canary: str = ""


@dataclass
class WorkerStats:
    """What the workers cost: seconds from start to ready, resident memory after each case, recycles."""

    startup_s: list[float] = field(default_factory=list)
    rss_after_case: list[int] = field(default_factory=list)  # bytes after each task (a case or a pack), in order
    recycled: int = 0
    start_method: str = ""


def _context(case_fn: FunctionRef):
    """A fork server that preloads the case function's module, where the platform has one; else spawn."""
    method = os.environ.get("HARNESS_START_METHOD", "forkserver")
    if method not in mp.get_all_start_methods():
        method = "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload([case_fn.module])
    return ctx


def rss_bytes() -> int:
    """This process's resident set size (Linux /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def lost_case(descriptor: str, settings: RunSettings, reason: str, error_type: str) -> CaseResult:
    """The result of a case whose worker gave none (it died, hung or was lost): a runner_error saying why."""
    return CaseResult(
        descriptor,
        settings.seed,
        Outcome.RUNNER_ERROR,
        reason=reason,
        target=settings.target,
        runner=get_target(settings.target).runner,
        run_id=settings.run_id,
        canary=settings.canary,
        error_type=error_type,
    )


def lose_task(
    task: Task,
    pending: deque,
    on_result: Callable[[CaseResult], None],
    settings: RunSettings,
    reason: str,
    error_type: str,
) -> None:
    """A task that gave no result: a pack's cases are queued again, alone, next; a lone case is a runner_error."""
    if len(task.descriptors) > 1:
        pending.extendleft(Task((d,), task.canary) for d in reversed(task.descriptors))
    else:
        on_result(lost_case(task.descriptors[0], settings.with_canary(task.canary), reason, error_type))


def usable_runner(case_fn: FunctionRef) -> tuple[Callable[[Task, RunSettings], list[str]] | None, str]:
    """`task_runner(case_fn)`, or (None, why) when this process cannot import the backend: every case would fail
    alike, so a worker (local or a Ray actor) says so once and the run stops with that line."""
    from harness.blame import BackendImportError, backend_import_error

    try:
        return task_runner(case_fn), ""
    except (BackendImportError, ImportError) as e:
        found = e if isinstance(e, BackendImportError) else backend_import_error(e)
        if found is None:
            raise
        return None, str(found)


@functools.cache
def task_runner(case_fn: FunctionRef) -> Callable[[Task, RunSettings], list[str]]:
    """Runs one task in this process: a pack through the case function's module's `run_pack`
    (harness.run.packed), a single case through the case function (`harness.run.settings.CaseFunction`);
    returns the results' JSON lines. The module's `setup_process` runs first, once."""

    from harness.config import parse_descriptor

    module = importlib.import_module(case_fn.module)
    if hasattr(module, "setup_process"):
        module.setup_process()
    run_case = getattr(module, case_fn.name)
    run_pack = getattr(module, "run_pack", None)  # a stand-in case function packs its own way, or not

    def run_task(task: Task, settings: RunSettings) -> list[str]:
        nonlocal run_pack
        configs = [parse_descriptor(d) for d in task.descriptors]
        settings = settings.with_canary(task.canary)
        if len(configs) == 1:
            return [run_case(configs[0], settings).to_json()]
        if run_pack is None and case_fn == RUN_CONFIGURED:  # imported with the first pack, not before
            run_pack = importlib.import_module(PACK_FN_MODULE).run_pack
        if run_pack is None:
            return [run_case(c, settings).to_json() for c in configs]
        return [r.to_json() for r in run_pack(configs, settings)]

    return run_task


def _thread_lock_for_tqdm() -> None:
    """torch.fx's interpreter opens a tqdm bar, whose first use makes a multiprocessing lock: a named semaphore
    that a worker killed mid-case (Ctrl-C, a timeout) never unlinks, so the resource tracker warns of a leak at
    the sweep's end. A worker runs its cases in one process, so a thread lock does the same job."""
    try:
        import threading

        from tqdm import tqdm
    except ImportError:  # no tqdm, no lock
        return
    if hasattr(tqdm, "set_lock"):
        tqdm.set_lock(threading.RLock())


def _worker_main(conn, case_fn: FunctionRef, settings: RunSettings) -> None:
    # Ctrl-C reaches the whole process group; the parent owns it (it records what finished and kills busy
    # workers), so a worker neither prints a traceback nor dies as a lost case before the parent sees it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _thread_lock_for_tqdm()

    run_task, unusable = usable_runner(case_fn)
    if unusable:  # no case can run here: the parent stops the run with this line
        conn.send(("unusable", unusable))
        return
    conn.send(("ready", rss_bytes()))
    while True:
        task = conn.recv()
        if task is None:
            return
        conn.send(("result", (run_task(task, settings), rss_bytes())))


class _ProcessWorker:
    def __init__(self, ctx, case_fn: FunctionRef, settings: RunSettings):
        self.born = time.monotonic()  # before start(): the first start also waits for the fork server's preload
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, case_fn, settings), daemon=True)
        self.process.start()
        child.close()
        self.task: Task | None = None
        self.done = 0  # tasks finished
        self.started = 0.0  # time.monotonic() when the task was sent
        self.ready = False

    def stop(self) -> None:
        """Let an idle worker leave; a busy one (the sweep was stopped mid-task) is killed at once."""
        if self.task is not None and self.process.is_alive():
            self.process.kill()
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()


class WorkerPool:
    """Worker processes that run tasks from a queue and survive each other's crashes.

    A worker that dies in a task, or runs past `time_limit`, costs that task (`lose_task`) and is replaced;
    one whose resident memory after a task is above `recycle_rss`, or that has run `recycle_tasks` tasks, is
    retired and replaced between tasks.
    """

    def __init__(
        self,
        settings: RunSettings,
        schedule: Schedule,
        on_result: Callable[[CaseResult], None],
        *,
        stats: WorkerStats | None = None,
        skip: Callable[[str], bool] | None = None,
    ):
        self.ctx = _context(schedule.case_fn)
        self.recycle_tasks = schedule.recycle_tasks
        self.case_fn, self.settings, self.jobs, self.on_result = schedule.case_fn, settings, schedule.jobs, on_result
        self.time_limit, self.recycle_rss, self.skip = schedule.time_limit, schedule.recycle_rss, skip
        self.stats = stats if stats is not None else WorkerStats()
        self.stats.start_method = self.ctx.get_start_method()
        self.pending: deque[Task] = deque()
        self.workers: list[_ProcessWorker] = []

    def run(self, tasks: Iterable[Task]) -> None:
        """Run every task; return when all have a result (or were lost)."""
        self.pending.extend(tasks)
        self.workers = [self._new() for _ in range(max(1, min(self.jobs, len(self.pending))))]
        try:
            while self.pending or any(w.task for w in self.workers):
                busy = [
                    w.started + self.time_limit - time.monotonic() for w in self.workers if w.task and self.time_limit
                ]
                ready = wait(
                    [w.conn for w in self.workers] + [w.process.sentinel for w in self.workers],
                    timeout=max(0.0, min(busy)) if busy else None,
                )
                self._expire()
                for w in list(self.workers):
                    self._attend(w, ready)
        finally:
            for w in self.workers:
                w.stop()

    def _new(self) -> _ProcessWorker:
        return _ProcessWorker(self.ctx, self.case_fn, self.settings)

    def _replace(self, w: _ProcessWorker) -> None:
        self.workers.remove(w)
        if self.pending:
            self.workers.append(self._new())

    def _lose(self, task: Task, reason: str, error_type: str) -> None:
        alone: deque[Task] = deque()
        lose_task(task, alone, self.on_result, self.settings, reason, error_type)
        self.pending.extendleft(reversed(alone))

    def _next(self) -> Task | None:
        while self.pending:
            task = self.pending.popleft()
            if not (self.skip and task.canary and self.skip(task.canary)):
                return task
        return None

    def _expire(self) -> None:
        """Kill and replace each worker past the time limit; its task is lost as a timeout."""
        for w in [
            w for w in self.workers if w.task and self.time_limit and time.monotonic() - w.started > self.time_limit
        ]:
            w.process.kill()
            w.process.join(timeout=5)
            self._lose(
                w.task,
                f"timeout: no result after {self.time_limit:g} s (the tier's limit, "
                "harness/policy/limits.py); its worker was replaced. Run it alone with "
                "`python -m harness run` to see where it hangs",
                "Timeout",
            )
            self._replace(w)

    def _attend(self, w: _ProcessWorker, ready: list) -> None:
        """Take what worker `w` sent (ready, a result, or that it cannot run anything), give it the next task,
        and replace it if it died or grew past the recycle limit."""
        if w.conn in ready:
            try:
                kind, payload = w.conn.recv()
            except (EOFError, OSError):
                kind, payload = "dead", None
            if kind == "unusable":
                from harness.blame import BackendImportError

                raise BackendImportError(payload)
            if kind == "ready":
                w.ready = True
                self.stats.startup_s.append(round(time.monotonic() - w.born, 3))
            if kind == "result":
                lines, rss = payload
                for line in lines:
                    self.on_result(CaseResult.from_dict(json.loads(line)))
                self.stats.rss_after_case.append(rss)
                w.task, w.done = None, w.done + 1
                if (self.recycle_rss and rss > self.recycle_rss) or (
                    self.recycle_tasks and w.done >= self.recycle_tasks
                ):
                    # retire it now, between two cases
                    self.stats.recycled += 1
                    w.stop()
                    self._replace(w)
                    return
            if kind in ("ready", "result") and self.pending:
                self._dispatch(w)
            if kind != "dead":
                return
        if not w.process.is_alive() or w.process.sentinel in ready:
            w.process.join(timeout=1)
            if not w.ready:
                raise RuntimeError(f"a worker process failed to start (exit code {w.process.exitcode})")
            if w.task is not None:
                self._lose(
                    w.task,
                    f"worker process died (exit code {w.process.exitcode}) while running this "
                    "case; run it alone with `python -m harness run` to see the stage",
                    "WorkerDied",
                )
            self._replace(w)

    def _dispatch(self, w: _ProcessWorker) -> None:
        w.task, w.started = self._next(), time.monotonic()
        try:
            if w.task is not None:
                w.conn.send(w.task)
        except OSError:  # died between two cases: retry elsewhere
            self.pending.appendleft(w.task)
            w.task = None


def run_parallel(
    configs: Iterable[ConvConfig],
    settings: RunSettings,
    schedule: Schedule,
    on_result: Callable[[CaseResult], None],
    *,
    tasks: Iterable[Task] | None = None,
    skip: Callable[[str], bool] | None = None,
    stats: WorkerStats | None = None,
) -> None:
    """Run every config on the schedule's workers (`WorkerPool`); call `on_result` as each finishes.

    The schedule's `case_fn` is the per-case function (`harness.run.settings.CaseFunction`), `run_configured`
    unless a test substitutes one; its `pack` the most cases lowered as one program (harness.schedule.packing);
    a pack whose worker dies or hangs costs no case: each of its cases is queued again, alone. `tasks` (instead
    of `configs`): each with its own fault, so one set of workers serves many canaries or mutants; a pending task
    whose canary `skip` names is dropped. Its `recycle_tasks`: a worker is replaced after that many tasks (a
    mutation campaign's workers slow down as they load mutant after mutant: harness/policy/limits.py).
    """
    from harness.schedule.packing import form_packs

    if tasks is None:
        tasks = [
            Task(tuple(c.descriptor for c in t)) for t in form_packs(list(configs), settings.target, schedule.pack)
        ]
    WorkerPool(settings, schedule, on_result, stats=stats, skip=skip).run(tasks)
