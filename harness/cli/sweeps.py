"""Command-line verbs that run or join sweeps: `sweep`, `nightly`, `merge`."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

from harness.cli import options
from harness.cli.common import EXIT_ENVIRONMENT, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, diff_exit, history_of
from harness.results.case_result import CaseResult


def _progress(total: int, enabled: bool):
    """A callback per finished case: a progress bar with the outcome counts, or a line per failure."""
    counts: Counter = Counter()
    bar = None
    if enabled:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="case", dynamic_ncols=True, file=sys.stderr)

    said: list[str] = []

    def on_result(r: CaseResult) -> None:
        speedups = r.versions.get("harness-speedups", "all on")
        if speedups != "all on" and speedups not in said:  # once a run (per distinct state)
            said.append(speedups)
            print(
                f"harness: speed-ups {speedups} in the workers (`python -m harness doctor` says why); results "
                "are those of the plain flow",
                file=sys.stderr,
            )
        counts[r.outcome.value] += 1
        if bar is not None:
            bar.set_postfix_str(", ".join(f"{n} {k}" for k, n in counts.items()), refresh=False)
            bar.update(1)
        elif not r.green:
            print(f"{r.outcome.value}: {r.descriptor}: {r.stale or r.reason}", file=sys.stderr)

    return on_result, bar


def _baseline_diff(history, run, results, interrupted: bool = False):
    """The diff against the last green run of the same kind before this one, or None when there is none."""
    from harness.history.db import HistoryError
    from harness.history.diff import diff

    if history is None:
        return None
    try:
        base_id = history.resolve("last-green", like=run, before=run.started, excluding=run.run_id)
    except HistoryError:
        return None
    return diff(history.results(base_id), results, base_id, run.run_id, interrupted)


def _sweep(args, tier: str, results: Path | None, db: Path | None):
    """Run the sweep, then write its summary, HTML report and JUnit XML beside its results file."""
    from harness.history.db import History
    from harness.report.html import write_report
    from harness.report.summary import summarize
    from harness.schedule.sweep import SweepRequest, check, run_sweep

    req = SweepRequest(
        tier,
        args.random,
        args.seed,
        args.filter,
        args.shard,
        args.target,
        getattr(args, "canary", ""),
        args.jobs,
        results,
        db,
        time_limit=getattr(args, "time_limit", None),
        resume=getattr(args, "resume", False),
        cluster=getattr(args, "cluster", ""),
        pack=getattr(args, "pack", 1),
        only=getattr(args, "only", None),
        chosen_by=getattr(args, "chosen_by", ""),
    )
    on_result, bar = _progress(len(check(req)), not args.no_progress)
    try:
        done = run_sweep(req, on_result)
    finally:
        if bar is not None:
            bar.close()
    summary = summarize(done.results, f"Sweep `{tier}`")
    if done.interrupted:
        summary += (
            f"\n**Interrupted** after {len(done.results)} of {done.run.expected} cases; the rest did not run "
            f"(`--resume` runs only those).\n"
        )
    if done.proof:
        summary += f"\n{done.proof[0].upper()}{done.proof[1:]}.\n"
    if done.nothing_ran:
        summary += f"\n**{done.nothing_ran}**: this run is not green.\n"
    summary += f"\nRun {done.run.run_id}: wall time {done.run.wall_s:.1f} s with {args.jobs} worker(s).\n"
    out = done.results_path.parent
    (out / "summary.md").write_text(summary)
    history = History(db) if db else None
    try:
        d = _baseline_diff(history, done.run, done.results, done.interrupted)
        write_report(history, done.run, done.results, out, d)
    finally:
        if history is not None:
            history.close()
    return done, summary, d


def choose_affected(args) -> None:
    """`--affected-by SPEC`: before any ExecuTorch but the installed one is on the path, the change's lines, the
    tier's line trace on the installed ExecuTorch (made once per version, resumable, under the cache), and the
    cases they select; the sweep then runs those on the change's end."""
    from harness.cases.tiers import cases_of
    from harness.config import ConfigError
    from harness.faults.catalog import source_file
    from harness.mutation import affected, reach
    from harness.policy.mutation import MODULES

    if args.executorch:
        raise ConfigError(
            f"invalid --executorch {args.executorch} with --affected-by: the cases run on the change's end"
        )
    change = affected.read_change(args.affected_by, {m: source_file(m) for m in MODULES})
    configs = cases_of(args.tier, target=args.target)
    trace: dict = {}
    if not change.unseen:
        path = reach.stored_at(args.tier, args.target)
        held = reach.recorded_cases(configs, path)  # case by case: a packed trace gives each case its pack's lines
        if held < len(configs):
            print(
                f"harness: tracing {args.tier} on the installed ExecuTorch: {len(configs) - held} of {len(configs)} "
                f"cases left, each alone (once per commit of ExecuTorch and the harness; resumable) into {path}",
                file=sys.stderr,
            )
        trace, _ = reach.trace(configs, args.jobs, path, 1, getattr(args, "cluster", ""))
    smoke = {c.descriptor for c in cases_of("smoke", target=args.target)}
    chosen = affected.select(configs, smoke, trace, change)
    print(f"harness: affected by {args.affected_by}: {chosen.why}", file=sys.stderr)
    args.only = frozenset(c.descriptor for c in chosen.cases)
    args.chosen_by = f"affected-by {args.affected_by}"
    args.executorch = change.run_on


def cmd_sweep(args) -> int:
    db = None if args.no_history else Path(args.db)
    done, summary, d = _sweep(args, args.tier, Path(args.results) if args.results else None, db)
    out = done.results_path.parent
    print(summary)
    if d is not None:
        from harness.report.diff_format import headline

        print(headline(d))
    print(
        f"results: {done.results_path}\nsummary: {out / 'summary.md'}\nreport:  {out / 'index.html'}\n"
        f"junit:   {out / 'junit.xml'}" + (f"\nhistory: run {done.run.run_id} in {db}" if db else "")
    )
    if done.interrupted:
        return _interrupted(done)
    return _nothing_ran(done) if done.nothing_ran else EXIT_OK if done.green else EXIT_FAIL


def _nothing_ran(done) -> int:
    """A run in which no case ran proves nothing of the backend: said last, with the environment's exit code."""
    print(f"error: {done.nothing_ran}", file=sys.stderr)
    return EXIT_ENVIRONMENT


def _interrupted(done) -> int:
    """The last line of an interrupted sweep, and the shell's exit code for Ctrl-C."""
    print(
        f"interrupted: {len(done.results)} of {done.run.expected} results kept in {done.results_path} and the "
        "history; `--resume` runs the rest",
        file=sys.stderr,
    )
    return EXIT_INTERRUPTED


def cmd_nightly(args) -> int:
    """Sweep the tier on every core, record it, write the report and JUnit, diff against the last green run of
    the same kind; exit by the diff: 1 on a regression (or, with no green baseline yet, on any case not green), 4
    with --fail-on-cost on a cost regression alone."""
    from harness.report.diff_format import to_text

    out = Path(args.out)
    done, _, d = _sweep(args, args.tier, out / "results.jsonl", Path(args.db))
    print(to_text(d) if d else f"no green {args.tier} run on {args.target} before {done.run.run_id}: nothing to diff")
    print(f"report: {out / 'index.html'}\njunit:  {out / 'junit.xml'}")
    if done.interrupted:
        return _interrupted(done)
    if done.nothing_ran:
        return _nothing_ran(done)
    if d is not None:
        return diff_exit(d, args.fail_on_cost)
    return EXIT_OK if done.green else EXIT_FAIL


def cmd_merge(args) -> int:
    from harness.cases.selection import select
    from harness.history.ingest import merge_shards

    expected = None
    if args.tier:
        seed = args.seed if args.seed is not None else 0
        expected = [c.descriptor for c in select(args.tier, args.random, seed, args.filter)]
    report = merge_shards(args.parts, args.out, expected, tier=args.tier or "merged", seed=args.seed)
    history = history_of(args)
    if history is not None:
        history.ensure_run(report.run)
        for r in report.results:
            history.record(r)
        history.close()
    print(
        f"merged {len(args.parts)} shard(s): {len(report.results)} cases into {args.out}"
        + (f" (run {report.run.run_id} in {args.db})" if history is not None else "")
    )
    for d in report.duplicates:
        print(f"duplicate: {d}")
    if report.gaps is None:
        print("gaps: unknown (give --tier and the selection to check them)")
    else:
        print(f"gaps: {len(report.gaps)}" + "".join(f"\n  missing: {d}" for d in report.gaps[:50]))
    return EXIT_OK if not report.duplicates and not report.gaps else EXIT_FAIL


def add_parsers(sub) -> dict:
    """This module's verbs on the command line's subparsers; verb -> its command."""
    sw = sub.add_parser("sweep", help="run a sweep in parallel workers; record it, write results and a summary")
    options.selection(sw)
    options.target(sw)
    sw.add_argument("--results", help="JSONL results path (default: reports/<tier>/results.jsonl)")
    sw.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    sw.add_argument("--canary", default="", metavar="NAME", help="inject this fault into the backend in every worker")
    sw.add_argument(
        "--affected-by",
        default="",
        metavar="SPEC",
        help="run, on the change's end, only the tier's cases a change to ExecuTorch can affect (those whose line "
        "trace reaches a line it touches) and the smoke tier: 'PATH' (a working tree against its HEAD), "
        "'PATH@REV' (a commit against its parent) or 'PATH@A..B'; every case when it touches a package file no "
        "trace covers",
    )
    options.executorch(sw)
    options.scheduling(sw)
    options.db(sw, records=True)

    ng = sub.add_parser("nightly", help="the nightly job: sweep, record, report, JUnit, diff against last-green")
    options.selection(ng, tier="nightly")
    options.target(ng)
    ng.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    ng.add_argument(
        "--out", default="reports/nightly", help="results, report and JUnit directory (default: reports/nightly)"
    )
    ng.add_argument("--no-progress", action="store_true", help="no progress bar")
    options.fail_on_cost(ng)
    options.executorch(ng)
    options.scheduling(ng)
    options.db(ng)

    mg = sub.add_parser("merge", help="join shard results into one run; refuse mixed versions or seeds")
    mg.add_argument("parts", nargs="+", help="the shards' results files")
    mg.add_argument("--out", required=True, help="the merged results file")
    options.tier_option(mg, "the tier the shards split, to report gaps (with --random/--seed/--filter as run)", None)
    mg.add_argument("--random", type=int, default=0, metavar="N")
    mg.add_argument("--seed", type=int, default=None, help="the selection's seed (default: the results' seed)")
    mg.add_argument("--filter", metavar="REGEX")
    options.db(mg, records=True)
    return {"sweep": cmd_sweep, "nightly": cmd_nightly, "merge": cmd_merge}
