"""`python -m harness mutate`: the kill rate of a tier against mutants of the installed conv lowering."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.cli.common import EXIT_FAIL, EXIT_OK
from harness.cli.options import cluster, tier_option
from harness.config import ConfigError
from harness.policy.packing import PACK_SIZE


def add_parsers(sub) -> dict:
    """The `mutate` verb; verb -> its command. Long because it declares a campaign's options, each a statement,
    and does nothing else."""
    mu = sub.add_parser("mutate", help="mutation testing: how many mutants of the conv lowering a tier kills")
    what = mu.add_argument_group("what is mutated")
    what.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="NAME",
        help="a module of the lowering (repeatable; default: the three conv passes); see harness/policy/mutation.py",
    )
    what.add_argument("--function", metavar="REGEX", help="only the mutants of functions matching this regex")
    what.add_argument(
        "--mutant",
        action="append",
        default=[],
        metavar="NAME",
        help="only this mutant (repeatable), e.g. mutant:rewrite_conv_pass:93 as a report names it",
    )
    what.add_argument("--max", type=int, metavar="N", help="at most N mutants per module, in file order")
    what.add_argument(
        "--sample",
        type=float,
        default=1.0,
        metavar="FRACTION",
        help="a seeded uniform sample of this fraction of each module's mutants (default: all)",
    )
    what.add_argument("--sample-seed", type=int, default=0, metavar="N", help="the sample's seed (default: 0)")
    what.add_argument("--list", action="store_true", help="list the mutants (name, line, operator), run nothing")
    what.add_argument(
        "--merge",
        nargs="+",
        metavar="MUTATION_JSON",
        help="run nothing: one report from runs of the same tier on disjoint parts of its cases or "
        "mutants (mutation.json, or a stopped run's mutation.journal.jsonl; "
        "harness/mutation/merge.py), written to --out",
    )
    hunt = mu.add_argument_group("what hunts them")
    tier_option(hunt, "the tier that hunts the mutants (default: smoke)")
    hunt.add_argument("--filter", metavar="REGEX", help="only the tier's cases whose descriptor matches")
    hunt.add_argument(
        "--cases",
        metavar="FILE",
        help="only the tier's cases whose descriptors this file lists, one per line (e.g. `list` of "
        "an earlier commit's tier: its score on today's mutants)",
    )
    run = mu.add_argument_group("how it runs")
    run.add_argument("-j", "--jobs", type=int, default=2, help="worker processes (default: 2)")
    cluster(run)
    run.add_argument(
        "--pack", type=int, default=PACK_SIZE, metavar="N", help=f"cases per program (default: {PACK_SIZE})"
    )
    run.add_argument(
        "--trace-pack",
        type=int,
        default=1,
        metavar="N",
        help="trace N cases per program (default: 1, alone): the packed sweep's speed on a large "
        "tier, and a case then counts as reaching its pack's lines",
    )
    run.add_argument(
        "--carry",
        metavar="MUTATION_JSON",
        help="an earlier report on a tier this one contains: its kills by cases still in the tier "
        "stand without running again",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="take the verdicts an interrupted run left in --out's journal (same tier, cases and "
        "versions) and run only the other mutants",
    )
    run.add_argument("--out", default="reports/mutate", help="mutation.json, mutation.md and the trace go here")
    return {"mutate": cmd_mutate}


def cmd_mutate(args) -> int:
    """A mutation campaign from the command line. Long because it checks every option before any work and hands
    each on to `harness.mutation.run.mutate`, which takes them one by one."""
    from harness.cases.tiers import BY_NAME
    from harness.faults.catalog import mutant_name, mutants_of, parse_name
    from harness.mutation.run import check_modules
    from harness.schedule.packing import check_pack_size

    if args.merge:
        return _merge(args)
    modules = check_modules(args.module)
    if args.tier not in BY_NAME:
        raise ConfigError(f"unknown tier {args.tier!r}; known tiers: {', '.join(BY_NAME)}")
    check_pack_size(args.pack)
    check_pack_size(args.trace_pack)
    if args.max is not None and args.max < 1:
        raise ConfigError(f"invalid --max {args.max}: must be >= 1")
    if not 0 < args.sample <= 1:
        raise ConfigError(f"invalid --sample {args.sample}: must be a fraction in (0, 1]")
    cases = None
    if args.cases:
        if not Path(args.cases).is_file():
            raise ConfigError(f"invalid --cases {args.cases}: no such file")
        cases = {line.strip() for line in Path(args.cases).read_text().splitlines() if line.strip()}
        if not cases:
            raise ConfigError(f"invalid --cases {args.cases}: it lists no descriptor")
    if args.carry and not Path(args.carry).is_file():
        raise ConfigError(f"invalid --carry {args.carry}: no such file")
    for name in args.mutant:
        module, _ = parse_name(name)
        if module not in modules:
            raise ConfigError(f"invalid --mutant {name}: its module is not among --module {', '.join(modules)}")
    if args.jobs < 1:
        raise ConfigError(f"invalid -j {args.jobs}: must be >= 1")
    if args.cluster:
        from harness.schedule.cluster import check_cluster

        check_cluster(args.cluster)
    if args.list:
        for t in modules:
            for m in mutants_of(t)[: args.max]:
                print(
                    f"{mutant_name(t, m.index)}\t{m.function}\tline {m.line} col {m.column}\t{m.operator} "
                    f"{m.description}"
                )
        return EXIT_OK
    from harness.mutation.campaign import Campaign
    from harness.mutation.run import mutate

    def say(row) -> None:
        by = f" by {row.killed_by} ({row.outcome})" if row.killed_by else ""
        by += " (carried)" if row.carried else ""
        print(f"{row.name:40s} {row.status:9s} {row.cases_run:4d} cases{by}", flush=True)

    campaign = Campaign(
        tier=args.tier,
        modules=tuple(modules or ()),
        function=args.function,
        names=frozenset(args.mutant),
        limit=args.max,
        fraction=args.sample,
        seed=args.sample_seed,
        filter=args.filter,
        cases=None if cases is None else frozenset(cases),
        jobs=args.jobs,
        pack=args.pack,
        trace_pack=args.trace_pack,
        cluster=args.cluster,
        out=Path(args.out),
        carry=Path(args.carry) if args.carry else None,
        resume=args.resume,
    )
    report = mutate(campaign, on_mutant=say, on_progress=lambda p: print(p.line(), file=sys.stderr, flush=True))
    _scores(report)
    print(f"report: {Path(args.out) / 'mutation.md'}")
    return EXIT_OK if all(m.status in ("killed", "equivalent", "invalid") for m in report.mutants) else EXIT_FAIL


def _merge(args) -> int:
    from harness.mutation.merge import merge
    from harness.mutation.render import write

    report, undecided = merge([Path(p) for p in args.merge])
    write(report, Path(args.out))
    _scores(report)
    if undecided:
        print(f"{len(undecided)} mutants undecided: {' '.join(undecided[:10])}{' ...' if len(undecided) > 10 else ''}")
    print(f"report: {Path(args.out) / 'mutation.md'}")
    return (
        EXIT_OK
        if not undecided and all(m.status in ("killed", "equivalent", "invalid") for m in report.mutants)
        else EXIT_FAIL
    )


def _scores(report) -> None:
    for t in report.modules:
        score = report.score(t)
        print(f"{t}: {report.counts(t)} score {'n/a' if score is None else f'{score:.1%}'}")
