"""Which lines of the mutation modules each case reaches: the tier's one clean run under the line tracer.

The trace (and each case's output digest without a mutant) is kept in the output directory, keyed by the cases
and versions, so later runs reuse it; while it runs, each case is appended as it ends, so a stopped trace
resumes. A mutant then runs only the cases that reach one of its lines.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.config import ConvConfig
from harness.faults.operators import Mutant
from harness.mutation.journal import read_keyed
from harness.results.case_result import CaseResult, versions
from harness.run.settings import FunctionRef, RunSettings
from harness.schedule.dispatch import run_anywhere
from harness.schedule.plan import Schedule

Trace = dict[str, dict[str, set[int]]]  # descriptor -> module -> lines run
Outputs = dict[str, str | None]  # descriptor -> the unmutated output's sha256 ('' if it ran no program, None if
# the case was not green without a mutant)


def stored_at(tier: str, target: str) -> Path:
    """Where a tier's case-by-case trace is kept for `sweep --affected-by` (one file per tier and target: the
    newest versions' trace replaces an older one)."""
    from harness.cache import ROOT

    return ROOT / "traces" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', tier)}-{target}.json"


def trace(configs: list[ConvConfig], jobs: int, cache: Path, pack: int = 1, cluster: str = "") -> tuple[Trace, Outputs]:
    """The lines of the modules each case runs, and each case's output digest without a mutant; read from
    `cache` when it was made with these versions. `pack` > 1 traces packs: a case gets its pack's lines.

    Each case is appended to `<cache>.partial.jsonl` as it ends (the key first), so a trace that stops (hours on
    a large tier) resumes from there with the same key, running only the cases it has not recorded. `cluster`: on
    that Ray cluster (harness.schedule.cluster) instead of `jobs` local workers."""
    from harness.mutation.trace import lines_of
    from harness.results.case_result import new_run_id

    key = _key(configs, pack)
    saved = _saved(cache, key)
    if saved is not None:
        return {d: {t: set(lines) for t, lines in by.items()} for d, by in saved["trace"].items()}, saved["outputs"]
    partial = cache.with_suffix(".partial.jsonl")
    cache.parent.mkdir(parents=True, exist_ok=True)
    recorded = _recorded(partial, key)
    if not recorded:
        partial.write_text(json.dumps({"key": key}) + "\n")
    left = [c for c in configs if c.descriptor not in recorded]
    with open(partial, "a") as log, open(cache.with_suffix(".results.jsonl"), "a" if recorded else "w") as results:

        def seen(r: CaseResult) -> None:  # the unmutated run's verdict is kept too
            row = {"descriptor": r.descriptor, "lines": lines_of(r), "output": r.output_sha256 if r.green else None}
            results.write(r.to_json() + "\n")
            log.write(json.dumps(row) + "\n")
            log.flush()
            recorded[r.descriptor] = row

        if left:
            schedule = Schedule(jobs, FunctionRef("harness.mutation.trace", "run_case"), pack=pack, cluster=cluster)
            run_anywhere(left, RunSettings(run_id=f"trace-{new_run_id()}"), schedule, seen)
    reached = {d: {t: set(v) for t, v in row["lines"].items()} for d, row in recorded.items()}
    outputs: Outputs = {d: row["output"] for d, row in recorded.items()}
    cache.write_text(
        json.dumps(
            {
                "key": key,
                "trace": {d: {t: sorted(v) for t, v in by.items()} for d, by in reached.items()},
                "outputs": outputs,
            }
        )
    )
    partial.unlink()
    return reached, outputs


def _key(configs: list[ConvConfig], pack: int) -> dict:
    return {
        "versions": {k: v for k, v in versions().items() if k != "harness"},
        "granularity": "lines",
        "cases": [c.descriptor for c in configs],
        "outputs": "sha256",
        "pack": pack,
    }


def _saved(cache: Path, key: dict) -> dict | None:
    try:
        saved = json.loads(cache.read_text())
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) and saved.get("key") == key else None


def recorded_cases(configs: list[ConvConfig], cache: Path, pack: int = 1) -> int:
    """How many of `configs` the trace at `cache` holds for these versions: all of them when it is complete."""
    key = _key(configs, pack)
    if _saved(cache, key) is not None:
        return len(configs)
    return len(_recorded(cache.with_suffix(".partial.jsonl"), key))


def _recorded(partial: Path, key: dict) -> dict[str, dict]:
    """The cases an interrupted trace with `key` recorded in `partial`; none when it has another key (a trace of
    other cases or versions starts afresh)."""
    try:
        saved, rows = read_keyed(partial) if partial.exists() else (None, [])
    except ValueError:
        return {}
    return {row["descriptor"]: row for row in rows} if saved == key else {}


def reaching(m: Mutant, module: str, configs: list[ConvConfig], reached: Trace) -> list[ConvConfig]:
    """The cases that run one of the mutant's lines, in tier order."""
    first, last = m.lines if m.lines != (0, 0) else (m.line, m.line)
    span = set(range(first, last + 1))
    return [c for c in configs if span & reached.get(c.descriptor, {}).get(module, set())]
