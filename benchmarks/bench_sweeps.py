"""Sweep wall time with -j 2, packed and alone, and the harness's own share of a case.

Runs `python -m harness sweep` on a tier twice, with packing (the default
pack size) and with every case alone (`--pack 1`), each from a fresh process,
and compares the two results files case by case: outcome, reason, rule,
metrics, TOSA operators and output digest must be equal. Reports each run's
wall time and, from the packed run's per-case timings, the harness's own
share of a case: building the model and data, judging, and the unaccounted
rest of `total` (the stages proper are quantize, lower, run); writing a
result to the results file and the run history is timed by writing the
run's results again.

    python benchmarks/bench_sweeps.py [--tier smoke] [-j 2] [--filter REGEX | --cases FILE]
        [--alone-results FILE] [--json out.json]

`--cases FILE` keeps the tier's cases listed in FILE (one descriptor a line): a tier as it stood at an
earlier date (benchmarks/tiers/) is measured on exactly its cases after new ones joined it.

`--alone-results` / `--packed-results` (with their `--*-wall-s`) take an
earlier run's results file instead of running it again (the nightly alone
takes most of an hour on two cores).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAME = ("outcome", "reason", "rule", "metrics", "tosa_ops", "conv_ops", "output_sha256")
STAGES = ("quantize", "lower", "run")


def _sweep(tier: str, jobs: int, pack: int | None, results: Path, filter_: str | None = None) -> float:
    cmd = [
        sys.executable,
        "-m",
        "harness",
        "sweep",
        "--tier",
        tier,
        "-j",
        str(jobs),
        "--no-progress",
        "--no-history",
        "--results",
        str(results),
    ] + ([] if pack is None else ["--pack", str(pack)])
    cmd += [] if filter_ is None else ["--filter", filter_]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=False, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _read(path: Path) -> dict[str, dict]:
    return {r["descriptor"]: r for r in map(json.loads, path.read_text().splitlines())}


def cases_regex(descriptors: list[str]) -> str:
    """A regex matching exactly `descriptors`, as a trie over their `_` fields: a command-line argument
    holds at most 128 KiB, a plain alternation of the nightly's 2,708 descriptors 236 KiB (this: 87 KiB)."""
    trie: dict = {}
    for d in descriptors:
        node = trie
        for field in d.split("_"):
            node = node.setdefault(field, {})
        node[""] = {}

    def pattern(node: dict) -> str:  # the fields after a node's own, "_" first
        alternatives = [re.escape(k) + tail(v) for k, v in node.items() if k]
        return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"

    def tail(node: dict) -> str:
        if set(node) == {""}:
            return ""
        return "(?:_" + pattern(node) + ")?" if "" in node else "_" + pattern(node)

    return "^" + pattern(trie) + "$"


_TRACEBACK_PLACE = re.compile(r'File "[^"]*", line \d+,')


def _comparable(result: dict, key: str):
    """A result's field as compared: a reason's traceback places (checkout path, line) vary with the checkout."""
    value = result.get(key)
    return _TRACEBACK_PLACE.sub('File "...",', value) if key == "reason" and isinstance(value, str) else value


def _own_share(results: dict[str, dict]) -> list[float]:
    """Per case: what the harness itself spends, as a share of the case's total."""
    shares = []
    for r in results.values():
        t = r["timings_s"]
        if t.get("total"):
            shares.append(1 - sum(t.get(k, 0.0) for k in STAGES) / t["total"])
    return shares


def _writing_s(results_path: Path) -> float:
    """Seconds per case to write a result to a results file and a fresh run history."""
    from harness.history.db import History, RunInfo
    from harness.results.store import ResultWriter, read_results

    results = read_results(results_path)
    with tempfile.TemporaryDirectory() as tmp:
        history = History(Path(tmp) / "h.sqlite")
        history.ensure_run(RunInfo("bench", "bench", 0, "tosa", expected=len(results)))
        start = time.perf_counter()
        with ResultWriter(Path(tmp) / "r.jsonl") as writer:
            for r in results:
                writer.write(r)
                history.record(r)
        elapsed = time.perf_counter() - start
        history.close()
    return elapsed / max(1, len(results))


def table(paths: list[str]) -> str:
    """The tiers' wall times packed and alone, from the JSON files of earlier runs (one row each)."""
    rows = [
        "| tier, `sweep -j 2` | cases | packed | alone | cases packed | identical case by case |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for path in paths:
        d = json.loads(Path(path).read_text())
        how = (
            f"`--filter '{d['filter']}'`"
            if d.get("filter")
            else (f"`--cases {d['cases_file']}`" if d.get("cases_file") else "")
        )
        alone = f"{d['alone_wall_s']:,.1f} s" + (" (an earlier run)" if d.get("from_earlier_runs") else "")
        rows.append(
            f"| {d['tier']} {how} | {d['cases']:,} | {d['packed_wall_s']:,.1f} s | {alone} | "
            f"{d['cases_packed']:,} | {d['identical_cases']:,} of {d['cases']:,} |"
        )
    return "\n".join(rows)


def tier_parser(doc: str) -> argparse.ArgumentParser:
    """The options every tier benchmark takes: which tier, how many workers, which descriptors."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--tier", default="smoke")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--filter", help="only descriptors matching this regex")
    return parser


def main() -> int:
    parser = tier_parser(__doc__)
    parser.add_argument("--cases", type=Path, help="only the descriptors listed in this file (a tier as it stood)")
    parser.add_argument("--alone-results", type=Path, help="an earlier --pack 1 run's results, instead of a new run")
    parser.add_argument("--alone-wall-s", type=float, help="that run's wall time (its summary.md says it)")
    parser.add_argument("--packed-results", type=Path, help="an earlier packed run's results, instead of a new run")
    parser.add_argument("--packed-wall-s", type=float, help="that run's wall time")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    if args.cases is not None:
        args.filter = cases_regex(args.cases.read_text().split())
    with tempfile.TemporaryDirectory() as tmp:
        packed_path, packed_s = args.packed_results, args.packed_wall_s
        if packed_path is None:
            packed_path = Path(tmp) / "packed.jsonl"
            packed_s = _sweep(args.tier, args.jobs, None, packed_path, args.filter)
        alone_path, alone_s = args.alone_results, args.alone_wall_s
        if alone_path is None:
            alone_path = Path(tmp) / "alone.jsonl"
            alone_s = _sweep(args.tier, args.jobs, 1, alone_path, args.filter)
        packed, alone = _read(packed_path), _read(alone_path)
        writing = _writing_s(packed_path)
    differ = sorted(
        d
        for d in alone
        if d not in packed or any(_comparable(packed[d], k) != _comparable(alone[d], k) for k in SAME if k in alone[d])
    )
    shares = _own_share(packed)
    totals = [r["timings_s"].get("total", 0.0) for r in packed.values()]
    figures = {
        "tier": args.tier,
        "jobs": args.jobs,
        "cases": len(alone),
        **({"cases_file": str(args.cases)} if args.cases else {"filter": args.filter}),
        "packed_wall_s": None if packed_s is None else round(packed_s, 1),
        "alone_wall_s": None if alone_s is None else round(alone_s, 1),
        "from_earlier_runs": bool(args.packed_results or args.alone_results),
        "cases_packed": sum(1 for r in packed.values() if r.get("packed")),
        "identical_cases": len(alone) - len(differ),
        "differing": differ[:20],
        "outcomes": {
            o: sum(1 for r in packed.values() if r["outcome"] == o)
            for o in sorted({r["outcome"] for r in packed.values()})
        },
        "harness_share_median": round(statistics.median(shares), 4),
        "harness_share_mean": round(statistics.mean(shares), 4),
        "writing_s_per_case": round(writing, 5),
        "writing_share_of_mean_case": round(writing / statistics.mean(totals), 4),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
