"""Shrinking cost and reach: every canary's first catching smoke case, shrunk.

For each canary the smoke cases are tried in the canary test's order (those
reaching the faulty branch first) until one fails; that case is shrunk with
the canary injected, budget 60 runs. Reported per canary: runs, seconds, the
start and minimal descriptors and their sizes (elements of input, weight and
output), and, given `--sweeps DIR` holding a smoke sweep per canary
(`DIR/<canary>.jsonl`, from `python -m harness sweep --canary NAME`), the
smallest failing smoke case: the bound the issue sets for the minimal case.

    python benchmarks/bench_shrink.py [--sweeps DIR] [--json benchmarks/results/shrink.json]
    python benchmarks/bench_shrink.py --table benchmarks/results/shrink.json   # its table, as docs/performance.md
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from options import printed_table, result_parser  # noqa: E402 - beside this script


def first_catching(name: str, cases) -> tuple:
    from harness.faults.canaries import CANARIES
    from harness.run.execute import run_case

    canary = CANARIES[name]
    for config in [c for c in cases if canary.relevant(c)] + [c for c in cases if not canary.relevant(c)]:
        if not run_case(config, 0, "tosa", canary=name).green:
            return config
    raise SystemExit(f"canary {name} is caught by no smoke case")


def smallest_failing(path: Path):
    from harness.bisect.shrink import size
    from harness.config import parse_descriptor
    from harness.results.case_result import CaseResult

    red = [CaseResult.from_dict(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    red = [parse_descriptor(r.descriptor) for r in red if not r.green]
    return min(red, key=size) if red else None


def table(path: str) -> str:
    """The markdown table from a JSON this script wrote."""
    data = json.loads(Path(path).read_text())
    lines = [
        "| canary | runs | s | start size | minimal size | smallest failing smoke | minimal case |",
        "|---|--:|--:|--:|--:|--:|---|",
    ]
    for r in data["canaries"]:
        lines.append(
            f"| {r['canary']} | {r['runs']} | {r['seconds']} | {r['start_size']} | {r['minimal_size']} | "
            f"{r.get('smallest_smoke_size', '-')} | `{r['minimal']}` |"
        )
    lines.append(f"| all {len(data['canaries'])} | {data['total_runs']} | {data['total_seconds']} | | | | |")
    return "\n".join(lines)


def main() -> int:
    parser = result_parser(__doc__, "benchmarks/results/shrink.json")
    parser.add_argument("--sweeps", help="directory of per-canary smoke sweep results (<canary>.jsonl)")
    parser.add_argument("--max-runs", type=int, default=60)
    args = parser.parse_args()
    if printed_table(args, table):
        return 0

    from harness.bisect.shrink import shrink, size
    from harness.cases.tiers import cases_of
    from harness.faults.canaries import CANARIES
    from harness.run.execute import run_case

    cases = cases_of("smoke", target="tosa")
    rows = []
    for name in CANARIES:
        start = first_catching(name, cases)
        t = time.perf_counter()
        s = shrink(start, lambda c, name=name: run_case(c, 0, "tosa", canary=name), max_runs=args.max_runs)
        row = {
            "canary": name,
            "start": start.descriptor,
            "start_size": size(start),
            "minimal": s.minimal,
            "minimal_size": s.minimal_size,
            "runs": s.runs,
            "seconds": round(time.perf_counter() - t, 1),
            "signature": str(s.signature),
            "exhausted": s.exhausted,
        }
        rows.append(row)
        print(
            f"{name:24s} {row['runs']:3d} runs {row['seconds']:6.1f} s  {row['start_size']:6d} -> "
            f"{row['minimal_size']:5d}  {row['minimal']}",
            flush=True,
        )
    for row in rows if args.sweeps else []:  # read last: the sweeps may still be finishing while the shrinks run
        path = Path(args.sweeps) / f"{row['canary']}.jsonl"
        small = smallest_failing(path) if path.exists() else None
        if small is not None:
            row.update(
                smallest_smoke=small.descriptor,
                smallest_smoke_size=size(small),
                within_bound=row["minimal_size"] <= size(small),
            )
    out = {
        "max_runs": args.max_runs,
        "canaries": rows,
        "total_runs": sum(r["runs"] for r in rows),
        "total_seconds": round(sum(r["seconds"] for r in rows), 1),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
