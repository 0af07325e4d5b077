"""Command-line verbs that find where a wrong number comes from: `bisect passes`, `shrink`, `repro`,
`bisect versions`, `bisect commits`, `network`. (`issue`, which reports what they find: harness.cli.issue.)"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from harness.cli import options
from harness.cli.common import EXIT_FAIL, EXIT_OK
from harness.config import ConfigError, parse_descriptor
from harness.policy.targets import check_case, get_target


def checked(args):
    """The case of the arguments, refused in one line before any work if it or its canary is unknown."""
    config = parse_descriptor(args.descriptor)
    check_case(get_target(args.target), config)
    if getattr(args, "canary", ""):
        from harness.faults.canaries import get

        get(args.canary)
    if hasattr(args, "captured"):
        from harness.cli.cases import check_captured

        check_captured(config, args.captured)
    return config


def _error(stage) -> str:
    if stage is None or stage.error is None:
        return "-"
    if stage.unit == "LSB":
        return f"{stage.error:.3g} LSB (tolerance {stage.limit:.3g})"
    return f"{stage.error:.3g} x limit"


def _split(attribution: dict) -> str:
    """The serialized graph's error per stage (harness.judging.attribution), in a line."""
    parts = []
    for stage in ("quantization", "lowering", "executor"):
        a = attribution.get(stage)
        if a and a.get("worst") is not None:
            sqnr = f", SQNR {a['sqnr_db']} dB" if a.get("sqnr_db") is not None else ""
            parts.append(f"{stage} worst {a['worst']} {a['unit']}{sqnr}")
    added = f"; added by the {attribution['added_by']}" if attribution.get("added_by") else ""
    return "; ".join(parts) + added


def print_pass_bisection(b) -> None:
    print(f"case:    {b.descriptor} on {b.target}" + (f", canary {b.canary}" if b.canary else ""))
    print("stages:  the delegate's graph after each pass that changed it, run eagerly and judged")
    for s in [*b.stages, b.final]:
        verdict = "cannot run" if not s.runnable else "ok" if s.ok else "DEPARTS"
        index = f"{s.index:4d}" if s.index >= 0 else "   -"
        detail = f"  ({s.reason})" if s.reason and (not s.ok or not s.runnable) else ""
        print(f"  {index} {s.name:42s} {verdict:10s} {_error(s)}{detail}")
    if b.attribution:
        print(f"split:   {_split(b.attribution)}")
    if not b.culprit:
        print("culprit: none: every stage and the serialized graph are within the case's tolerance")
        return
    where = {
        "<start>": "before the Arm passes (export or quantization)",
        "quantization": "the quantizer, before any pass: its fake-quantized model is already off the fp64 reference",
        "serialization": "after the passes (TOSA serialization or the runner)",
    }.get(b.culprit, b.culprit)
    print(f"culprit: {where}")
    if b.culprit == "quantization":
        q = b.attribution.get("quantization") or {}
        print(f"error:   fake-quant against fp64: worst {q.get('worst')} LSB, SQNR {q.get('sqnr_db')} dB")
        return
    print(f"error:   {_error(b.before)} before, {_error(b.after)} after")
    c = b.change
    if c:
        print(
            f"change:  {len(c['added'])} node(s) added, {len(c['removed'])} removed, {len(c['changed'])} changed "
            f"within two edges of the conv; {c['elsewhere']} change(s) elsewhere"
        )
        for name, node in c["nodes"].items():
            sign = "+" if name in c["added"] else "-" if name in c["removed"] else "~"
            print(f"  {sign} {name}: {node[:160]}")
        if c["diff"]:
            print("diff:")
            for line in c["diff"]:
                print(f"  {line[:160]}")


def cmd_bisect_passes(args) -> int:
    config = checked(args)
    from harness.bisect.passes import bisect_passes

    b = bisect_passes(config, args.seed, args.target, args.canary, args.captured)
    if args.json:
        print(json.dumps(dataclasses.asdict(b)))
    else:
        print_pass_bisection(b)
    return EXIT_FAIL if b.culprit else EXIT_OK


def _print_trial(t) -> None:
    where = (
        "installed"
        if t.overlay_seconds == 0 and t.overlay_reused
        else f"overlay {'reused' if t.overlay_reused else 'installed'} in {t.overlay_seconds:.1f} s"
    )
    what = t.signature or t.outcome or "-"
    if t.signature:
        what += " (the bad end's failure)" if t.same_failure else " (another failure)" if t.verdict != "bad" else ""
    print(
        f"  {t.version:10s} {t.verdict:10s} {what:60s} {t.seconds:6.1f} s ({where})"
        + (f"\n             {t.detail}" if t.detail and t.verdict != "bad" else ""),
        flush=True,
    )


def cmd_bisect_versions(args) -> int:
    config = checked(args)
    from harness.bisect.versions import DEFAULT_CACHE, OverlayError, bisect_releases

    if not args.json:
        print(f"case:    {config.descriptor} on {args.target}; releases {args.good} (good) .. {args.bad} (bad)")
    try:
        b = bisect_releases(
            config.descriptor,
            args.good,
            args.bad,
            args.seed,
            args.target,
            args.cache or DEFAULT_CACHE,
            say=None if args.json else _print_trial,
        )
    except OverlayError as e:
        print(f"error: {e}")
        return EXIT_FAIL
    if args.json:
        print(json.dumps(dataclasses.asdict(b)))
    elif b.no_difference:
        print(f"no release differs: the case passes under {args.good} and under {args.bad}")
    elif b.error:
        print(f"error:   {b.error}")
    elif b.first:
        what = "first bad release" if b.direction == "regression" else "first good release (the fix)"
        print(f"{what}: {b.first} (bad means: {b.signature})")
    else:
        print(f"undecided: the change is in one of {', '.join(b.candidates)} (the others could not be tested)")
    return EXIT_OK if b.first or b.no_difference else EXIT_FAIL


def cmd_bisect_commits(args) -> int:
    config = checked(args)
    from harness.bisect.commits import bisect_commits

    say = None if args.json else (lambda line: print(f"  {line}", flush=True))
    b = bisect_commits(args.repo, args.good, args.bad, config.descriptor, args.seed, args.target, say)
    if args.json:
        print(json.dumps({**dataclasses.asdict(b), "third": [dataclasses.asdict(s) for s in b.third]}))
    elif b.error:
        print(f"error:   {b.error}")
    else:
        print(
            f"{b.direction}: {b.commits} commits from --good ({b.other}) to --bad ({b.asked}), "
            f"{len(b.steps)} tried in {b.seconds:.0f} s"
        )
        for s in b.third:
            print(f"  a third state at {s.commit[:12]}: {s.signature} (listed, not placed on either side)")
        if b.first:
            what = "first bad commit" if b.direction == "regression" else "first good commit (the fix)"
            print(f"{what}: {b.first} {b.subject}")
        else:
            print(
                f"undecided: the change is in one of {', '.join(c[:12] for c in b.candidates)} "
                "(the others could not be tested, or ended in a third state)"
            )
    return EXIT_OK if b.first else EXIT_FAIL


def cmd_bisect(args) -> int:
    return {"passes": cmd_bisect_passes, "versions": cmd_bisect_versions, "commits": cmd_bisect_commits}[args.how](args)


def cmd_shrink(args) -> int:
    config = checked(args)
    if args.max_runs < 1:  # before torch is imported: the one line is all the user sees
        raise ConfigError(f"invalid --max-runs={args.max_runs}: must be an integer >= 1")
    from harness.bisect.shrink import ShrinkError, shrink
    from harness.run.execute import run_case

    def run(c):  # the captured tensors belong to the start config only (shrink's first move leaves them)
        return run_case(
            c,
            args.seed,
            args.target,
            canary=args.canary,
            data_file=args.captured if c.dataset == config.dataset == "captured" else "",
        )

    say = None if args.json else (lambda line: print(line, flush=True))
    try:
        s = shrink(config, run, args.target, args.max_runs, say)
    except ShrinkError as e:
        print(f"nothing to shrink: {e}")
        return EXIT_OK
    if args.json:
        out = dataclasses.asdict(s)
        out["signature"] = str(s.signature)
        print(json.dumps(out))
        return EXIT_FAIL
    print(f"signature: {s.signature}")
    print(f"start:     {s.start} ({s.start_size} elements)")
    print(f"minimal:   {s.minimal} ({s.minimal_size} elements)")
    print(
        f"runs:      {s.runs}"
        + (
            f" (the budget of {args.max_runs} ran out: not yet 1-minimal)"
            if s.exhausted
            else ", 1-minimal: no single simplification keeps the failure"
        )
    )
    print(f"kept:      {', '.join(s.steps) or 'nothing'}")
    print(f"__REPRO: {s.repro}")
    return EXIT_FAIL


def cmd_repro(args) -> int:
    config = checked(args)
    from harness.repro.script import check_reproducible, write_repro

    check_reproducible(config)
    paths = write_repro(config, args.out, args.seed, args.target)
    print(f"wrote {paths[0]} with {paths[1].name} and {paths[2].name} beside it")
    print(f"run:  python {paths[0]}   (exit 0: within the limits; 1: not)")
    return EXIT_OK


def cmd_network(args) -> int:
    from harness.bisect.factory import check_spec, load_factory, parse_shape
    from harness.policy.schemes import SCHEME_NAMES

    check_spec(args.network)  # the cheap checks first, before torch and the model's own imports
    shape = parse_shape(args.input) if args.input else None
    if args.scheme not in SCHEME_NAMES:
        raise ConfigError(f"invalid --scheme={args.scheme}: must be one of {', '.join(SCHEME_NAMES)}")
    get_target(args.target)
    factory = load_factory(args.network)  # a spec that does not load leaves nothing behind
    from harness.bisect.network import run_network, whole_line
    from harness.results.store import ResultWriter

    out = args.out or f"reports/network-{args.network.split(':')[-1]}-{args.scheme}"
    say = None if args.json else (lambda line: print(line, flush=True))
    if say:
        print(f"network: {args.network} ({args.scheme} on {args.target}); results and captured data in {out}")

    Path(out).mkdir(parents=True, exist_ok=True)
    with ResultWriter(Path(out) / "results.jsonl") as writer:
        report = run_network(
            args.network,
            scheme=args.scheme,
            target=args.target,
            input_shape=shape,
            seed=args.seed,
            out_dir=out,
            samples=args.samples,
            say=say,
            results=writer,
            recalibrate=args.recalibrate_bn,
            factory=factory,
        )
    (Path(out) / "model.json").write_text(json.dumps(dataclasses.asdict(report), indent=1))
    if args.json:
        print(json.dumps(dataclasses.asdict(report)))
        return EXIT_FAIL if report.departing else EXIT_OK
    bad = report.departing
    print(
        f"{len(report.layers)} conv layers in {report.seconds} s: {len(report.layers) - len(bad)} as expected, "
        f"{len(bad)} departing"
    )
    for layer in bad:
        print(f"  {layer.name}: {layer.outcome}: {layer.reason[:200]}")
        print(f"    __REPRO: {layer.repro}")
        print(f"    next:    python -m harness bisect passes '{layer.descriptor}' --captured '{layer.data_file}'")
        print(f"             python -m harness shrink '{layer.descriptor}' --captured '{layer.data_file}'")
    if not report.whole.get("ok"):
        print(whole_line(report.whole))
    return EXIT_FAIL if bad else EXIT_OK


def add_parsers(sub) -> dict:
    """This module's verbs on the command line's subparsers; verb -> its command. Long because it declares the
    options of five verbs (bisect's three ways among them), one line each, and does nothing else."""
    bi = sub.add_parser("bisect", help="find what makes a case wrong: which pass, release or commit")
    how = bi.add_subparsers(dest="how", required=True, metavar="{passes,versions,commits}")
    bp = how.add_parser("passes", help="judge the delegate's graph after every pass; name the first that departs")
    options.case(bp)
    bp.add_argument(
        "--captured", default="", metavar="FILE", help="a `dscaptured` case's tensors (written by `network`)"
    )
    bp.add_argument("--json", action="store_true", help="print the bisection as one JSON object")
    options.executorch(bp)
    bv = how.add_parser("versions", help="the first ExecuTorch release where the case fails (or is fixed)")
    bv.add_argument("descriptor", help="case descriptor")
    bv.add_argument("--good", required=True, metavar="V", help="a release where the case passes")
    bv.add_argument("--bad", required=True, metavar="V", help="a release where it fails")
    bv.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    options.target(bv)
    bv.add_argument(
        "--cache",
        metavar="DIR",
        help="overlay cache (default: $HARNESS_CACHE/overlays or ~/.cache/conv-harness/overlays)",
    )
    bv.add_argument("--json", action="store_true", help="print the bisection as one JSON object")
    bc = how.add_parser(
        "commits",
        help="the ExecuTorch commit that made the case fail as it does at --bad, or "
        "that fixed it (when --good is the newer)",
    )
    bc.add_argument("descriptor", help="case descriptor")
    bc.add_argument(
        "--repo",
        required=True,
        metavar="PATH",
        help="an ExecuTorch git repository (a checkout, a bare, partial or blobless clone: nothing is checked out)",
    )
    bc.add_argument(
        "--good", required=True, metavar="REV", help="a commit in the other state (a pass, or any outcome but --bad's)"
    )
    bc.add_argument(
        "--bad", required=True, metavar="REV", help="the commit in the state asked about (its outcome and signature)"
    )
    bc.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    options.target(bc)
    bc.add_argument("--json", action="store_true", help="print the bisection as one JSON object")

    sh = sub.add_parser("shrink", help="reduce a failing case to the smallest config that fails the same way")
    options.case(sh)
    sh.add_argument(
        "--captured", default="", metavar="FILE", help="a `dscaptured` case's tensors (written by `network`)"
    )
    sh.add_argument(
        "--max-runs", type=int, default=60, metavar="N", help="case runs allowed, the first included (default: 60)"
    )
    sh.add_argument("--json", action="store_true", help="print the result as one JSON object, no progress")
    options.executorch(sh)

    rr = sub.add_parser("repro", help="write a standalone script (torch, executorch, numpy) that reproduces a case")
    rr.add_argument("descriptor", help="case descriptor (static, no cx cond)")
    rr.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    options.target(rr)
    rr.add_argument("--out", required=True, help="the script's path (.py); the model and data files go beside it")
    options.executorch(rr)

    md = sub.add_parser("network", help="lower a whole network, then run every conv layer of it as a case")
    md.add_argument("network", help="MODULE:FACTORY or FILE.py:FACTORY, e.g. harness.networks.resnet:resnet18")
    md.add_argument("--scheme", default="a8w8", help="scheme (default: a8w8)")
    md.add_argument("--input", help="input shape, e.g. 1x3x224x224 (default: the model's example_input_shape)")
    md.add_argument("--samples", type=int, default=4, help="calibration inputs, drawn with --seed (default: 4)")
    md.add_argument("--seed", type=int, default=0, help="seed of the weights' initialization and the inputs")
    md.add_argument(
        "--recalibrate-bn",
        action="store_true",
        help="recompute the batch norms' running statistics "
        "on the calibration inputs first (a randomly initialized model; ours ask for it themselves)",
    )
    options.target(md)
    md.add_argument("--out", help="results, report and captured data (default: reports/network-<factory>-<scheme>)")
    md.add_argument("--json", action="store_true", help="print the report as one JSON object, no progress")
    options.executorch(md)
    return {"bisect": cmd_bisect, "shrink": cmd_shrink, "repro": cmd_repro, "network": cmd_network}
