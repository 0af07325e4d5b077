"""`registry`: each known issue against stored results: what it covers, the worst case, what its signature misses."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

from harness.cli.common import EXIT_FAIL, EXIT_OK


def cmd_registry(args) -> int:
    from harness.expectations.measure import measure
    from harness.results.store import read_results

    results = [r for path in args.results for r in read_results(path)]
    if args.reclassify:
        return _reclassified(results)
    rows = measure(results, args.any_release)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": m.issue.id,
                        "cases": m.cases,
                        "outcomes": dict(m.outcomes),
                        "explained": m.explained,
                        "unexplained": m.unexplained,
                        "releases": sorted(m.releases),
                        "worst": {
                            "lsb": m.worst_lsb,
                            "err": m.worst_err,
                            "share": m.worst_share,
                            "sqnr_db": m.worst_sqnr,
                            "interior": m.interior,
                            "border": m.border,
                        },
                        "replay": {"fits": m.replay_fits, "farthest": m.replay_worst},
                        "proposed": m.proposed() if "mismatch" in m.issue.outcomes else {},
                    }
                    for m in rows
                ]
            )
        )
    else:
        for m in rows:
            if not m.cases:
                print(f"{m.issue.id}: no case of these results")
                continue
            outcomes = ", ".join(f"{n} {o}" for o, n in m.outcomes.most_common())
            print(
                f"{m.issue.id}: {m.cases} case(s) [{outcomes}] on {', '.join(sorted(m.releases)) or '-'}; "
                f"{m.explained} explained" + (f", {len(m.unexplained)} outside its signature" if m.unexplained else "")
            )
            if m.issue.mismatch is not None and m.issue.mismatch.replay:
                print(
                    f"    replay {m.issue.mismatch.replay}: {m.replay_fits} mismatch(es) within tolerance of it, "
                    f"the farthest {m.replay_worst} off it"
                )
            if "mismatch" in m.issue.outcomes and (m.worst_lsb is not None or m.worst_err is not None):
                print(
                    f"    worst: lsb {m.worst_lsb} err {m.worst_err} share {m.worst_share and round(m.worst_share, 4)} "
                    f"sqnr {m.worst_sqnr} dB; interior {m.interior}, border-only {m.border}; proposed {m.proposed()}"
                )
            for d in m.unexplained[:5]:
                print(f"    outside: {d}")
    return EXIT_FAIL if any(m.unexplained for m in rows) else EXIT_OK


def _reclassified(results) -> int:
    """The results judged again by today's registry and rejections: counts per ExecuTorch, and each case not green."""

    from harness.expectations.measure import reclassify

    by_backend: dict[str, Counter] = defaultdict(Counter)
    red = []
    for r in results:
        n = reclassify(r)
        label = n.versions.get("executorch-tree") or n.versions.get("executorch", "?")
        by_backend[label][n.outcome.value] += 1
        if not n.green:
            red.append((label, n))
    for label, counts in by_backend.items():
        print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    for label, n in red:
        print(f"  {label} {n.outcome.value}: {n.descriptor}: {(n.stale or n.reason)[:200]}")
    return EXIT_FAIL if red else EXIT_OK


def add_parsers(sub) -> dict:
    """This module's verbs on the command line's subparsers; verb -> its command."""
    rg = sub.add_parser(
        "registry",
        help="each known issue against stored results: the cases it covers, the worst "
        "of them, the bounds the policy gives, and what falls outside its signature (exit 1)",
    )
    rg.add_argument("results", nargs="+", help="results files (JSONL), e.g. one per release")
    rg.add_argument("--json", action="store_true", help="one JSON array")
    rg.add_argument(
        "--any-release",
        action="store_true",
        help="as if every entry held on every release: does an "
        "entry's signature also explain what another release does?",
    )
    rg.add_argument(
        "--reclassify",
        action="store_true",
        help="judge the stored results again by today's registry "
        "and rejections (each on the ExecuTorch it ran on) without running anything: what is not green",
    )
    return {"registry": cmd_registry}
