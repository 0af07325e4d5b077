"""A whole sweep from its parent process: select, run in workers, record, summarize.

Each finished case goes, as it arrives, to the results file (a flushed JSON
line) and to the run history (its own transaction), so an interrupt, a crash
or SIGKILL of any process loses nothing that finished. The parent never
imports torch; the workers do (`harness.schedule.parallel`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.blame import BackendImportError
from harness.cases.selection import select
from harness.config import ConfigError
from harness.history.db import BROKEN, COMPLETE, INTERRUPTED, History, RunInfo
from harness.policy.limits import case_time_limit
from harness.policy.packing import PACK_SIZE
from harness.policy.targets import DEFAULT_TARGET, check_tools, get_target
from harness.results.case_result import CaseResult, new_run_id, versions
from harness.results.store import ResultWriter, ordered, read_results, write_results
from harness.run.settings import RUN_CONFIGURED, FunctionRef, RunSettings
from harness.schedule.dispatch import run_anywhere
from harness.schedule.packing import check_pack_size, form_packs
from harness.schedule.parallel import Task
from harness.schedule.plan import Schedule
from harness.schedule.proof import EnvironmentBroken, Proof, nothing_ran
from harness.schedule.resume import Earlier, earlier_results, nothing_to_resume


@dataclass
class SweepRequest:
    tier: str = "smoke"
    random: int = 0
    seed: int = 0
    filter: str | None = None
    shard: str | None = None
    target: str = DEFAULT_TARGET
    canary: str = ""
    jobs: int = 1
    results: Path | None = None  # default reports/<tier>/results.jsonl
    db: Path | None = None  # None: no history
    case_fn: FunctionRef = RUN_CONFIGURED
    time_limit: float | None = None  # seconds per case; None: the tier's (harness/policy/limits.py)
    resume: bool = False  # continue the interrupted run at `results` (harness/schedule/resume.py)
    cluster: str = ""  # a Ray cluster's address, or 'local' (harness/schedule/cluster.py); '': local workers
    pack: int = PACK_SIZE  # most cases lowered as one program (harness/policy/packing.py); 1: every case alone
    # run the controls and the canary first (harness/schedule/proof.py); None: when the case function is the real
    # one (a test's stand-in has nothing to prove); never under --canary, which is itself a proof of detection
    prove: bool | None = None
    # only these descriptors of the selection (`sweep --affected-by`), and what chose them, recorded with the filter
    only: frozenset[str] | None = None
    chosen_by: str = ""


@dataclass
class SweepRun:
    run: RunInfo
    results: list[CaseResult]
    results_path: Path
    interrupted: bool
    proof: str = ""  # what the controls and the canary showed, one line ('' when the run proved nothing)

    @property
    def complete(self) -> bool:
        return not self.interrupted and len(self.results) == self.run.expected

    @property
    def green(self) -> bool:
        return self.complete and all(r.green for r in self.results) and not self.nothing_ran

    @property
    def nothing_ran(self) -> str:
        """One line when no case of the run ran (all skipped, or none selected): such a run is not green."""
        return nothing_ran(self.results) if self.complete else ""


def results_file(req: SweepRequest) -> Path:
    return Path(req.results or f"reports/{req.tier}/results.jsonl")


def check(req: SweepRequest) -> list:
    """The request's cases; ConfigError (one line) for a bad selection, target (or a tool it needs), job count
    or canary."""
    check_tools(get_target(req.target))
    if req.jobs < 1:
        raise ConfigError(f"invalid -j {req.jobs}: must be >= 1")
    if req.time_limit is not None and not req.time_limit > 0:
        raise ConfigError(f"invalid --time-limit={req.time_limit}: must be a number of seconds > 0")
    if req.canary:
        from harness.faults.canaries import get

        get(req.canary)
    check_pack_size(req.pack)
    if req.resume:
        nothing_to_resume(results_file(req))
    if req.cluster:
        from harness.schedule.cluster import check_cluster

        check_cluster(req.cluster)
    configs = select(req.tier, req.random, req.seed, req.filter, req.shard, req.target)
    return configs if req.only is None else [c for c in configs if c.descriptor in req.only]


def _dispatch(
    req: SweepRequest, todo: list, settings: RunSettings, record: Callable[[CaseResult], None], proof: Proof | None
) -> None:
    """The cases on local workers, or on a Ray cluster; the proof's tasks first, in the same workers."""
    tasks = [Task(tuple(c.descriptor for c in t)) for t in form_packs(todo, req.target, req.pack)]
    if proof is not None:
        tasks = proof.tasks({c.descriptor for c in todo}) + tasks
    schedule = Schedule(req.jobs, req.case_fn, req.time_limit or case_time_limit(req.tier), req.pack, req.cluster)
    run_anywhere(todo, settings, schedule, record, tasks=tasks)


def _new_run(
    req: SweepRequest, expected: int, earlier: Earlier, current: dict, results_path: Path
) -> tuple[RunInfo, Path]:
    """The run's record (a resumed run keeps its id) and the part file its workers' results go to."""
    run = RunInfo(
        earlier.run_id or new_run_id(),
        req.tier,
        req.seed,
        req.target,
        random=req.random,
        filter=" & ".join(x for x in (req.filter, req.chosen_by) if x),
        canary=req.canary,
        shard=req.shard or "",
        expected=expected,
        versions=current,
        command=" ".join(["python -m harness", *sys.argv[1:]]),
    )
    part = results_path.with_name(f"{results_path.stem}.{run.run_id}.part{results_path.suffix}")
    if part in earlier.files:  # the part file of the run being resumed: keep it as an input, write a new one
        part = part.with_name(f"{results_path.stem}.{run.run_id}-{len(earlier.files)}.part{results_path.suffix}")
    run.part = str(part.resolve())
    return run, part


def _end_broken(
    history: History | None, run: RunInfo, finished: list[CaseResult], configs: list, results_path: Path
) -> None:
    """A run the proof stopped: its finished cases kept in the results file, the run closed as broken."""
    if history:
        history.finish_run(run.run_id, BROKEN, time.time())
        history.close()
    write_results(ordered(finished, [c.descriptor for c in configs]), results_path)


def _open_history(req: SweepRequest, run, earlier: Earlier) -> History | None:
    """The run history with this run open in it and a resumed run's earlier results recorded (already there unless
    the run was made without a history: recorded either way); None without a history."""
    if not req.db:
        return None
    history = History(req.db)
    history.ensure_run(run)
    history.reopen_run(run.run_id, run.part)
    for r in earlier.results:
        history.record(r)
    return history


def run_sweep(req: SweepRequest, on_result: Callable[[CaseResult], None] | None = None) -> SweepRun:
    """Run the selected cases; ConfigError (before any work) for a bad request."""
    configs = check(req)
    results_path = results_file(req)
    current = versions()
    earlier = (
        earlier_results(results_path, [c.descriptor for c in configs], req.seed, req.target, req.canary, current)
        if req.resume
        else Earlier()
    )
    run, part = _new_run(req, len(configs), earlier, current, results_path)
    history = _open_history(req, run, earlier)
    for r in earlier.results if on_result else []:  # a progress bar counts the run's cases, earlier ones too
        on_result(r)
    finished_before = {r.descriptor for r in earlier.results}
    todo = [c for c in configs if c.descriptor not in finished_before]
    finished: list[CaseResult] = list(earlier.results)
    interrupted = False
    prove = req.case_fn == RUN_CONFIGURED if req.prove is None else req.prove
    proof = Proof.for_target(req.target) if prove and not req.canary and todo else None
    tier = {c.descriptor for c in todo}
    with ResultWriter(part) as writer:

        def record(r: CaseResult) -> None:
            if proof is not None and proof.take(r) and (r.canary or r.descriptor not in tier):
                return  # the proof's own case: checked, not a case of this run
            writer.write(r)
            if history:
                history.record(r)
            finished.append(r)
            if on_result:
                on_result(r)

        settings = RunSettings(req.seed, req.target, str(results_path.parent / "artifacts"), req.canary, run.run_id)
        try:
            _dispatch(req, todo, settings, record, proof)
        except KeyboardInterrupt:
            interrupted = True
        except EnvironmentBroken:  # what finished is kept; the run ends as broken, blaming nothing on the backend
            _end_broken(history, run, earlier.results + read_results(part), configs, results_path)
            part.unlink(missing_ok=True)
            raise
        except BackendImportError:  # no worker could import ExecuTorch: nothing ran, nothing is recorded
            if history:
                if not finished:
                    history.delete_run(run.run_id)
                history.close()
            raise
    results = ordered(earlier.results + read_results(part), [c.descriptor for c in configs])
    write_results(results, results_path)  # atomically, then the files it replaces go
    for f in [*earlier.files, part]:
        if f != results_path:
            f.unlink(missing_ok=True)
    run.ended, run.status = time.time(), INTERRUPTED if interrupted else COMPLETE
    if history:
        history.finish_run(run.run_id, run.status, run.ended)
        history.close()
    return SweepRun(run, results, results_path, interrupted, proof.line() if proof else "")
