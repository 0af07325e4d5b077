"""Command-line verbs over the run history: `runs`, `import`, `diff`, `report`."""

from __future__ import annotations

import json
import time
from pathlib import Path

from harness.cli import options
from harness.cli.common import EXIT_OK, diff_exit
from harness.history.db import INTERRUPTED, History, HistoryError, RunInfo
from harness.results.case_result import CaseResult


def cmd_runs(args) -> int:
    with History(args.db) as history:
        summaries = history.summaries(args.limit or None)
    if args.json:
        for s in summaries:
            print(json.dumps({**vars(s.run), "counts": s.counts, "cases": s.cases, "green": s.green}))
        return EXIT_OK
    if not summaries:
        print(f"no runs in {args.db}")
    for s in summaries:
        r = s.run
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started))
        wall = f"{r.wall_s / 60:.1f} min" if r.wall_s is not None else "-"
        counts = ", ".join(f"{n} {k}" for k, n in sorted(s.counts.items(), key=lambda kv: -kv[1]))
        extra = "".join(f" {k} {v}" for k, v in (("filter", r.filter), ("shard", r.shard), ("canary", r.canary)) if v)
        print(
            f"{r.run_id}  {when}  {r.tier:8s} {r.target:6s} seed {r.seed}{extra}  {r.status:11s} {wall:>9s}  "
            f"{s.green}/{s.cases} green{' (of ' + str(r.expected) + ')' if r.expected not in (None, s.cases) else ''}"
            f"  [{counts}]  executorch {r.versions.get('executorch', '?')}"
        )
    return EXIT_OK


def cmd_import(args) -> int:
    from harness.history.ingest import import_results

    with History(args.db) as history:
        run = import_results(history, args.results, args.tier)
    print(f"imported {run.expected} results from {args.results} as run {run.run_id} into {args.db}")
    return EXIT_OK


def load(
    history: History | None, ref: str, db: str, like: RunInfo | None = None, before: float | None = None
) -> tuple[str, RunInfo | None, list[CaseResult]]:
    """(label, run, results) of a run id, 'last', 'last-green' or a results file; with `like`, never that run
    itself (a resumed run started before it ended)."""
    if Path(ref).is_file() or ref.endswith(".jsonl"):
        from harness.results.store import read_results

        return ref, None, read_results(ref)
    if history is None:
        raise HistoryError(f"no history database {db} to find run {ref!r} in")
    run_id = history.resolve(ref, like=like, before=before, excluding=like.run_id if like else "")
    return run_id, history.run(run_id), history.results(run_id)


def cmd_diff(args) -> int:
    from harness.history.diff import diff
    from harness.report import diff_format

    history = History(args.db) if Path(args.db).exists() else None
    try:
        new_label, new_run, new = load(history, args.new, args.db)
        base_label, _, base = load(
            history, args.base, args.db, like=new_run, before=new_run.started if new_run else None
        )
    finally:
        if history is not None:
            history.close()
    d = diff(base, new, base_label, new_label, interrupted=bool(new_run and new_run.status == INTERRUPTED))
    render = {"text": diff_format.to_text, "markdown": diff_format.to_markdown, "json": diff_format.to_json}
    print(render[args.format](d), end="" if args.format != "json" else "\n")
    return diff_exit(d, args.fail_on_cost)


def cmd_report(args) -> int:
    from harness.history.diff import diff
    from harness.history.ingest import run_of
    from harness.report.html import write_report

    with History(args.db) as history:
        label, run, results = load(history, args.run, args.db)
        if run is None:  # a results file: a run of its own, not recorded
            run = run_of(results, label, "file", ended=Path(label).stat().st_mtime)
        d = None
        if args.baseline != "none":
            try:
                base_label, _, base = load(history, args.baseline, args.db, like=run, before=run.started)
                d = diff(base, results, base_label, run.run_id, interrupted=run.status == INTERRUPTED)
            except HistoryError as e:
                if args.baseline not in ("last", "last-green"):
                    raise
                print(f"no baseline: {e}")
        out = Path(args.out or f"reports/report-{run.run_id}")
        page = write_report(history, run, results, out, d, trend=args.trend)
    print(f"report: {page}\njunit:  {out / 'junit.xml'}")
    return EXIT_OK


def add_parsers(sub) -> dict:
    """This module's verbs on the command line's subparsers; verb -> its command."""
    runs = sub.add_parser("runs", help="list the recorded runs, newest first")
    runs.add_argument("--limit", type=int, default=20, help="at most this many (default: 20; 0: all)")
    runs.add_argument("--json", action="store_true", help="one JSON object per run")
    options.db(runs)

    imp = sub.add_parser("import", help="record a results file (JSONL) as a run in the history")
    imp.add_argument("results", help="a results file")
    imp.add_argument("--tier", default="imported", help="the tier it ran (default: imported)")
    options.db(imp)

    df = sub.add_parser("diff", help="what changed between two runs; exit 1 on a regression")
    df.add_argument("base", help="run id, last, last-green, or a results file")
    df.add_argument("new", help="run id, last, last-green, or a results file")
    df.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    options.fail_on_cost(df)
    options.db(df)

    rp = sub.add_parser("report", help="write the HTML report and JUnit XML of a run")
    rp.add_argument(
        "run", nargs="?", default="last", help="run id, last, last-green, or a results file (default: last)"
    )
    rp.add_argument("--out", default=None, help="output directory (default: reports/report-<run id>)")
    rp.add_argument(
        "--baseline", default="last-green", help="run to diff against (default: last-green; 'none': no diff)"
    )
    rp.add_argument("--trend", type=int, default=30, help="runs in the trend plots (default: 30)")
    options.db(rp)
    return {"runs": cmd_runs, "import": cmd_import, "diff": cmd_diff, "report": cmd_report}
