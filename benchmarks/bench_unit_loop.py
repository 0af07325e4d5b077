"""The unit loop's wall time, as the README gives it: `pytest -m "not lowering and not processes"`, one process.

Each round is a fresh `python -m pytest` (as a developer runs it), timed from
outside; the JSON keeps every round, the tests counted, the collection time of
a `--collect-only` run, the ten slowest tests of the last round, and whether
Python could write bytecode (PYTHONDONTWRITEBYTECODE makes every run compile
the harness and rewrite the tests' asserts again: seconds of collection).

    python benchmarks/bench_unit_loop.py [--rounds 3] [--json benchmarks/results/unit_loop.json]
    python benchmarks/bench_unit_loop.py --table benchmarks/results/unit_loop.json   # its table
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from options import printed_table, result_parser, write_result  # beside this script

ROOT = Path(__file__).resolve().parents[1]
LOOP = ["-m", "pytest", "-m", "not lowering and not processes", "-q", "-p", "no:cacheprovider"]


def _pytest(*extra: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *LOOP, *extra], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = done.stdout.strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"the unit loop failed (exit {done.returncode}): {tail[0]}")
    return seconds, done.stdout


def measure(rounds: int) -> dict:
    collect_seconds, out = _pytest("--collect-only")
    collected = int(re.search(r"(\d+)/\d+ tests collected", out).group(1))
    walls, slowest = [], []
    for _ in range(rounds):
        seconds, out = _pytest("--durations=10")
        walls.append(round(seconds, 2))
        passed = int(re.search(r"(\d+) passed", out).group(1))
        slowest = [
            {"seconds": float(m.group(1)), "when": m.group(2), "test": m.group(3)}
            for m in re.finditer(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)", out, re.M)
        ]
    return {
        "command": "python " + " ".join(LOOP),
        "rounds": walls,
        "median_seconds": statistics.median(walls),
        "tests": passed,
        "collected": collected,
        "collect_only_seconds": round(collect_seconds, 2),
        "bytecode_written": not os.environ.get("PYTHONDONTWRITEBYTECODE"),
        "slowest": slowest,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }


def table(path: str) -> str:
    """The markdown table from a JSON this script wrote."""
    d = json.loads(Path(path).read_text())
    rounds = ", ".join(f"{s:.1f}" for s in d["rounds"])
    lines = [
        "| tests | median s (one process) | rounds s | collection s | bytecode written |",
        "|--:|--:|---|--:|---|",
        f"| {d['tests']} | {d['median_seconds']:.1f} | {rounds} | {d['collect_only_seconds']:.1f} | "
        f"{'yes' if d['bytecode_written'] else 'no (PYTHONDONTWRITEBYTECODE)'} |",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = result_parser(__doc__, "benchmarks/results/unit_loop.json")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if printed_table(args, table):
        return 0
    if args.rounds < 1:
        raise SystemExit(f"invalid --rounds {args.rounds}: must be >= 1")
    write_result(args.json, measure(args.rounds), table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
