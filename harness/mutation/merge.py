"""One mutation report from several runs of the same mutants on parts of one tier.

A campaign on a large tier runs in pieces: hard mutants re-run on their own (`--mutant`), a tier's new cases run
for the mutants no old case killed (`--filter`/`--cases`), a stopped run's rest on another day. The same case with
the same mutant gives the same result (the harness's determinism), so the pieces' verdicts combine case set by case
set, mutant by mutant:

* invalid anywhere: invalid (the mutant cannot be loaded; no case says anything);
* killed by some piece's case: killed, by that case (the first piece that killed it names it);
* otherwise every case each piece ran was green: the cases run, judged and with changed output bits add up, and
  the verdict is that of the union: unreached when no piece reached it, masked when no piece judged a case, else
  survived; then `mark_equivalents` checks today's listings again (a listed survivor with no changed bit in any
  piece is equivalent, with the cases of all pieces);
* a mutant a piece lists as undecided and no piece decided stays undecided.

The pieces must be of the same tier, modules and ExecuTorch (their `versions` less the harness's own commit,
which each piece keeps in `pieces`); the case sets should not overlap (a case in two pieces is counted twice).
A merged report is a piece like any other (a campaign grows one piece at a time): its own `pieces` are carried on.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from harness.config import ConfigError
from harness.mutation.report import MutantResult, MutationReport
from harness.mutation.run import mark_equivalents

HARNESS_KEYS = ("harness", "harness-commit")  # what may differ between pieces: not what a verdict depends on
PROVENANCE_KEYS = (*HARNESS_KEYS, "pieces")  # a merged report's list of the runs it was made of


def _versions(report: dict) -> dict:
    return {k: v for k, v in report["versions"].items() if k not in PROVENANCE_KEYS}


def _provenance(path: Path, data: dict) -> list[dict]:
    """The runs a piece stands for: itself, or the pieces it was merged from."""
    return data["versions"].get("pieces") or [
        {
            "report": str(path),
            "harness-commit": data["versions"].get("harness-commit", ""),
            "wall_s": data.get("wall_s", 0.0),
            "mutants": len(data["mutants"]),
        }
    ]


def load(path: Path) -> dict:
    """A mutation.json, or the journal of a run that was stopped (`mutation.journal.jsonl`: its verdicts, and the
    mutants it had begun as undecided); ConfigError (one line) when it is neither."""
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return _journal(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"invalid mutation report {path}: {type(e).__name__}") from None
    if not isinstance(data, dict) or not {"tier", "modules", "versions", "mutants"} <= data.keys():
        raise ConfigError(f"invalid mutation report {path}: it lacks tier, modules, versions or mutants")
    return data


def _journal(path: Path) -> dict:
    from harness.mutation.journal import read_keyed

    try:
        key, rows = read_keyed(path)
    except (OSError, ValueError) as e:
        raise ConfigError(f"invalid mutation journal {path}: {e}") from None
    if not key or not {"tier", "versions"} <= key.keys():
        raise ConfigError(f"invalid mutation journal {path}: its first line is not a journal's key")
    verdicts = {row["name"]: row for row in rows if "name" in row}  # the last verdict of a mutant wins
    begun = dict.fromkeys(row["case"]["canary"] for row in rows if "case" in row)
    return {
        "tier": key["tier"],
        "modules": list(dict.fromkeys(n.split(":")[1] for n in [*verdicts, *begun])),
        "versions": key["versions"],
        "mutants": list(verdicts.values()),
        "undecided": [n for n in begun if n not in verdicts],
    }


def _row(row: dict) -> MutantResult:
    known = {f.name for f in fields(MutantResult)}
    return MutantResult(**{k: v for k, v in row.items() if k in known})


def combine(rows: list[MutantResult]) -> MutantResult:
    """One mutant's verdict over the union of its pieces' cases (the rules in the module's docstring)."""
    first = rows[0]
    for status in ("invalid", "killed"):
        hit = next((r for r in rows if r.status == status), None)
        if hit:
            return MutantResult(**{**vars(hit), "cases_run": sum(r.cases_run for r in rows)})
    out = MutantResult(**vars(first))
    out.cases_run = sum(r.cases_run for r in rows)
    out.judged = sum(r.judged for r in rows)
    out.outputs_changed = sum(r.outputs_changed for r in rows)
    out.changed_case = next((r.changed_case for r in rows if r.changed_case), "")
    out.masked_by = ", ".join(dict.fromkeys(b for r in rows for b in r.masked_by.split(", ") if b))
    out.carried = False
    if all(r.status == "unreached" for r in rows):
        out.status, out.reason = "unreached", ""
    elif not out.judged:
        out.status, out.reason = "masked", f"every reaching case ended unjudged ({out.masked_by})"
    else:
        out.status, out.reason = "survived", ""
    return out


def merge(paths: list[Path]) -> tuple[MutationReport, list[str]]:
    """The report of the union of the pieces' case sets, and the mutants still undecided."""
    if len(paths) < 2:
        raise ConfigError(f"invalid --merge: {len(paths)} report given, merging needs at least 2")
    pieces = [load(p) for p in paths]
    base = pieces[0]
    for p, data in zip(paths[1:], pieces[1:]):
        if data["tier"] != base["tier"]:
            raise ConfigError(f"invalid --merge {p}: tier {data['tier']!r}, not {base['tier']!r} as {paths[0]}")
        theirs, ours = _versions(data), _versions(base)
        both = theirs.keys() & ours.keys()  # a version one piece's harness did not yet record is no conflict
        if {k: theirs[k] for k in both} != {k: ours[k] for k in both}:
            raise ConfigError(f"invalid --merge {p}: versions {theirs} differ from {paths[0]}'s")
    modules = list(dict.fromkeys(m for data in pieces for m in data["modules"]))
    by_name: dict[str, list[MutantResult]] = {}
    for data in pieces:
        for row in data["mutants"]:
            by_name.setdefault(row["name"], []).append(_row(row))
    undecided = [n for n in dict.fromkeys(n for data in pieces for n in data.get("undecided", [])) if n not in by_name]
    report = MutationReport(
        base["tier"],
        modules,
        _versions(base) | {"pieces": [run for p, d in zip(paths, pieces) for run in _provenance(p, d)]},
        wall_s=round(sum(d.get("wall_s", 0.0) for d in pieces), 1),
        fraction=base.get("fraction", 1.0),
        seed=base.get("seed", 0),
        not_green=sorted({c for d in pieces for c in d.get("not_green", [])}),
    )
    report.mutants = [combine(rows) for rows in by_name.values()]
    report.mutants.sort(key=lambda m: (modules.index(m.name.split(":")[1]), int(m.name.split(":")[2])))
    mark_equivalents(report.mutants)
    report.undecided = undecided
    return report, undecided
