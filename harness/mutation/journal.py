"""The verdicts of a mutation run as they are reached, so that an interrupted run loses none of them.

A full run of one pass on smoke takes hours on two cores: it must survive a stop. Each
verdict is appended to `mutation.journal.jsonl` in the output directory the moment it is
reached (one JSON line, flushed); the first line is the run's key (tier, its cases, the
versions). `mutate --resume` takes every verdict of a journal with the same key, matched
to today's mutants by what each changes, and runs only the rest: the same mutant on the
same cases with the same versions reaches the same verdict.

A mutant that no case kills runs every case that reaches it (hundreds on smoke, thousands
on nightly), so each of its case results is journaled too (`{"case": ...}`, the fields the
verdict reads): a resumed run replays them and runs only that mutant's other cases.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import asdict
from pathlib import Path

JOURNAL = "mutation.journal.jsonl"


def run_key(tier: str, descriptors: list[str], versions: dict) -> dict:
    """What a verdict depends on besides its mutant: the tier's cases and the installed versions."""
    digest = hashlib.sha256("\n".join(descriptors).encode()).hexdigest()[:16]
    return {
        "tier": tier,
        "cases": len(descriptors),
        "cases_sha256": digest,
        "versions": {k: v for k, v in versions.items() if k != "harness"},
    }


class JournalError(ValueError):
    """A journal that cannot be resumed from: written for another run, or not a journal."""


class Journal:
    """Appends each verdict to the journal at `path`. With `resume`, a journal there must have `key` (JournalError
    otherwise) and its verdicts are kept in `verdicts`; without, or when there is none, it starts afresh."""

    def __init__(self, path: Path, key: dict, resume: bool):
        self.path = path
        self.verdicts: list[dict] = []
        self.cases: dict[str, list[dict]] = {}  # mutant name -> the case results journaled for it
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists():
            self.verdicts, self.cases = _read(path, key)
        else:
            path.write_text(json.dumps({"key": key}) + "\n")

    def record(self, row) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(asdict(row)) + "\n")

    def record_case(self, r) -> None:
        """One case result of a mutant's run (a `CaseResult`), in the fields its verdict reads."""
        case = {k: getattr(r, k) for k in CASE_FIELDS}
        case["outcome"], case["reason"] = r.outcome.value, r.reason[:300]
        with open(self.path, "a") as f:
            f.write(json.dumps({"case": case}) + "\n")


CASE_FIELDS = ("descriptor", "seed", "outcome", "reason", "canary", "issue", "rejection", "stale", "output_sha256")


def read_keyed(path: Path) -> tuple[dict | None, list[dict]]:
    """A file of JSON lines whose first line is `{"key": ...}` (a journal, a trace in progress; gzipped when its name
    ends in .gz, as the pieces kept in benchmarks/results/mutation are): its key (None for an empty first line) and
    the rows after it, less a line cut short by a stop. ValueError when the first line is not a key."""
    text = gzip.decompress(path.read_bytes()).decode() if path.name.endswith(".gz") else path.read_text()
    first, *lines = text.splitlines() or [""]
    try:
        key = json.loads(first).get("key") if first.strip() else None
    except (json.JSONDecodeError, AttributeError):
        raise ValueError(f"the first line of {path} is not a key") from None
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # the line being written when the run was killed
    return key, rows


def _read(path: Path, key: dict) -> tuple[list[dict], dict[str, list[dict]]]:
    """The verdicts of a journal written with `key` (the last one wins for a mutant written twice), and the case
    results journaled for each mutant."""
    try:
        saved, lines = read_keyed(path)
    except ValueError:
        raise JournalError(f"cannot resume from {path}: its first line is not a journal's key") from None
    if saved != key:
        raise JournalError(
            f"cannot resume from {path}: it was written for another tier, case list or versions "
            f"({_short(saved)}; this run: {_short(key)})"
        )
    rows: dict[str, dict] = {}
    cases: dict[str, list[dict]] = {}
    for row in lines:
        if "case" in row:
            cases.setdefault(row["case"]["canary"], []).append(row["case"])
        else:
            rows[row["name"]] = row
    return list(rows.values()), cases


def _short(key: dict | None) -> str:
    if not key:
        return "no key"
    v = key.get("versions", {})
    return (
        f"tier {key.get('tier')}, {key.get('cases')} cases {key.get('cases_sha256')}, executorch {v.get('executorch')}"
    )
