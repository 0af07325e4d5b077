"""The verdicts of a mutation run as they are reached, so that an interrupted run loses none of them.

A full run of one pass on smoke takes hours on two cores: it must survive a stop. Each
verdict is appended to `mutation.journal.jsonl` in the output directory the moment it is
reached (one JSON line, flushed); the first line is the run's key (tier, its cases, the
versions). `mutate --resume` takes every verdict of a journal with the same key, matched
to today's mutants by what each changes, and runs only the rest: the same mutant on the
same cases with the same versions reaches the same verdict.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path


JOURNAL = "mutation.journal.jsonl"


def run_key(tier: str, descriptors: list[str], versions: dict) -> dict:
    """What a verdict depends on besides its mutant: the tier's cases and the installed versions."""
    digest = hashlib.sha256("\n".join(descriptors).encode()).hexdigest()[:16]
    return {"tier": tier, "cases": len(descriptors), "cases_sha256": digest,
            "versions": {k: v for k, v in versions.items() if k != "harness"}}


class JournalError(ValueError):
    """A journal that cannot be resumed from: written for another run, or not a journal."""


class Journal:
    """Appends each verdict to the journal at `path`. With `resume`, a journal there must have `key` (JournalError
    otherwise) and its verdicts are kept in `verdicts`; without, or when there is none, it starts afresh."""

    def __init__(self, path: Path, key: dict, resume: bool):
        self.path = path
        self.verdicts: list[dict] = []
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists():
            self.verdicts = _read(path, key)
        else:
            path.write_text(json.dumps({"key": key}) + "\n")

    def record(self, row) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(asdict(row)) + "\n")


def _read(path: Path, key: dict) -> list[dict]:
    """The rows of a journal written with `key` (the last one wins for a mutant written twice)."""
    first, *lines = path.read_text().splitlines() or [""]
    try:
        saved = json.loads(first).get("key") if first.strip() else None
    except (json.JSONDecodeError, AttributeError):
        raise JournalError(f"cannot resume from {path}: its first line is not a journal's key") from None
    if saved != key:
        raise JournalError(f"cannot resume from {path}: it was written for another tier, case list or versions "
                          f"({_short(saved)}; this run: {_short(key)})")
    rows: dict[str, dict] = {}
    for line in lines:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line being written when the run was killed
        rows[row["name"]] = row
    return list(rows.values())


def _short(key: dict | None) -> str:
    if not key:
        return "no key"
    v = key.get("versions", {})
    return f"tier {key.get('tier')}, {key.get('cases')} cases {key.get('cases_sha256')}, executorch {v.get('executorch')}"
