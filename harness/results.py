"""Case results and their durable JSON-lines storage.

One line per case, appended and flushed the moment the case ends, so a crash
or an interrupt never loses a finished case. Parallel runs write one file per
worker and merge them at the end, in sweep order.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Iterable


class Outcome(str, Enum):
    PASS = "pass"
    MISMATCH = "mismatch"
    LOWERING_ERROR = "lowering_error"  # exception while quantizing, exporting or lowering
    NOT_DELEGATED = "not_delegated"  # some of the conv left on the CPU
    RUNNER_ERROR = "runner_error"  # the target rejected the graph or crashed
    EXPECTED_REJECTION = "expected_rejection"  # documented as unsupported, rejected cleanly
    MISTRUSTED = "mistrusted"  # degenerate reference output: proves nothing (never a pass, not a failure)
    KNOWN_ISSUE = "known_issue"  # failure listed in the registry, with a reason
    SKIPPED = "skipped"  # runner absent, with the reason
    HARNESS_ERROR = "harness_error"  # the harness itself failed: a bug here, not in the backend

    @property
    def ok(self) -> bool:
        """Outcomes that leave a sweep green."""
        return self in (Outcome.PASS, Outcome.EXPECTED_REJECTION, Outcome.KNOWN_ISSUE, Outcome.SKIPPED, Outcome.MISTRUSTED)


@dataclass
class CaseResult:
    descriptor: str
    seed: int
    outcome: Outcome
    reason: str = ""
    runner: str = "tosa-ref"
    metrics: dict = field(default_factory=dict)
    tosa_ops: list[str] = field(default_factory=list)
    conv_ops: list[str] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    artifacts: str | None = None  # directory holding inputs/outputs/flatbuffer of a failure
    # Set when an expectation no longer holds: a registered known issue or a
    # documented rejection that did not happen. Such a case is not green.
    stale: str = ""
    canary: str = ""  # the fault injected into the backend for this run, if any

    @property
    def green(self) -> bool:
        """Leaves a sweep green: an ok outcome and no stale expectation."""
        return self.outcome.ok and not self.stale

    def to_json(self) -> str:
        d = asdict(self)
        d["outcome"] = self.outcome.value
        return json.dumps(d, sort_keys=False, allow_nan=False, default=str)

    @classmethod
    def from_dict(cls, d: dict) -> "CaseResult":
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in d.items() if k in known}
        values["outcome"] = Outcome(d["outcome"])
        return cls(**values)

    @property
    def repro(self) -> str:
        canary = f" --canary {self.canary}" if self.canary else ""
        return f"python -m harness run '{self.descriptor}' --seed {self.seed}{canary}"


@lru_cache(maxsize=None)
def versions() -> dict[str, str]:
    """Versions of everything that shapes a result (read once per process)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "executorch", "tosa-tools", "harness"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    return out


class ResultWriter:
    """Appends one flushed JSON line per result; safe to reopen and extend."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")

    def write(self, result: CaseResult) -> None:
        self._file.write(result.to_json() + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ResultsFileError(ValueError):
    """A results file that cannot be read (one line naming file and line)."""


def read_results(path: str | os.PathLike) -> list[CaseResult]:
    path = Path(path)
    results = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ResultsFileError(f"cannot read results file {path}: {e.strerror}") from e
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            results.append(CaseResult.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as e:
            raise ResultsFileError(f"corrupt results file {path} line {number}: {type(e).__name__}: {e}") from e
    return results


def merge(parts: Iterable[str | os.PathLike], out: str | os.PathLike, order: list[str] | None = None) -> list[CaseResult]:
    """Merge per-worker files into `out`, in `order` of descriptors if given."""
    results = [r for p in parts for r in read_results(p)]
    if order is not None:
        rank = {d: i for i, d in enumerate(order)}
        results.sort(key=lambda r: (rank.get(r.descriptor, len(rank)), r.descriptor, r.seed))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in results:
            f.write(r.to_json() + "\n")
    tmp.replace(out)
    return results
