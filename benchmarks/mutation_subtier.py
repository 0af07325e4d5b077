"""A mutation report on a smaller tier, derived from one on a larger tier that contains it, and its line trace.

Used for "before and after": the smoke tier before a change's new cases is a subset of the tier after it, and
the same case with the same mutant gives the same result (the harness's determinism), so most verdicts carry:

* killed by a case the smaller tier has: killed; killed by a case it lacks: undecided (run it, `--mutant` and
  `--cases`, and merge with `--merge`);
* unreached: unreached; invalid: invalid;
* survived, masked or equivalent: no case of the smaller tier reaches it: unreached; otherwise every reaching case
  was green under the mutant and, for an equivalent, bit-identical, so it keeps its status (a masked one stays
  masked: its cases here ended unjudged with the mutant too), except that a survivor or an equivalent is masked
  when every reaching case it keeps ended unjudged (a known issue or a documented rejection) in the unmutated
  run: its cases are taken to end as they do without the mutant (an assumption; the `derived` field says where
  it applied).

    python benchmarks/mutation_subtier.py AFTER_DIR CASES_FILE --json OUT [--merge RUN_DIR]

AFTER_DIR holds `mutation.json` and `trace-<tier>.json`/`.results.jsonl` of the larger run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

UNJUDGED = ("known_issue", "expected_rejection")


def derive(report: dict, trace: dict, outcomes: dict[str, str], cases: set[str]) -> tuple[list[dict], list[str]]:
    """(rows of the smaller tier, names of the mutants that must run on it)."""
    from harness.faults.catalog import mutants_of

    spans = {
        f"mutant:{t}:{m.index}": (t, set(range(m.lines[0], m.lines[1] + 1)))
        for t in report["modules"]
        for m in mutants_of(t)
    }
    kept = {d for d in cases if d in outcomes} - set(report["not_green"])  # a case red without a mutant judges none
    rows, undecided = [], []
    for row in report["mutants"]:
        row = dict(row, derived="")
        status = row["status"]
        if status == "killed" and row["killed_by"] not in cases:
            undecided.append(row["name"])
            continue
        if status in ("survived", "masked", "equivalent"):
            module, span = spans[row["name"]]
            reach = [d for d in kept if span & set(trace.get(d, {}).get(module, []))]
            if not reach:
                row.update(status="unreached", derived="no case of this tier reaches it")
            elif status != "masked" and all(outcomes[d] in UNJUDGED for d in reach):
                row.update(status="masked", derived="its cases here all end unjudged without the mutant")
            # a masked mutant stays masked: every case of the larger tier, these included, ended unjudged with it
        rows.append(row)
    return rows, undecided


def scores(rows: list[dict]) -> dict:
    def score(c: Counter) -> float | None:
        n = c["killed"] + c["survived"] + c["masked"]
        return round(c["killed"] / n, 4) if n else None

    by_module: dict[str, Counter] = {}
    by_operator: dict[str, Counter] = {}
    for r in rows:
        by_module.setdefault(r["name"].split(":")[1], Counter())[r["status"]] += 1
        by_operator.setdefault(r["operator"], Counter())[r["status"]] += 1
    total = sum(by_module.values(), Counter())
    return {
        "all": {"counts": dict(total), "score": score(total)},
        "modules": {k: {"counts": dict(c), "score": score(c)} for k, c in by_module.items()},
        "operators": {k: {"counts": dict(c), "score": score(c)} for k, c in sorted(by_operator.items())},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("after", type=Path)
    ap.add_argument("cases", type=Path)
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--merge", type=Path, help="a run of the undecided mutants on the smaller tier")
    args = ap.parse_args()
    report = json.loads((args.after / "mutation.json").read_text())
    trace_file = args.after / f"trace-{report['tier']}.json"
    trace = json.loads(trace_file.read_text())["trace"]
    outcomes = {
        json.loads(line)["descriptor"]: json.loads(line)["outcome"]
        for line in trace_file.with_suffix(".results.jsonl").read_text().splitlines()
    }
    cases = set(args.cases.read_text().split())
    rows, undecided = derive(report, trace, outcomes, cases)
    if args.merge:
        ran = {r["name"]: r for r in json.loads((args.merge / "mutation.json").read_text())["mutants"]}
        missing = [n for n in undecided if n not in ran]
        if missing:
            sys.exit(f"--merge {args.merge} lacks {len(missing)} undecided mutants, e.g. {missing[0]}")
        rows += [dict(ran[n], derived="") for n in undecided]
        undecided = []
    out = {"cases": len(cases), "from": str(args.after), "undecided": undecided, **scores(rows), "mutants": rows}
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{len(rows)} mutants derived, {len(undecided)} to run on the smaller tier; score {out['all']['score']}")
    if undecided:
        print("run: python -m harness mutate --cases", args.cases, " ".join(f"--mutant {n}" for n in undecided))


if __name__ == "__main__":
    main()
