"""Smoke under `pytest -n N` against `sweep -j N`, back to back: wall times, and pytest's packed results
against its alone results (`--harness-pack 1`) case by case.

Each of the three runs starts from a fresh process: `python -m harness sweep` (packed, the default),
`pytest --pyargs harness.pytest_plugin.test_cases -n N` (packed, the plugin's default) and the same with
`--harness-pack 1` (every case alone, as the plugin ran before it packed). Outcome, reason, rule, metrics,
TOSA operators and output digest must be equal case by case between the two pytest runs, and the sweep's
must agree with them too.

    python benchmarks/bench_pytest.py [--tier smoke] [-j 2] [--filter REGEX] [--json out.json]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_sweeps import SAME, _comparable, _read, _sweep, tier_parser  # noqa: E402


def table(path: str) -> str:
    """The tier under pytest against `sweep`, from the JSON of an earlier run."""
    d = json.loads(Path(path).read_text())
    return "\n".join(
        [
            "| smoke, two workers | wall time | over `sweep -j 2` |",
            "|---|--:|--:|",
            f"| `sweep -j 2` ({d['cases']:,} cases) | {d['sweep_wall_s']:.1f} s | 1.00x |",
            f"| `pytest -n 2`, packed | {d['pytest_packed_wall_s']:.1f} s | {d['pytest_packed_over_sweep']:.2f}x |",
            f"| `pytest -n 2`, every case alone | {d['pytest_alone_wall_s']:.1f} s | "
            f"{d['pytest_alone_over_sweep']:.2f}x |",
            f"| identical case by case, packed and alone | {d['identical_packed_alone']:,} of {d['cases']:,} | |",
        ]
    )


def _pytest(tier: str, jobs: int, pack: int | None, results: Path, filter_: str | None) -> tuple[float, int]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "harness.pytest_plugin.test_cases",
        "-q",
        "-n",
        str(jobs),
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "--harness-tier",
        tier,
        "--harness-no-history",
        "--harness-results",
        str(results),
    ]
    cmd += [] if pack is None else ["--harness-pack", str(pack)]
    cmd += [] if filter_ is None else ["--harness-filter", filter_]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=results.parent, check=False, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, proc.returncode


def _differing(a: dict[str, dict], b: dict[str, dict]) -> list[str]:
    return sorted(
        d for d in a if d not in b or any(_comparable(a[d], k) != _comparable(b[d], k) for k in SAME if k in a[d])
    )


def main() -> int:
    parser = tier_parser(__doc__)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {k: Path(tmp) / k / "results.jsonl" for k in ("sweep", "pytest_packed", "pytest_alone")}
        for p in paths.values():
            p.parent.mkdir()
        sweep_s = _sweep(args.tier, args.jobs, None, paths["sweep"], args.filter)
        packed_s, packed_rc = _pytest(args.tier, args.jobs, None, paths["pytest_packed"], args.filter)
        alone_s, alone_rc = _pytest(args.tier, args.jobs, 1, paths["pytest_alone"], args.filter)
        sweep, packed, alone = (_read(paths[k]) for k in ("sweep", "pytest_packed", "pytest_alone"))
    differ = _differing(alone, packed)
    figures = {
        "tier": args.tier,
        "jobs": args.jobs,
        "filter": args.filter,
        "cases": len(alone),
        "sweep_wall_s": round(sweep_s, 1),
        "pytest_packed_wall_s": round(packed_s, 1),
        "pytest_alone_wall_s": round(alone_s, 1),
        "pytest_packed_over_sweep": round(packed_s / sweep_s, 2),
        "pytest_alone_over_sweep": round(alone_s / sweep_s, 2),
        "pytest_exit_codes": {"packed": packed_rc, "alone": alone_rc},
        "cases_packed": sum(1 for r in packed.values() if r.get("packed")),
        "identical_packed_alone": len(alone) - len(differ),
        "differing_packed_alone": differ[:20],
        "differing_sweep_pytest": _differing(sweep, packed)[:20],
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if not differ and not figures["differing_sweep_pytest"] else 1


if __name__ == "__main__":
    sys.exit(main())
