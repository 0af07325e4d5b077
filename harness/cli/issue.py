"""`issue`: a bug report draft for ExecuTorch's tracker, from what the bisection verbs find."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.cli import options
from harness.cli.bisect import checked
from harness.cli.common import EXIT_FAIL, EXIT_OK
from harness.config import ConfigError, parse_descriptor


def cmd_issue(args) -> int:
    """A bug report draft: run the case, shrink it on its actual outcome, place it (registry entry, its commits, the
    culprit pass of a wrong number), write the standalone repro beside it. Long because it composes those five
    steps of other modules in order, a few lines each, and computes nothing itself."""
    config = checked(args)
    from harness.bisect.shrink import ShrinkError, shrink
    from harness.expectations.known_issues import registry
    from harness.report.issue_draft import IssueFacts, render
    from harness.results.case_result import Outcome
    from harness.run.execute import run_case

    def run(c):  # a registered finding is green in a sweep; here its own outcome is the failure to shrink
        r = run_case(c, args.seed, args.target)
        return dataclasses.replace(r, outcome=Outcome(r.actual_outcome))

    first = run(config)
    if first.actual_outcome == "pass":
        print(f"nothing to report: {config.descriptor} passes (seed {args.seed}, target {args.target})")
        return EXIT_FAIL
    facts = IssueFacts(first.to_dict())
    facts.result["issue"] = first.issue
    if args.max_runs:
        try:
            s = shrink(config, run, args.target, args.max_runs)
            facts.minimal = s.minimal
            facts.shrink_note = f"shrunk from {s.start_size} to {s.minimal_size} elements in {s.runs} runs" + (
                ", the budget ran out before it was 1-minimal" if s.exhausted else ""
            )
        except ShrinkError as e:
            facts.shrink_note = f"not shrunk: {e}"
    else:
        facts.shrink_note = "not shrunk (--max-runs 0)"
    entry = next((e for e in registry() if e.id == first.issue), None)
    if entry is not None:
        facts.entry = {
            "id": entry.id,
            "reason": " ".join(entry.reason.split()),
            "link": entry.link,
            "introduced_by": entry.holds.introduced_by,
            "fixed_by": entry.holds.fixed_by,
        }
    if first.actual_outcome == "mismatch":
        from harness.bisect.passes import bisect_passes

        facts.culprit_pass = bisect_passes(
            parse_descriptor(facts.minimal or config.descriptor), args.seed, args.target
        ).culprit
    out = Path(args.out)
    from harness.repro.script import write_repro

    try:
        paths = write_repro(
            parse_descriptor(facts.minimal or config.descriptor), out.with_suffix(".py"), args.seed, args.target
        )
        facts.script, facts.script_files = paths[0].read_text(), (paths[1].name, paths[2].name)
    except ConfigError as e:  # dynamic shapes and torch.cond have no standalone script
        facts.shrink_note += f"; no standalone script: {e}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(facts))
    print(
        f"wrote {out}"
        + (f" with {', '.join(facts.script_files)} and {out.with_suffix('.py').name} beside it" if facts.script else "")
    )
    return EXIT_OK


def add_parsers(sub) -> dict:
    """The `issue` verb on the command line's subparsers."""
    iss = sub.add_parser(
        "issue",
        help="write a bug report draft for ExecuTorch's tracker (Markdown): versions, the "
        "smallest config, the culprit pass and commit where known, the error, a standalone repro",
    )
    options.case(iss)
    iss.add_argument(
        "--out",
        default="issue.md",
        metavar="FILE",
        help="the draft (default: issue.md); the repro script and its data go beside it",
    )
    iss.add_argument(
        "--max-runs", type=int, default=40, metavar="N", help="runs shrinking may spend (default 40; 0: do not shrink)"
    )
    options.executorch(iss)
    return {"issue": cmd_issue}
