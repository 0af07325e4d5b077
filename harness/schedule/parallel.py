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
import json
import multiprocessing as mp
import os
import time
from dataclasses import dataclass, field
from collections import deque
from multiprocessing.connection import wait
from typing import Callable, Iterable

from harness.config import ConvConfig
from harness.policy.targets import get_target
from harness.results.case_result import CaseResult, Outcome


DEFAULT_CASE_FN = "harness.run.execute:run_case"
PACK_FN_MODULE = "harness.run.packed"  # its run_pack runs a task of more than one case


@dataclass
class WorkerStats:
    """What the workers cost: seconds from start to ready, resident memory after each case, recycles."""

    startup_s: list[float] = field(default_factory=list)
    rss_after_case: list[int] = field(default_factory=list)  # bytes after each task (a case or a pack), in order
    recycled: int = 0
    start_method: str = ""


def _context(case_fn: str):
    """A fork server that preloads the case function's module, where the platform has one; else spawn."""
    method = os.environ.get("HARNESS_START_METHOD", "forkserver")
    if method not in mp.get_all_start_methods():
        method = "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload([case_fn.split(":")[0]])
    return ctx


def rss_bytes() -> int:
    """This process's resident set size (Linux /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def case_function(case_fn: str) -> Callable:
    """The per-case function named "module:function", its module's `setup_process` run first (once a process)."""
    import importlib

    module_name, function = case_fn.split(":")
    module = importlib.import_module(module_name)
    if hasattr(module, "setup_process"):
        module.setup_process()
    return getattr(module, function)


def lost_case(descriptor: str, seed: int, target: str, run_id: str, canary: str, reason: str,
              error_type: str) -> CaseResult:
    """The result of a case whose worker gave none (it died, hung or was lost): a runner_error saying why."""
    return CaseResult(descriptor, seed, Outcome.RUNNER_ERROR, reason=reason, target=target,
                      runner=get_target(target).runner, run_id=run_id, canary=canary, error_type=error_type)


def lose_task(task: tuple[str, ...], pending, on_result: Callable[[CaseResult], None], seed: int, target: str,
              run_id: str, canary: str, reason: str, error_type: str) -> None:
    """A task that gave no result: a pack's cases are queued again, alone, next; a lone case is a runner_error."""
    if len(task) > 1:
        pending.extendleft((d,) for d in reversed(task))
    else:
        on_result(lost_case(task[0], seed, target, run_id, canary, reason, error_type))


@functools.lru_cache(maxsize=None)
def task_function(case_fn: str) -> Callable:
    """Runs one task (a tuple of descriptors): a pack through the case function's module's `run_pack`
    (harness.run.packed), a single case through the case function; returns the results' JSON lines."""
    import importlib

    from harness.config import parse_descriptor

    run_case = case_function(case_fn)
    module = importlib.import_module(case_fn.split(":")[0])  # a stand-in case function packs its own way, or not
    run_pack = getattr(module, "run_pack", None)

    def run_task(task: tuple[str, ...], seed: int, target: str, keep_dir: str | None, canary: str,
                 run_id: str) -> list[str]:
        nonlocal run_pack
        configs = [parse_descriptor(d) for d in task]
        kwargs = dict(keep_dir=keep_dir, canary=canary, run_id=run_id)
        if len(configs) == 1:
            return [run_case(configs[0], seed, target, **kwargs).to_json()]
        if run_pack is None and case_fn == DEFAULT_CASE_FN:  # imported with the first pack, not before
            run_pack = importlib.import_module(PACK_FN_MODULE).run_pack
        if run_pack is None:
            return [run_case(c, seed, target, **kwargs).to_json() for c in configs]
        return [r.to_json() for r in run_pack(configs, seed, target, **kwargs)]

    return run_task


def _worker_main(conn, case_fn: str, seed: int, target: str, keep_dir: str | None, canary: str, run_id: str) -> None:
    from harness.blame import BackendImportError, backend_import_error

    try:
        run_task = task_function(case_fn)
    except (BackendImportError, ImportError) as e:  # no case can run here: the parent stops the run with this line
        found = e if isinstance(e, BackendImportError) else backend_import_error(e)
        if found is None:
            raise
        conn.send(("unusable", str(found)))
        return
    conn.send(("ready", rss_bytes()))
    while True:
        item = conn.recv()
        if item is None:
            return
        task_canary, task = item
        conn.send(("result", (run_task(task, seed, target, keep_dir, task_canary or canary, run_id), rss_bytes())))


class _Worker:
    def __init__(self, ctx, args: tuple):
        self.born = time.monotonic()  # before start(): the first start also waits for the fork server's preload
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, *args), daemon=True)
        self.process.start()
        child.close()
        self.task: tuple[str, ...] | None = None
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


def run_parallel(
    configs: Iterable[ConvConfig],
    seed: int,
    target: str,
    jobs: int,
    on_result: Callable[[CaseResult], None],
    keep_dir: str | None = None,
    case_fn: str = DEFAULT_CASE_FN,
    canary: str = "",
    run_id: str = "",
    time_limit: float | None = None,
    recycle_rss: int | None = None,
    stats: WorkerStats | None = None,
    pack: int = 1,
    tasks: Iterable[tuple[str, tuple[ConvConfig, ...]]] | None = None,
    skip: Callable[[str], bool] | None = None,
) -> None:
    """Run every config on `jobs` workers; call `on_result` as each finishes.

    `case_fn` ("module:function") is the per-case function, `run_case` unless
    a test substitutes one; a `setup_process` in its module runs once per worker.
    `time_limit`: seconds a case may run (None: no limit); `recycle_rss`: bytes of resident memory after a case
    above which its worker is replaced (None: never); `stats` collects the workers' costs.
    `pack`: the most cases lowered as one program (harness.schedule.packing; 1: every case alone). A pack
    whose worker dies or hangs costs no case: each of its cases is queued again, alone.
    `tasks` (instead of `configs`): (canary, pack) pairs, each pack run with its own fault injected, so one
    set of workers serves many canaries or mutants; a pending task whose canary `skip` names is dropped.
    """
    ctx = _context(case_fn)
    stats = stats if stats is not None else WorkerStats()
    stats.start_method = ctx.get_start_method()
    from harness.schedule.packing import form_packs

    if tasks is None:
        tasks = (("", t) for t in form_packs(list(configs), target, pack))
    pending = deque((c, tuple(x.descriptor for x in t)) for c, t in tasks)
    args = (case_fn, seed, target, keep_dir, canary, run_id)
    workers = [_Worker(ctx, args) for _ in range(max(1, min(jobs, len(pending))))]

    def lost(item: tuple[str, tuple[str, ...]], reason: str, error_type: str) -> None:
        task_canary, task = item
        alone = deque()
        lose_task(task, alone, on_result, seed, target, run_id, task_canary or canary, reason, error_type)
        pending.extendleft((task_canary, t) for t in reversed(alone))

    def next_task() -> tuple[str, tuple[str, ...]] | None:
        while pending:
            item = pending.popleft()
            if not (skip and item[0] and skip(item[0])):
                return item
        return None

    try:
        while pending or any(w.task for w in workers):
            busy = [w.started + time_limit - time.monotonic() for w in workers if w.task and time_limit]
            ready = wait([w.conn for w in workers] + [w.process.sentinel for w in workers],
                         timeout=max(0.0, min(busy)) if busy else None)
            for w in [w for w in workers if w.task and time_limit and time.monotonic() - w.started > time_limit]:
                w.process.kill()
                w.process.join(timeout=5)
                lost(w.task, f"timeout: no result after {time_limit:g} s (the tier's limit, "
                               "harness/policy/limits.py); its worker was replaced. Run it alone with "
                               "`python -m harness run` to see where it hangs", "Timeout")
                workers.remove(w)
                if pending:
                    workers.append(_Worker(ctx, args))
            for w in list(workers):
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
                        stats.startup_s.append(round(time.monotonic() - w.born, 3))
                    if kind == "result":
                        lines, rss = payload
                        for line in lines:
                            on_result(CaseResult.from_dict(json.loads(line)))
                        stats.rss_after_case.append(rss)
                        w.task = None
                        if recycle_rss and rss > recycle_rss:  # retire it now, between two cases
                            stats.recycled += 1
                            w.stop()
                            workers.remove(w)
                            if pending:
                                workers.append(_Worker(ctx, args))
                            continue
                    if kind in ("ready", "result") and pending:
                        w.task, w.started = next_task(), time.monotonic()
                        try:
                            if w.task is not None:
                                w.conn.send(w.task)
                        except OSError:  # died between two cases: retry elsewhere
                            pending.appendleft(w.task)
                            w.task = None
                    if kind != "dead":
                        continue
                if not w.process.is_alive() or w.process.sentinel in ready:
                    w.process.join(timeout=1)
                    if not w.ready:
                        raise RuntimeError(f"a worker process failed to start (exit code {w.process.exitcode})")
                    if w.task is not None:
                        lost(w.task, f"worker process died (exit code {w.process.exitcode}) while running "
                                       "this case; run it alone with `python -m harness run` to see the stage",
                                       "WorkerDied")
                    workers.remove(w)
                    if pending:
                        workers.append(_Worker(ctx, args))
    finally:
        for w in workers:
            w.stop()
