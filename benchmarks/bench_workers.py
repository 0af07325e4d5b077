"""Worker cost: start-up with the fork server and with spawn, and resident memory over a long run.

One worker runs the first `--cases` cases of the nightly tier (cycled if the
tier is shorter) through `harness.schedule.parallel.run_parallel` with the sweeps'
recycle limit (harness/policy/limits.py), and the resident memory after every
case is kept: its maximum is what a sweep costs a worker, and the slope between
recycles is how fast a worker grows (the reason recycling exists). The start-up
of three more workers is timed for each start method. Written to JSON, which
docs/performance.md renders.

    python benchmarks/bench_workers.py [--cases 2000] [--json benchmarks/results/workers.json]
    python benchmarks/bench_workers.py --table benchmarks/results/workers.json
"""

from __future__ import annotations

import json
import os
import sys
import time
from itertools import cycle, islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from options import printed_table, result_parser, write_result  # noqa: E402 - beside this script

MIB = 1 << 20


def _startup(method: str, workers: int = 3) -> list[float]:
    from harness.cases.tiers import cases_of
    from harness.run.settings import RunSettings
    from harness.schedule.parallel import WorkerStats, run_parallel
    from harness.schedule.plan import Schedule

    os.environ["HARNESS_START_METHOD"] = method
    stats = WorkerStats()
    one = cases_of("smoke")[:1]
    for _ in range(workers):  # one worker each time: its start-up alone
        run_parallel(one, RunSettings(), Schedule(1, recycle_rss=None), lambda r: None, stats=stats)
    return stats.startup_s


def _span(seconds: list[float]) -> str:
    lo, hi = f"{min(seconds):.2f}", f"{max(seconds):.2f}"
    return f"{lo} s" if lo == hi else f"{lo}-{hi} s"


def table(path: str) -> str:
    d = json.loads(Path(path).read_text())
    rss = d["rss_mib"]
    return "\n".join(
        [
            "| measure | value |",
            "|---|--:|",
            f"| worker start-up, forked from the fork server | {_span(d['startup_s']['forkserver'][1:])} |",
            f"| the first worker, with the fork server's one-time preload | {d['startup_s']['forkserver'][0]:.2f} s |",
            f"| worker start-up, spawn | {_span(d['startup_s']['spawn'])} |",
            f"| resident memory after case 1 / 100 / 500 / {d['cases']} | {rss['1']} / {rss['100']} / {rss['500']} / "
            f"{rss[str(d['cases'])]} MiB |",
            f"| largest resident memory over {d['cases']} cases (budget 1,536) | {d['max_rss_mib']} MiB |",
            f"| growth of a worker between recycles | {d['growth_mib_per_1000_cases']} MiB per 1,000 cases |",
            f"| workers recycled at {d['recycle_mib']} MiB | {d['recycled']} |",
        ]
    )


def main() -> int:
    parser = result_parser(__doc__, "benchmarks/results/workers.json")
    parser.add_argument("--cases", type=int, default=2000)
    args = parser.parse_args()
    if printed_table(args, table):
        return 0

    from harness.cases.tiers import cases_of
    from harness.policy.limits import WORKER_RECYCLE_RSS
    from harness.run.settings import RunSettings
    from harness.schedule.parallel import WorkerStats, run_parallel
    from harness.schedule.plan import Schedule

    startup = {m: _startup(m) for m in ("forkserver", "spawn")}
    os.environ["HARNESS_START_METHOD"] = "forkserver"
    configs = list(islice(cycle(cases_of("nightly")), args.cases))
    stats = WorkerStats()
    start = time.perf_counter()
    run_parallel(configs, RunSettings(), Schedule(1, recycle_rss=WORKER_RECYCLE_RSS), lambda r: None, stats=stats)
    seconds = time.perf_counter() - start
    curve = [round(b / MIB) for b in stats.rss_after_case]
    marks = {str(n): curve[n - 1] for n in (1, 100, 500, 1000, args.cases) if n <= len(curve)}
    # the slope within each worker's life (a drop is a recycle), from its 50th case on (caches warm up first)
    lives, life = [], [curve[0]]
    for a, b in zip(curve, curve[1:]):
        if b < a - 100:
            lives.append(life)
            life = []
        life.append(b)
    lives.append(life)
    slopes = [(x[-1] - x[50]) / (len(x) - 51) for x in lives if len(x) > 100]
    growth = round(1000 * sum(slopes) / len(slopes), 1) if slopes else None
    out = {
        "cases": len(curve),
        "seconds": round(seconds, 1),
        "startup_s": startup,
        "rss_mib": marks,
        "max_rss_mib": max(curve),
        "recycled": stats.recycled,
        "recycle_mib": WORKER_RECYCLE_RSS // MIB,
        "rss_curve_mib_every_50": curve[::50],
        "growth_mib_per_1000_cases": growth,
    }
    write_result(args.json, out, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
