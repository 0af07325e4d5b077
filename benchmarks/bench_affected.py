"""What `sweep --affected-by` runs for a change, as a fraction of the tier: each mutant and canary as the change.

Each of the mutation tool's mutants of the three conv passes is taken as a change touching its node's line
(grown to its statement, as `--affected-by` grows a diff's lines); each canary as a change to the body of the
function it patches (a branch canary: the function that holds the branch). For each, the tier's cases whose
line trace reaches the change (the smoke tier, which `--affected-by` always adds, left out: on smoke itself it
is everything). Reported per module: the selection's size over the tier (median, 90th percentile, largest),
and, from a mutation report of the same tier, whether each killed mutant's killing case is selected (it must
be: code a case never runs cannot change its result); per canary, the selection and whether its first
catching smoke case reaches the change.

    python benchmarks/bench_affected.py [--tier smoke] [--mutation benchmarks/results/mutation/smoke_complete.json]
        [--json benchmarks/results/affected_smoke.json]   # the trace: $HARNESS_CACHE/traces/<tier>-tosa.json
    python benchmarks/bench_affected.py --table benchmarks/results/affected_smoke.json
"""

from __future__ import annotations

import ast
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from options import printed_table, result_parser, write_result  # noqa: E402 - beside this script

MODULES = ("rewrite_conv_pass", "size_adjust_input_pass", "decompose_grouped_conv_pass")
BRANCH = {"RewriteConvPass": "RewriteConvPass.call"}  # a branch canary's change: the function holding the branch


def _function_lines(text: str, qualname: str) -> set[int]:
    """The body lines of `Class.method`, or of a module function of that name, in `text` (empty when absent)."""
    lines = _named_lines(ast.parse(text).body, qualname.split("."))
    return lines or _named_lines(ast.parse(text).body, qualname.split(".")[-1:])


def _named_lines(nodes: list, parts: list[str]) -> set[int]:
    for i, name in enumerate(parts):
        found = next((n for n in nodes if getattr(n, "name", None) == name), None)
        if found is None:
            return set()
        if i == len(parts) - 1:
            return set(range(found.body[0].lineno, found.end_lineno + 1))
        nodes = found.body
    return set()


def _quantiles(fractions: list[float]) -> dict:
    ordered = sorted(fractions)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[max(0, int(round(0.9 * len(ordered))) - 1)],
        "max": ordered[-1],
    }


def measure(tier: str, mutation: Path | None, jobs: int) -> dict:
    from harness.cases.tiers import cases_of
    from harness.faults.canaries import CANARIES
    from harness.faults.catalog import mutant_name, mutants_of, source_file
    from harness.mutation import reach
    from harness.mutation.affected import statements
    from harness.results.case_result import versions
    from tests.canary_cases import FIRST_CATCHING_SMOKE_CASE

    configs = cases_of(tier)
    trace, _ = reach.trace(configs, jobs, reach.stored_at(tier, "tosa"), 1)
    n = len(configs)

    def chosen(module: str, lines: set[int], whole: bool) -> set[str]:
        return {d for d, by in trace.items() if (by.get(module) if whole else lines & by.get(module, set()))}

    report = {row["name"]: row for row in json.loads(mutation.read_text())["mutants"]} if mutation else {}
    modules = {}
    for module in MODULES:
        text = source_file(module).read_text()
        sizes, killed, held = [], 0, 0
        for m in mutants_of(module):
            grown, outside = statements({m.line}, text)
            picked = chosen(module, grown, outside)
            sizes.append(len(picked) / n)
            row = report.get(mutant_name(module, m.index))
            if row and row["status"] == "killed":
                killed += 1
                held += row["killed_by"] in picked
        modules[module] = {"mutants": len(sizes), "killed": killed, "killer_selected": held, **_quantiles(sizes)}
    canaries = {}
    for name, canary in CANARIES.items():
        where = canary.branch.split(" ")[0]
        qualname = where if "." in where else BRANCH.get(where, "")
        module = next((m for m in MODULES if _function_lines(source_file(m).read_text(), qualname)), "")
        if not module:
            canaries[name] = {"change": canary.branch, "selected": None}
            continue
        picked = chosen(module, _function_lines(source_file(module).read_text(), qualname), False)
        first = FIRST_CATCHING_SMOKE_CASE.get(name, "")
        canaries[name] = {
            "change": f"{module}: {qualname}",
            "selected": len(picked) / n,
            "first_catching": first,
            "first_catching_selected": first in picked,
        }
    return {
        "tier": tier,
        "cases": n,
        "versions": {k: v for k, v in versions().items() if k != "harness"},
        "modules": modules,
        "canaries": canaries,
    }


def table(path: str) -> str:
    data = json.loads(Path(path).read_text())
    rows = ["| module | mutants | cases selected: median / p90 / largest | killed mutants whose killer is selected |"]
    rows.append("| --- | ---: | --- | --- |")
    for module, m in data["modules"].items():
        rows.append(
            f"| {module} | {m['mutants']} | {m['median']:.1%} / {m['p90']:.1%} / {m['max']:.1%} of "
            f"{data['cases']} | {m['killer_selected']} of {m['killed']} |"
        )
    rows += ["", "| canary, as a change to | cases selected | its first catching smoke case selected |"]
    rows.append("| --- | ---: | --- |")
    for name, c in data["canaries"].items():
        if c["selected"] is None:
            rows.append(f"| {name}: {c['change']} | no traced function: every case | - |")
        else:
            rows.append(
                f"| {name}: {c['change']} | {c['selected']:.1%} | {'yes' if c['first_catching_selected'] else 'NO'} |"
            )
    return "\n".join(rows)


def main() -> None:
    p = result_parser(__doc__, "benchmarks/results/affected_smoke.json")
    p.add_argument("--tier", default="smoke")
    p.add_argument("--mutation", type=Path, default=ROOT / "benchmarks/results/mutation/smoke_complete.json")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = p.parse_args()
    if printed_table(args, table):
        return
    write_result(args.json, measure(args.tier, args.mutation, args.jobs), table)


if __name__ == "__main__":
    main()
