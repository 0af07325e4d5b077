"""A whole sweep from its parent process: select, run in workers, record, summarize.

Each finished case goes, as it arrives, to the results file (a flushed JSON
line) and to the run history (its own transaction), so an interrupt, a crash
or SIGKILL of any process loses nothing that finished. The parent never
imports torch; the workers do (`harness.run.parallel`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.cases.selection import select
from harness.config import ConfigError
from harness.history.db import COMPLETE, INTERRUPTED, History, RunInfo
from harness.policy.targets import get_target
from harness.results.case_result import CaseResult, new_run_id, versions
from harness.results.store import ResultWriter, merge
from harness.run.parallel import DEFAULT_CASE_FN, run_parallel


@dataclass
class SweepRequest:
    tier: str = "smoke"
    random: int = 0
    seed: int = 0
    filter: str | None = None
    shard: str | None = None
    target: str = "tosa"
    canary: str = ""
    jobs: int = 1
    results: Path | None = None  # default reports/<tier>/results.jsonl
    db: Path | None = None  # None: no history
    case_fn: str = DEFAULT_CASE_FN


@dataclass
class SweepRun:
    run: RunInfo
    results: list[CaseResult]
    results_path: Path
    interrupted: bool

    @property
    def complete(self) -> bool:
        return not self.interrupted and len(self.results) == self.run.expected

    @property
    def green(self) -> bool:
        return self.complete and all(r.green for r in self.results)


def check(req: SweepRequest) -> list:
    """The request's cases; ConfigError (one line) for a bad selection, target, job count or canary."""
    get_target(req.target)
    if req.jobs < 1:
        raise ConfigError(f"invalid -j {req.jobs}: must be >= 1")
    if req.canary:
        from harness.cases.canaries import get

        get(req.canary)
    return select(req.tier, req.random, req.seed, req.filter, req.shard, req.target)


def run_sweep(req: SweepRequest, on_result: Callable[[CaseResult], None] | None = None) -> SweepRun:
    """Run the selected cases; ConfigError (before any work) for a bad request."""
    configs = check(req)
    results_path = Path(req.results or f"reports/{req.tier}/results.jsonl")
    run = RunInfo(new_run_id(), req.tier, req.seed, req.target, random=req.random, filter=req.filter or "",
                  canary=req.canary, shard=req.shard or "", expected=len(configs), versions=versions(),
                  command=" ".join(["python -m harness", *sys.argv[1:]]))
    history = History(req.db) if req.db else None
    if history:
        history.ensure_run(run)
    part = results_path.with_name(f"{results_path.stem}.{run.run_id}.part{results_path.suffix}")
    finished: list[CaseResult] = []
    interrupted = False
    with ResultWriter(part) as writer:

        def record(r: CaseResult) -> None:
            writer.write(r)
            if history:
                history.record(r)
            finished.append(r)
            if on_result:
                on_result(r)

        try:
            run_parallel(configs, req.seed, req.target, req.jobs, record, keep_dir=str(results_path.parent / "artifacts"),
                         case_fn=req.case_fn, canary=req.canary, run_id=run.run_id)
        except KeyboardInterrupt:
            interrupted = True
    results = merge([part], results_path, [c.descriptor for c in configs])
    part.unlink()
    run.ended, run.status = time.time(), INTERRUPTED if interrupted else COMPLETE
    if history:
        history.finish_run(run.run_id, run.status, run.ended)
        history.close()
    return SweepRun(run, results, results_path, interrupted)
