"""Command-line verbs about cases: `list`, `run`, `canaries`."""

from __future__ import annotations

import json
import sys
from collections import Counter

from harness.cli import options
from harness.cli.common import EXIT_FAIL, EXIT_OK
from harness.config import ConfigError, parse_descriptor
from harness.policy.targets import check_case, check_tools, get_target

LIST_FIELDS = (
    "rank",
    "transposed",
    "groups",
    "in_channels",
    "out_channels",
    "kernel",
    "stride",
    "padding",
    "dilation",
    "output_padding",
    "bias",
    "scheme",
    "batch",
    "input_size",
    "padding_mode",
    "dataset",
    "context",
    "dynamic",
)


def expected_op(c) -> str:
    """The TOSA conv op RewriteConvPass should choose (grouped convs: per group), or 'rejected'."""
    from harness.expectations.rejections import expected_rejection
    from harness.judging.op_choice import expected_op as tosa_op

    return "rejected" if expected_rejection(c) else tosa_op(c)


def _print_stats(configs) -> None:
    print(f"{len(configs)} cases")
    for title, key in (
        ("rank", lambda c: f"{'t' if c.transposed else ''}conv{c.rank}d"),
        ("op", expected_op),
        ("scheme", lambda c: c.scheme),
        ("context", lambda c: c.context),
        ("data set", lambda c: c.dataset),
        ("dynamic", lambda c: c.dynamic),
    ):
        counts = Counter(key(c) for c in configs)
        print(f"{title:9s} " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])))


def cmd_list(args) -> int:
    from harness.cases.selection import select

    configs = select(args.tier, args.random, args.seed, args.filter, args.shard, args.target)
    if args.stats:
        _print_stats(configs)
        return EXIT_OK
    if getattr(args, "classes", False):
        _print_classes(configs)
        if args.html:
            from harness.report.coverage_page import write

            print(f"crossing: {write(configs, f'The crossing in {args.tier}', args.html)}")
        return EXIT_OK
    if args.html:
        raise ConfigError(f"invalid --html {args.html}: it writes the crossing, so it needs --classes")
    for c in configs:
        if args.json:
            fields = c.fields_dict()
            print(json.dumps({"descriptor": c.descriptor, **{k: fields[k] for k in LIST_FIELDS}}))
        else:
            print(c.descriptor)
    return EXIT_OK


def _print_classes(configs) -> None:
    """Each structural class with its case count, then what each fact takes per conv kind."""
    from harness.cases.classes import classes, marginals

    counted = classes(configs)
    for name, n in sorted(counted.items()):
        print(f"{n:5d}  {name}")
    print(f"{len(counted)} structural classes over {len(configs)} cases")
    for kind, facts in marginals(configs).items():
        axis = facts.pop("axis (k,s,p,d)")
        print(
            f"{kind}: {len(axis)} axis classes; " + "; ".join(f"{f} {' '.join(map(str, v))}" for f, v in facts.items())
        )
    _print_crossing(configs)


def _print_crossing(configs) -> None:
    """How much of the crossing (axis class x group kind x bias, per position) the cases cover, and what the
    crossing leaves out on purpose."""
    from harness.cases.crossed import LEFT_OUT, coverage

    print("crossing (harness.cases.crossed): axis class x group kind x bias, per conv kind and position")
    for row in coverage(configs):
        share = row["covered"] / row["expected"]
        missing = f"; e.g. missing {', '.join(f'{a} {g} b{b}' for a, g, b in row['missing'])}" if row["missing"] else ""
        print(
            f"  {row['kind']:8s} {row['position']:5s} {row['covered']:5d} of {row['expected']:5d} "
            f"({share:.0%}){missing}"
        )
    for what, why in LEFT_OUT.items():
        print(f"  left out: {what}: {why}")
    _print_cross_axis(configs)
    _print_decisions(configs)


def _print_decisions(configs) -> None:
    """For each arithmetic decision of the conv passes and each operand, the pair of cases in which that operand
    alone tips it (harness.cases.decisions, MC/DC), or why none can."""
    from harness.cases.decisions import tips

    print("decisions (harness.cases.decisions): each operand alone tipping each decision of the passes' arithmetic")
    for row in tips(configs):
        shown = " / ".join(row["pair"]) if row["pair"] else f"cannot: {row['cannot']}" if row["cannot"] else "MISSING"
        print(f"  {row['decision']:9s} {row['operand']:12s} {shown}")


def _print_cross_axis(configs) -> None:
    """How many pairs of per-axis facts across two axes the cases hold (harness.cases.cross_axis)."""
    from harness.cases.cross_axis import coverage

    print("cross-axis (harness.cases.cross_axis): pairs of per-axis facts across two axes, per conv kind")
    for row in coverage(configs):
        share = row["covered"] / row["expected"]
        missing = f"; e.g. missing {', '.join(map(str, row['missing']))}" if row["missing"] else ""
        print(f"  {row['kind']:8s} {row['axes']:5s} {row['covered']:5d} of {row['expected']:5d} ({share:.0%}){missing}")


def _print_result(r) -> None:
    print(f"outcome: {r.outcome.value}" + (f" ({r.reason})" if r.reason else ""))
    if r.stale:
        print(f"stale:   {r.stale}")
    print(f"case:    {r.descriptor} seed {r.seed} on {r.target} ({r.runner})")
    if r.issue or r.rejection:
        from harness.report.summary import explanation

        print(
            f"because: {explanation(r)}"
            + (f" (actual outcome {r.actual_outcome})" if r.actual_outcome != r.outcome.value else "")
        )
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
        print(
            f"where:   {w['border']} on the border, {w['interior']} inside ({w['border_share']:.0%} on the border, "
            f"which is {w['border_positions_share']:.0%} of positions); channels {w['channels']} "
            f"({w['n_channels']} of {w['of_channels']})"
        )
    if "vela" in r.metrics:
        v = r.metrics["vela"]
        print(
            f"vela:    {v.get('npu_ops', '?')} operator(s) on the NPU, {v.get('cpu_ops', '?')} on the CPU; "
            f"{v.get('cycles', '?')} cycles for {v.get('macs', '?')} MACs ({v.get('cycles_per_mac', '?')} per MAC), "
            f"{v.get('inference_s', 0) * 1e6:.1f} us; SRAM {v.get('sram_kib', '?')} KiB, flash "
            f"{v.get('off_chip_flash_kib', v.get('on_chip_flash_kib', '?'))} KiB; "
            f"command stream {v.get('command_stream_bytes', '?')} bytes"
        )
    if "qparams" in r.metrics:
        print(f"qparams: {json.dumps(r.metrics['qparams'])}")
    print("timings: " + ", ".join(f"{k} {v:.3f}s" for k, v in r.timings_s.items()))
    if r.artifacts:
        print(f"kept:    {r.artifacts}")
    if r.added_by:
        print(f"added:   by the {r.added_by}; next: {r.next_step}")
    print(f"__REPRO: {r.repro}")


def cmd_run(args) -> int:
    config = parse_descriptor(args.descriptor)
    check_case(get_target(args.target), config)  # unknown target, or not a case of it: usage error before any work
    check_tools(get_target(args.target))
    if args.canary:
        from harness.faults.canaries import get

        get(args.canary)  # unknown canary: usage error before any work
    check_captured(config, args.captured)
    from harness.results.case_result import new_run_id
    from harness.run.execute import run_case

    result = run_case(
        config,
        args.seed,
        args.target,
        keep_dir=args.keep,
        canary=args.canary,
        run_id=new_run_id(),
        data_file=args.captured,
    )
    from harness.speedups import state

    if state.current() is not None and state.current().off:
        print(state.current().line(), file=sys.stderr)
    if args.json:
        print(result.to_json())
    else:
        _print_result(result)
    return EXIT_OK if result.green else EXIT_FAIL


def check_captured(config, data_file: str) -> None:
    """ConfigError (one line) unless a captured case names a file that holds its tensors, and only it names one."""
    from harness.config import CAPTURED, ConfigError

    if config.dataset != CAPTURED:
        if data_file:
            raise ConfigError(
                f"invalid --captured={data_file}: only a ds{CAPTURED} case reads its tensors from a file, "
                f"not ds{config.dataset}"
            )
        return
    from harness.build.data import make_tensors

    make_tensors(config, 0, data_file)


def cmd_canaries(args) -> int:
    from harness.faults.canaries import CANARIES

    for c in CANARIES.values():
        print(f"{c.name:24s} {c.branch}: {c.fault}")
    return EXIT_OK


def add_parsers(sub) -> dict:
    """This module's verbs on the command line's subparsers; verb -> its command."""
    ls = sub.add_parser("list", help="print the cases of a tier, one descriptor per line")
    options.selection(ls)
    options.target(ls)
    ls.add_argument("--json", action="store_true", help="one JSON object per line with the config fields")
    ls.add_argument(
        "--stats",
        action="store_true",
        help="counts per rank, expected TOSA op, scheme, context, data set, dynamic dims",
    )
    ls.add_argument(
        "--classes",
        action="store_true",
        help="the structural classes the cases cover "
        "(harness/cases/classes.py), with counts, and the values each fact takes",
    )
    ls.add_argument(
        "--html",
        metavar="FILE",
        help="with --classes: also write the crossing the cases cover as an "
        "HTML page of tables, per conv kind and position (harness/cases/crossed.py)",
    )

    run = sub.add_parser("run", help="run one case and print its outcome, metrics and TOSA ops")
    run.add_argument("descriptor", help="case descriptor, e.g. conv2d_ic8_oc16_i32x32_k3x3_s2_p1_qa8w8")
    run.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    options.target(run)
    run.add_argument("--json", action="store_true", help="print the result as one JSON line")
    run.add_argument("--keep", metavar="DIR", help="save inputs, outputs and flatbuffer here if it fails")
    run.add_argument("--canary", default="", metavar="NAME", help="inject this fault into the backend (see `canaries`)")
    run.add_argument(
        "--captured", default="", metavar="FILE", help="a `dscaptured` case's tensors (written by `network`)"
    )
    options.executorch(run)

    sub.add_parser("canaries", help="list the canary faults that prove the harness can fail")
    return {"list": cmd_list, "run": cmd_run, "canaries": cmd_canaries}
