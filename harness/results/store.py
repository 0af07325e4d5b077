"""Results files: one JSON line per case, durable, mergeable, versioned.

One line per case, appended and flushed the moment the case ends, so a crash
or an interrupt never loses a finished case. Parallel runs write one file per
worker and merge them at the end, in sweep order. A reader accepts the
current schema version and the one before it (upgraded on reading), and names
any other version in one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from harness.results.case_result import SCHEMA_VERSION, CaseResult, Outcome

READABLE_VERSIONS = (1, SCHEMA_VERSION)


class ResultsFileError(ValueError):
    """A results file that cannot be read (one line naming file and line)."""


class ResultWriter(contextlib.AbstractContextManager):
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

    def __exit__(self, *exc) -> None:
        self.close()


_V1_REJECTION_DETAIL = re.compile(r"\((left on CPU: .*|raised in .*)\)$")
_V1_STAGE_ERROR = re.compile(r"^(build|quantize|lower|run|compare): (\w+): ")


def _upgrade_v1(d: dict) -> dict:
    """A version-1 line as version 2. Version 1 kept the registry id and the
    rejection name only as the prefix of `reason` ("<id>: <why> [<what
    happened>]"), and the actual outcome of a known issue in its metrics."""
    d = dict(d, metrics=dict(d.get("metrics", {})), schema_version=SCHEMA_VERSION)
    d["target"] = "tosa"  # version 1 ran on the TOSA reference model only
    actual = d["metrics"].pop("actual_outcome", None)
    reason = d.get("reason", "")
    if d["outcome"] == Outcome.KNOWN_ISSUE.value:
        d["issue"] = reason.split(":", 1)[0]
        if reason.endswith("]") and " [" in reason:
            d["reason"] = reason[reason.index(" [") + 2 : -1]
    elif d["outcome"] == Outcome.EXPECTED_REJECTION.value:
        d["rejection"] = reason.split(":", 1)[0]
        detail = _V1_REJECTION_DETAIL.search(reason)
        if detail:
            d["reason"] = detail.group(1)
            actual = Outcome.NOT_DELEGATED.value if detail.group(1).startswith("left") else Outcome.LOWERING_ERROR.value
    d["actual_outcome"] = actual or d["outcome"]
    stage_error = _V1_STAGE_ERROR.match(d.get("reason", ""))
    if stage_error and d["actual_outcome"] in (
        Outcome.LOWERING_ERROR.value,
        Outcome.HARNESS_ERROR.value,
        Outcome.RUNNER_ERROR.value,
    ):
        d["stage"], d["error_type"] = stage_error.groups()
    return d


def parse_line(line: str) -> CaseResult:
    d = json.loads(line)
    if not isinstance(d, dict):
        raise ValueError(f"a results line is a JSON object, not {type(d).__name__}")
    version = d.get("schema_version", 1)
    if version not in READABLE_VERSIONS:
        raise ValueError(
            f"results schema version {version!r} is not supported; this harness reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    return CaseResult.from_dict(_upgrade_v1(d) if version == 1 else d)


def read_results(path: str | os.PathLike, tolerate_cut_end: bool = False) -> list[CaseResult]:
    """Every result of a results file; `tolerate_cut_end`: drop a damaged last line (a writer killed mid-line)
    instead of refusing the file."""
    path = Path(path)
    results = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ResultsFileError(f"cannot read results file {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise ResultsFileError(f"results file {path} is not UTF-8 text: {e.reason} at byte {e.start}") from e
    last = max((number for number, line in enumerate(lines, 1) if line.strip()), default=0)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            results.append(parse_line(line))
        except (ValueError, KeyError, TypeError) as e:
            if tolerate_cut_end and number == last:
                break
            raise ResultsFileError(f"corrupt results file {path} line {number}: {type(e).__name__}: {e}") from e
    return results


def merge(
    parts: Iterable[str | os.PathLike], out: str | os.PathLike, order: list[str] | None = None
) -> list[CaseResult]:
    """Merge per-worker files into `out`, in `order` of descriptors if given."""
    results = ordered([r for p in parts for r in read_results(p)], order)
    write_results(results, out)
    return results


def ordered(results: list[CaseResult], order: list[str] | None) -> list[CaseResult]:
    """`results` in `order` of descriptors (those not in it last, by descriptor and seed)."""
    if order is None:
        return list(results)
    rank = {d: i for i, d in enumerate(order)}
    return sorted(results, key=lambda r: (rank.get(r.descriptor, len(rank)), r.descriptor, r.seed))


def write_results(results: Iterable[CaseResult], out: str | os.PathLike) -> None:
    """Write a whole results file at once (atomically: readers see the old file or the new one)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in results:
            f.write(r.to_json() + "\n")
    tmp.replace(out)
