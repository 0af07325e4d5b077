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

from harness.config import ConfigError

JOURNAL = "mutation.journal.jsonl"


def run_key(tier: str, descriptors: list[str], versions: dict) -> dict:
    """What a verdict depends on besides its mutant: the tier's cases and the installed versions."""
    digest = hashlib.sha256("\n".join(descriptors).encode()).hexdigest()[:16]
    return {"tier": tier, "cases": len(descriptors), "cases_sha256": digest,
            "versions": {k: v for k, v in versions.items() if k != "harness"}}


class Journal:
    """Appends each verdict to the journal; `start` writes the key line, `open` appends to a matching journal."""

    def __init__(self, path: Path, key: dict, resume: bool):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists():
            check_key(path, key)
        else:
            path.write_text(json.dumps({"key": key}) + "\n")

    def record(self, row) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(asdict(row)) + "\n")
            f.flush()


def check_key(path: Path, key: dict) -> None:
    first = path.read_text().split("\n", 1)[0]
    saved = json.loads(first).get("key") if first.strip() else None
    if saved != key:
        raise ConfigError(f"cannot resume from {path}: it was written for another tier, case list or versions "
                          f"({_short(saved)}; this run: {_short(key)})")


def _short(key: dict | None) -> str:
    if not key:
        return "no key"
    v = key.get("versions", {})
    return f"tier {key.get('tier')}, {key.get('cases')} cases {key.get('cases_sha256')}, executorch {v.get('executorch')}"


def verdicts(path: Path, key: dict) -> list[dict]:
    """The rows a journal with this key holds (the last one wins for a mutant written twice); none without one."""
    if not path.exists():
        return []
    check_key(path, key)
    rows: dict[str, dict] = {}
    for line in path.read_text().splitlines()[1:]:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line being written when the run was killed
        rows[row["name"]] = row
    return list(rows.values())
