"""Results files into the history: importing one, merging shards into one run.

A results file (JSONL) is the exchange format: a run made elsewhere (another
machine, a CI shard) is brought into a history by importing it. Shards of one
sweep are merged into one run only if they ran on identical versions with one
seed and target; the merge says which cases came twice and which are missing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from harness.history.db import COMPLETE, History, HistoryError, RunInfo
from harness.results.case_result import CaseResult, new_run_id
from harness.results.store import read_results, write_results


def _one(values: set, what: str, source: str):
    if len(values) != 1:
        shown = sorted(map(str, values))[:4]
        raise HistoryError(f"{source} mixes {what}: {', '.join(shown)}{' ...' if len(values) > 4 else ''}")
    return next(iter(values))


def run_of(
    results: list[CaseResult], source: str, tier: str, run_id: str | None = None, ended: float | None = None
) -> RunInfo:
    """The run a list of results makes: one seed, target, canary and set of versions, or HistoryError."""
    if not results:
        raise HistoryError(f"{source} holds no results")
    seed = _one({r.seed for r in results}, "seeds", source)
    target = _one({r.target for r in results}, "targets", source)
    canary = _one({r.canary for r in results}, "canaries", source)
    versions = json.loads(_one({json.dumps(r.versions, sort_keys=True) for r in results}, "versions", source))
    total = sum(r.timings_s.get("total", 0.0) for r in results)
    ended = ended if ended is not None else 0.0
    return RunInfo(
        run_id or new_run_id(),
        tier,
        seed,
        target,
        canary=canary,
        expected=len(results),
        started=ended - total,
        ended=ended,
        status=COMPLETE,
        versions=versions,
        command=f"import {source}",
    )


def import_results(history: History, path: str | os.PathLike, tier: str = "imported") -> RunInfo:
    """Record results file `path` as one run; its lines' run id is kept when they share one not yet recorded."""
    results = read_results(path)
    ids = {r.run_id for r in results}
    run_id = next(iter(ids)) if len(ids) == 1 and "" not in ids else None
    if run_id is not None:
        try:
            history.run(run_id)
        except HistoryError:
            pass
        else:
            raise HistoryError(f"run {run_id} of {path} is already in {history.path}")
    run = run_of(results, str(path), tier, run_id, ended=Path(path).stat().st_mtime)
    history.ensure_run(run)
    for r in results:
        r.run_id = run.run_id
        history.record(r)
    return run


@dataclass
class MergeReport:
    results: list[CaseResult]
    run: RunInfo
    duplicates: list[str] = field(default_factory=list)  # cases found in more than one shard
    gaps: list[str] | None = None  # cases of the tier no shard has (None: the tier was not given)


def merge_shards(
    parts: list[str],
    out: str | os.PathLike,
    expected: list[str] | None = None,
    tier: str = "merged",
    seed: int | None = None,
) -> MergeReport:
    """Merge shard results files into `out`, in tier order where `expected` gives it; with `seed`,
    refuse shards that ran another one."""
    per_part = {p: read_results(p) for p in parts}
    everything = [r for rs in per_part.values() for r in rs]
    run = run_of(everything, "the shards", tier, ended=max(Path(p).stat().st_mtime for p in parts))
    if seed is not None and run.seed != seed:
        raise HistoryError(f"the shards ran with seed {run.seed}, not --seed {seed}")
    seen: dict[str, str] = {}
    duplicates = []
    for p, rs in per_part.items():
        for r in rs:
            if r.descriptor in seen:
                duplicates.append(f"{r.descriptor} (in {seen[r.descriptor]} and {p})")
            seen.setdefault(r.descriptor, p)
    unique: dict[str, CaseResult] = {}
    for r in everything:
        unique.setdefault(r.descriptor, r)
    rank = {d: i for i, d in enumerate(expected or [])}
    results = sorted(unique.values(), key=lambda r: (rank.get(r.descriptor, len(rank)), r.descriptor))
    for r in results:
        r.run_id = run.run_id
    write_results(results, out)
    gaps = None if expected is None else [d for d in expected if d not in unique]
    run.expected = len(expected) if expected is not None else len(results)
    return MergeReport(results, run, duplicates, gaps)
