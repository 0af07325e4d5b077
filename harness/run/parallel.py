"""Run cases in worker processes that survive each other's crashes.

Each worker is a spawned process that sets itself up once (imports, quantizer
set-up, frozen heap) and then runs one case at a time. If a worker dies in
the middle of a case (a segfault in native code, the OOM killer), that case
gets a `runner_error` result naming the exit code, a new worker takes its
place, and the sweep goes on. The parent never imports torch.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from collections import deque
from multiprocessing.connection import wait
from typing import Callable, Iterable

from harness.config import ConvConfig
from harness.policy.targets import get_target
from harness.results.case_result import CaseResult, Outcome


DEFAULT_CASE_FN = "harness.run.execute:run_case"


def _worker_main(conn, case_fn: str, seed: int, target: str, keep_dir: str | None, canary: str, run_id: str) -> None:
    import importlib

    from harness.config import parse_descriptor

    module_name, function = case_fn.split(":")
    module = importlib.import_module(module_name)
    run_case = getattr(module, function)
    if hasattr(module, "setup_process"):
        module.setup_process()
    conn.send(("ready", None))
    while True:
        descriptor = conn.recv()
        if descriptor is None:
            return
        result = run_case(parse_descriptor(descriptor), seed, target, keep_dir=keep_dir, canary=canary, run_id=run_id)
        conn.send(("result", result.to_json()))


class _Worker:
    def __init__(self, ctx, args: tuple):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, *args), daemon=True)
        self.process.start()
        child.close()
        self.task: str | None = None
        self.ready = False

    def stop(self) -> None:
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
) -> None:
    """Run every config on `jobs` workers; call `on_result` as each finishes.

    `case_fn` ("module:function") is the per-case function, `run_case` unless
    a test substitutes one; a `setup_process` in its module runs once per worker.
    """
    ctx = mp.get_context("spawn")
    pending = deque(c.descriptor for c in configs)
    args = (case_fn, seed, target, keep_dir, canary, run_id)
    workers = [_Worker(ctx, args) for _ in range(max(1, min(jobs, len(pending))))]
    try:
        while pending or any(w.task for w in workers):
            ready = wait([w.conn for w in workers] + [w.process.sentinel for w in workers])
            for w in list(workers):
                if w.conn in ready:
                    try:
                        kind, payload = w.conn.recv()
                    except (EOFError, OSError):
                        kind, payload = "dead", None
                    if kind == "ready":
                        w.ready = True
                    if kind == "result":
                        on_result(CaseResult.from_dict(json.loads(payload)))
                        w.task = None
                    if kind in ("ready", "result") and pending:
                        w.task = pending.popleft()
                        try:
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
                        on_result(
                            CaseResult(
                                w.task,
                                seed,
                                Outcome.RUNNER_ERROR,
                                reason=f"worker process died (exit code {w.process.exitcode}) while running this case; "
                                "run it alone with `python -m harness run` to see the stage",
                                target=target,
                                runner=get_target(target).runner,
                                run_id=run_id,
                                canary=canary,
                            )
                        )
                    workers.remove(w)
                    if pending:
                        workers.append(_Worker(ctx, args))
    finally:
        for w in workers:
            w.stop()
