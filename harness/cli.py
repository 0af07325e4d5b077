"""Command line: `python -m harness list | run | sweep`.

Exit status: 0 when every case is green, 1 when any is not, 2 for a bad
descriptor, sweep name or option (one line on stderr naming the value).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

from harness.config import ConfigError, parse_descriptor
from harness.policy.targets import DEFAULT_TARGET, TARGETS, get_target
from harness.results.store import ResultsFileError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
LIST_FIELDS = (
    "rank", "transposed", "groups", "in_channels", "out_channels", "kernel", "stride", "padding",
    "dilation", "output_padding", "bias", "scheme", "batch", "input_size", "padding_mode", "dataset", "context", "dynamic",
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="verb", required=True, metavar="{list,run,sweep,canaries}")

    ls = sub.add_parser("list", help="print the cases of a sweep, one descriptor per line")
    ls.add_argument("--sweep", default="smoke", help="sweep: smoke, nightly or full (default: smoke)")
    ls.add_argument("--random", type=int, default=0, metavar="N", help="append N seeded random cases")
    ls.add_argument("--seed", type=int, default=0, help="seed of the random cases (default: 0)")
    ls.add_argument("--json", action="store_true", help="one JSON object per line with the config fields")
    ls.add_argument("--filter", metavar="REGEX", help="only descriptors matching this regex (re.search)")
    ls.add_argument("--stats", action="store_true", help="counts per rank, expected TOSA op, scheme, context, data set, dynamic dims")

    run = sub.add_parser("run", help="run one case and print its outcome, metrics and TOSA ops")
    run.add_argument("descriptor", help="case descriptor, e.g. conv2d_ic8_oc16_i32x32_k3x3_s2_p1_qa8w8")
    run.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    run.add_argument("--json", action="store_true", help="print the result as one JSON line")
    run.add_argument("--keep", metavar="DIR", help="save inputs, outputs and flatbuffer here if it fails")
    run.add_argument("--target", default=DEFAULT_TARGET, help=f"target: {', '.join(TARGETS)} (default: {DEFAULT_TARGET})")
    run.add_argument("--canary", default="", metavar="NAME", help="inject this fault into the backend (see `canaries`)")

    sw = sub.add_parser("sweep", help="run a whole sweep in parallel workers, write results and a summary")
    sw.add_argument("--sweep", default="smoke", help="sweep: smoke, nightly or full (default: smoke)")
    sw.add_argument("--random", type=int, default=0, metavar="N", help="append N random cases drawn with --seed")
    sw.add_argument("--filter", metavar="REGEX", help="only descriptors matching this regex, e.g. '_dy' or '_qa16w8_'")
    sw.add_argument("--results", help="JSONL results path (default: reports/<sweep>/results.jsonl)")
    sw.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    sw.add_argument("--seed", type=int, default=0, help="data seed, and seed of --random cases (default: 0)")
    sw.add_argument("--target", default=DEFAULT_TARGET, help=f"target: {', '.join(TARGETS)} (default: {DEFAULT_TARGET})")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    sw.add_argument("--canary", default="", metavar="NAME", help="inject this fault into the backend in every worker")

    sub.add_parser("canaries", help="list the canary faults that prove the harness can fail")
    return p


def expected_op(c) -> str:
    """The TOSA conv op RewriteConvPass should choose (grouped convs: per group)."""
    from harness.cases.rejections import expected_rejection

    if expected_rejection(c):
        return "rejected"
    if c.transposed:
        return "TRANSPOSE_CONV2D"
    if c.rank == 3:
        return "CONV3D"
    return "DEPTHWISE_CONV2D" if c.is_depthwise else "CONV2D"


def _print_stats(configs) -> None:
    from collections import Counter

    print(f"{len(configs)} cases")
    for title, key in (("rank", lambda c: f"{'t' if c.transposed else ''}conv{c.rank}d"), ("op", expected_op),
                       ("scheme", lambda c: c.scheme), ("context", lambda c: c.context),
                       ("data set", lambda c: c.dataset), ("dynamic", lambda c: c.dynamic)):
        counts = Counter(key(c) for c in configs)
        print(f"{title:9s} " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])))


def select(configs, pattern: str | None):
    """The configs whose descriptor matches `pattern` (all if None)."""
    if pattern is None:
        return configs
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise ConfigError(f"invalid --filter {pattern!r}: not a regular expression ({e})") from None
    return [c for c in configs if regex.search(c.descriptor)]


def _cmd_list(args) -> int:
    from harness.cases.sweeps import sweep

    configs = select(sweep(args.sweep, args.random, args.seed), args.filter)
    if args.stats:
        _print_stats(configs)
        return EXIT_OK
    for c in configs:
        if args.json:
            fields = c.fields_dict()
            print(json.dumps({"descriptor": c.descriptor, **{k: fields[k] for k in LIST_FIELDS}}))
        else:
            print(c.descriptor)
    return EXIT_OK


def _print_result(r) -> None:
    print(f"outcome: {r.outcome.value}" + (f" ({r.reason})" if r.reason else ""))
    if r.stale:
        print(f"stale:   {r.stale}")
    print(f"case:    {r.descriptor} seed {r.seed} on {r.target} ({r.runner})")
    if r.issue or r.rejection:
        from harness.report.summary import explanation

        print(f"because: {explanation(r)}" + (f" (actual outcome {r.actual_outcome})"
                                               if r.actual_outcome != r.outcome.value else ""))
    if r.rule:
        print(f"rule:    {r.rule}")
    print(f"tosa:    {' '.join(r.tosa_ops) or '-'}")
    m = {k: v for k, v in r.metrics.items() if k not in ("worst", "qparams", "where")}
    if m:
        print("metrics: " + ", ".join(f"{k}={v}" for k, v in m.items()))
    if "worst" in r.metrics:
        print(f"worst:   {r.metrics['worst']}")
    if "where" in r.metrics:
        w = r.metrics["where"]
        print(f"where:   {w['border']} on the border, {w['interior']} inside ({w['border_share']:.0%} on the border, "
              f"which is {w['border_positions_share']:.0%} of positions); channels {w['channels']} "
              f"({w['n_channels']} of {w['of_channels']})")
    if "qparams" in r.metrics:
        print(f"qparams: {json.dumps(r.metrics['qparams'])}")
    print("timings: " + ", ".join(f"{k} {v:.3f}s" for k, v in r.timings_s.items()))
    if r.artifacts:
        print(f"kept:    {r.artifacts}")
    print(f"__REPRO: {r.repro}")


def _cmd_run(args) -> int:
    config = parse_descriptor(args.descriptor)
    get_target(args.target)  # unknown target: usage error before any work
    if args.canary:
        from harness.cases.canaries import get

        get(args.canary)  # unknown canary: usage error before any work
    from harness.results.case_result import new_run_id
    from harness.run.execute import run_case

    result = run_case(config, args.seed, args.target, keep_dir=args.keep, canary=args.canary, run_id=new_run_id())
    if args.json:
        print(result.to_json())
    else:
        _print_result(result)
    return EXIT_OK if result.green else EXIT_FAIL


def _cmd_sweep(args) -> int:
    from harness.cases.sweeps import sweep
    from harness.run.parallel import run_parallel
    from harness.report.summary import outcome_counts, summarize
    from harness.results.case_result import new_run_id
    from harness.results.store import ResultWriter, merge

    get_target(args.target)
    if args.jobs < 1:
        raise ConfigError(f"invalid -j {args.jobs}: must be >= 1")
    if args.canary:
        from harness.cases.canaries import get

        get(args.canary)
    configs = select(sweep(args.sweep, args.random, args.seed), args.filter)
    results_path = Path(args.results or f"reports/{args.sweep}/results.jsonl")
    part = results_path.with_name(results_path.stem + ".part" + results_path.suffix)
    part.unlink(missing_ok=True)
    keep = str(results_path.parent / "artifacts")
    run_id = new_run_id()
    finished = []
    bar = None
    if not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=len(configs), unit="case", dynamic_ncols=True, file=sys.stderr)
    start = time.perf_counter()
    with ResultWriter(part) as writer:

        def on_result(r) -> None:
            writer.write(r)
            finished.append(r)
            if bar is not None:
                bar.set_postfix_str(", ".join(f"{n} {k}" for k, n in outcome_counts(finished).items()), refresh=False)
                bar.update(1)
            elif not r.green:
                print(f"{r.outcome.value}: {r.descriptor}: {r.stale or r.reason}", file=sys.stderr)

        try:
            run_parallel(configs, args.seed, args.target, args.jobs, on_result, keep_dir=keep, canary=args.canary,
                         run_id=run_id)
        except KeyboardInterrupt:
            print(f"\ninterrupted: {len(finished)} of {len(configs)} results kept in {results_path}", file=sys.stderr)
        finally:
            if bar is not None:
                bar.close()
    wall = time.perf_counter() - start
    results = merge([part], results_path, [c.descriptor for c in configs])
    part.unlink()
    summary = summarize(results, f"Sweep `{args.sweep}`")
    summary += f"\nWall time {wall:.1f} s with {args.jobs} worker(s).\n"
    (results_path.parent / "summary.md").write_text(summary)
    print(summary)
    print(f"results: {results_path}\nsummary: {results_path.parent / 'summary.md'}")
    complete = len(results) == len(configs)
    return EXIT_OK if complete and all(r.green for r in results) else EXIT_FAIL


def _cmd_canaries(args) -> int:
    from harness.cases.canaries import CANARIES

    for c in CANARIES.values():
        print(f"{c.name:24s} {c.branch}: {c.fault}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        verbs = {"list": _cmd_list, "run": _cmd_run, "sweep": _cmd_sweep, "canaries": _cmd_canaries}
        return verbs[args.verb](args)
    except (ConfigError, ResultsFileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `python -m harness list | head`
        return EXIT_OK
