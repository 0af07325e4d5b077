"""Mutation testing of the installed conv lowering with a tier of the harness: the kill rate and the survivors.

1. Trace (`harness.mutation.reach`): the tier runs once, alone and clean, under `harness.mutation.trace`, which
   records the lines of the modules each case runs (kept per ExecuTorch version
   and tier in the output directory, so later runs reuse it).
2. For each mutant, only the cases that run one of its lines (`Mutant.lines`)
   run, packed, with the mutant loaded for that pack (as a canary is); its
   first case that is not green kills it and drops its remaining packs. One
   set of workers serves every mutant (a task names its mutant), every
   mutant's first pack comes before any second pack, and a first pack spans
   the mutant's whole case list, so most mutants die in one pack. The set of
   cases run, so the verdict, is the same in any order (which case is named
   as the killer may differ). A mutant no case reaches is `unreached`; one
   that every reaching case survives is `survived`, or `masked` when none of
   those cases was judged (each ended in a known issue or a documented
   rejection: the registry's verdict stands where the oracle's would); one
   that cannot be loaded is `invalid` and not counted.
3. A survivor listed in harness/policy/mutation_equivalents.toml (matched by what it changes) is `equivalent`
   only when every case that reached it ran and gave bit-identical outputs: a listing is checked on every run,
   never taken on trust. A listed mutant that changed an output stays `survived`, one nobody reached stays
   `unreached`, one behind a known issue stays `masked`; each reason says the listing did not hold.
4. The score is killed / (killed + survived + masked): the mutants that ran and were not shown equivalent.
   `unreached` (no case runs the line) is counted apart, as is each operator class's score.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path

from harness.cases.selection import select
from harness.config import ConfigError, ConvConfig
from harness.faults.catalog import mutant_name, mutants_of, source_file
from harness.faults.operators import Mutant
from harness.mutation.campaign import Campaign
from harness.mutation.reach import Outputs, Trace, reaching, trace
from harness.mutation.render import write
from harness.mutation.report import MutantResult, MutationReport
from harness.policy.limits import MUTANT_WORKER_TASKS
from harness.policy.mutation import DEFAULT_MODULES
from harness.results.case_result import CaseResult, versions
from harness.run.settings import RunSettings
from harness.schedule.dispatch import run_anywhere
from harness.schedule.parallel import Task
from harness.schedule.plan import Schedule

UNJUDGED = ("known_issue", "expected_rejection")  # outcomes where the registry, not the oracle, decided
MUTANT_TIME_LIMIT_S = 120.0  # a mutant that makes a case hang is killed by the timeout; a clean case takes seconds


def check_modules(modules: list[str]) -> list[str]:
    """The modules (default: the three conv passes); ConfigError for one unknown or not installed."""
    for t in modules:
        source_file(t)
    return modules or list(DEFAULT_MODULES)


def _spread(cases: list[ConvConfig], pack: int) -> list[ConvConfig]:
    """The cases reordered so that the first packs span the whole list (every k-th case first): a
    mutant dies in its first pack far more often than when it sees one base in every scheme first."""
    k = max(1, -(-len(cases) // max(1, pack)))
    return [c for i in range(k) for c in cases[i::k]]


def _rounds(plans: dict[str, list[ConvConfig]], pack: int) -> list[Task]:
    """Tasks carrying their mutant: every mutant's first pack, then every mutant's second, ..., so that a
    mutant's later packs come after the others' first ones, when a kill has already dropped most."""
    from harness.schedule.packing import form_packs

    packs = {name: form_packs(cases, "tosa", pack) for name, cases in plans.items()}
    depth = max((len(p) for p in packs.values()), default=0)
    return [
        Task(tuple(c.descriptor for c in p[r]), name) for r in range(depth) for name, p in packs.items() if r < len(p)
    ]


PROGRESS_EVERY_S = 60.0


@dataclass
class Progress:
    """How far the mutants' runs are: case runs done of at most `planned` (a kill drops its mutant's rest)."""

    case_runs: int
    planned: int
    decided: int
    mutants: int
    start: float

    def line(self) -> str:
        minutes = (time.perf_counter() - self.start) / 60
        return (
            f"mutate: {self.case_runs:,} case runs of at most {self.planned:,}; {self.decided} of {self.mutants} "
            f"mutants decided ({minutes:.0f} min)"
        )


def run_mutants(
    mutants: list[tuple[str, Mutant]],
    configs: list[ConvConfig],
    reached: Trace,
    *,
    jobs: int,
    pack: int,
    on_mutant=None,
    baseline: Outputs | None = None,
    on_progress=None,
    replay: dict[str, list[CaseResult]] | None = None,
    on_case=None,
    cluster: str = "",
) -> list[MutantResult]:
    """Every mutant's reaching cases on one set of workers (a task carries its mutant); a mutant's
    remaining packs are dropped at its first case that is not green. A green case whose output bits
    differ from `baseline`'s counts in the survivor's `outputs_changed`: a fault the tolerance hid.
    `on_progress(Progress)`, at most once a minute: hard mutants decide late, and an hour of silence looks hung.
    `replay`: a mutant's case results from an interrupted run, judged first (its other cases are what run);
    `on_case` sees each case result that counts for its mutant, as the journal keeps them. `cluster`: the tasks run
    on that Ray cluster (harness.schedule.cluster), not on `jobs` local workers: the same verdicts."""
    baseline = baseline or {}
    rows, remaining = {}, {}
    plans: dict[str, list[ConvConfig]] = {}
    for module, m in mutants:
        name = mutant_name(module, m.index)
        rows[name] = MutantResult(
            name, m.function, m.line, m.operator, m.description, "survived", diff=m.diff, column=m.column
        )
        cases = reaching(m, module, configs, reached)
        if cases:
            plans[name], remaining[name] = _spread(cases, pack), len(cases)
        else:
            rows[name].status = "unreached"
    decided: set[str] = {name for name, row in rows.items() if row.status == "unreached"}

    def finish(name: str) -> None:
        decided.add(name)
        if on_mutant:
            on_mutant(rows[name])

    for row in rows.values():
        if row.status == "unreached" and on_mutant:
            on_mutant(row)

    def on_result(r: CaseResult) -> None:
        if on_case and r.canary not in decided:
            on_case(r)
        judge(r)
        progress.case_runs, progress.decided = progress.case_runs + 1, len(decided)
        if on_progress and time.perf_counter() - said[0] >= PROGRESS_EVERY_S:
            said[0] = time.perf_counter()
            on_progress(progress)

    def judge(r: CaseResult) -> None:
        name, row = r.canary, rows[r.canary]
        if name in decided:
            return  # a pack already running when its mutant died
        row.cases_run += 1
        remaining[name] -= 1
        if r.outcome.value in UNJUDGED:
            by = r.issue or r.rejection or r.outcome.value
            if by not in row.masked_by.split(", "):
                row.masked_by = f"{row.masked_by}, {by}" if row.masked_by else by
        else:
            row.judged += 1
        if r.green and r.output_sha256 and baseline.get(r.descriptor, r.output_sha256) != r.output_sha256:
            row.outputs_changed += 1
            row.changed_case = row.changed_case or r.descriptor
        if not r.green:
            row.status, row.killed_by, row.outcome, row.reason = "killed", r.descriptor, r.outcome.value, r.reason[:300]
            if "MutantError" in r.reason:  # the mutant could not be loaded: it says nothing
                row.status = "invalid"
            finish(name)
        elif remaining[name] == 0:
            if not row.judged:
                row.status, row.reason = "masked", f"every reaching case ended unjudged ({row.masked_by})"
            finish(name)

    for name, results in (replay or {}).items():
        if name in plans:
            once = {r.descriptor: r for r in results}  # a case journaled twice counts once
            for r in once.values():
                judge(r)
            plans[name] = [c for c in plans[name] if c.descriptor not in once]
    progress = Progress(
        0, sum(remaining[n] for n in plans if n not in decided), len(decided), len(rows), time.perf_counter()
    )
    said = [progress.start]
    schedule = Schedule(
        jobs, time_limit=MUTANT_TIME_LIMIT_S, pack=pack, cluster=cluster, recycle_tasks=MUTANT_WORKER_TASKS
    )
    run_anywhere([], RunSettings(), schedule, on_result, tasks=_rounds(plans, pack), skip=decided.__contains__)
    return list(rows.values())


def sample(mutants: list[Mutant], fraction: float, seed: int) -> list[Mutant]:
    """A seeded uniform sample of `fraction` of the mutants (at least one), in file order."""
    if fraction >= 1:
        return mutants

    k = max(1, round(fraction * len(mutants)))
    return sorted(random.Random(seed).sample(mutants, k), key=lambda m: m.index)


def identity(function: str, line: int, operator: str, description: str, diff: str) -> tuple:
    """What a mutant changes, without its index (which moves when the mutator's points do)."""
    body = [d for d in diff.splitlines() if not d.startswith(("---", "+++"))]
    return function, line, operator, description, tuple(body)


def carried(
    previous: Path | None, descriptors: set[str], current: dict[tuple, str] | None = None
) -> dict[str, MutantResult]:
    """The mutants a previous report saw killed (or invalid) by a case this tier still runs: the same
    case with the same mutant gives the same result, so they need not run again. With `current`
    (identity -> today's name), a row is matched by what it changes and renamed; one that matches no
    mutant of today's source is dropped."""
    if previous is None:
        return {}
    rows = [
        row
        for row in json.loads(previous.read_text())["mutants"]
        if row["status"] == "invalid" or (row["status"] == "killed" and row["killed_by"] in descriptors)
    ]
    return {name: dataclasses.replace(r, carried=True) for name, r in renamed(rows, current).items()}


def renamed(rows: list[dict], current: dict[tuple, str] | None) -> dict[str, MutantResult]:
    """Rows of an earlier run under today's names: with `current` (identity -> name) matched by what each
    changes, a row that matches no mutant of today's source dropped; without it, by their own names."""
    out = {}
    for row in rows:
        name = (
            row["name"]
            if current is None
            else current.get(identity(row["function"], row["line"], row["operator"], row["description"], row["diff"]))
        )
        if name:
            out[name] = MutantResult(**{**row, "name": name})
    return out


WRONG_LISTING = re.compile(r"^listed as \w+ in the policy, but killed: the listing is wrong\. ")


def mark_equivalents(rows: list[MutantResult]) -> None:
    """A listed survivor that ran with bit-identical outputs on every case becomes `equivalent`, with the listed
    reason; any other listed mutant keeps its status and its reason says why the listing did not hold (a kill, a
    changed output, no case reaching it, a known issue in the way)."""
    from harness.faults.equivalents import lookup_at

    lines: dict[str, list[str]] = {}
    for row in rows:
        if row.status == "invalid":
            continue
        if row.status == "killed":  # a carried kill's reason says what the listing was then: judge today's
            row.reason = WRONG_LISTING.sub("", row.reason, count=1)
        module = row.name.split(":")[1]
        text = lines.setdefault(module, source_file(module).read_text().splitlines())
        e = lookup_at(module, row.function, row.line, row.operator, row.description, text, column=row.column)
        if e is None:
            continue
        listed = f"listed as {e.kind}"
        if row.status == "survived" and not row.outputs_changed:
            row.status, row.reason = (
                "equivalent",
                f"{e.kind} (ran {row.cases_run} cases, outputs bit-identical): {e.reason}",
            )
        elif row.reason.startswith(listed):
            continue
        elif row.status == "killed":
            row.reason = f"{listed} in the policy, but killed: the listing is wrong. {row.reason}"
        elif row.status == "survived":
            row.reason = (
                f"{listed} in the policy, but {row.outputs_changed} outputs changed (e.g. "
                f"{row.changed_case}): the listing is wrong"
            )
        else:
            row.reason = f"{listed} in the policy, not shown: {row.reason or 'no case reaches it'}. {e.reason}"


def mutate(campaign: Campaign, *, on_mutant=None, on_progress=None) -> MutationReport:
    """Run the mutation analysis `campaign` asks for; `on_mutant` sees each row as its verdict is reached (the
    journal records it), `on_progress` the runs' `Progress` once a minute. A cluster campaign runs the trace and
    the mutants on that Ray cluster, the way `sweep --cluster` does."""
    from harness.mutation.journal import JOURNAL, Journal, run_key

    c = campaign
    modules = check_modules(list(c.modules))
    pattern = re.compile(c.function) if c.function else None
    configs = select(c.tier, 0, 0, c.filter, None, "tosa")
    if c.cases is not None:
        configs = [x for x in configs if x.descriptor in c.cases]
        if not configs:
            raise ConfigError(f"none of the {len(c.cases)} listed cases is a case of the {c.tier} tier")
    start = time.perf_counter()
    report = MutationReport(c.tier, modules, versions(), fraction=c.fraction, seed=c.seed)
    current = {
        identity(m.function, m.line, m.operator, m.description, m.diff): mutant_name(t, m.index)
        for t in modules
        for m in mutants_of(t)
    }
    # A journal of another run is refused here, before the trace.
    journal = Journal(c.out / JOURNAL, run_key(c.tier, [x.descriptor for x in configs], report.versions), c.resume)
    resumed = renamed(journal.verdicts, current)
    reached, outputs = trace(configs, c.jobs, c.out / f"trace-{c.tier}.json", c.trace_pack, c.cluster)
    # A case that fails without a mutant would "kill" every mutant it reaches: it judges none.
    report.not_green = [x.descriptor for x in configs if outputs.get(x.descriptor, "") is None]
    configs = [x for x in configs if outputs.get(x.descriptor, "") is not None]

    def seen(row: MutantResult) -> None:
        if row.name not in resumed:
            journal.record(row)
        if on_mutant:
            on_mutant(row)

    kept = carried(c.carry, {x.descriptor for x in configs}, current) | resumed
    chosen = {
        mutant_name(t, m.index): (t, m)
        for t in modules
        for m in sample(
            [
                m
                for m in mutants_of(t)
                if (pattern is None or pattern.search(m.function))
                and (not c.names or mutant_name(t, m.index) in c.names)
            ][: c.limit],
            c.fraction,
            c.seed,
        )
    }
    for name in chosen:
        if name in kept:
            seen(kept[name])
    replay = {
        name: [CaseResult.from_dict(c) for c in results]
        for name, results in journal.cases.items()
        if name in chosen and name not in kept
    }
    todo = [tm for name, tm in chosen.items() if name not in kept]
    rows = kept | {
        r.name: r
        for r in run_mutants(
            todo,
            configs,
            reached,
            jobs=c.jobs,
            pack=c.pack,
            on_mutant=seen,
            baseline=outputs,
            on_progress=on_progress,
            replay=replay,
            on_case=journal.record_case,
            cluster=c.cluster,
        )
    }
    report.mutants = [dataclasses.replace(rows[name], column=m.column) for name, (_, m) in chosen.items()]
    mark_equivalents(report.mutants)
    report.wall_s = round(time.perf_counter() - start, 1)
    write(report, c.out)
    return report
