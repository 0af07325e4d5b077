"""What an interrupted sweep already finished, so `sweep --resume` runs only the rest.

An interrupted sweep leaves its finished cases in its results file (Ctrl-C:
the part file is merged there) or in a `<stem>.<run id>.part.jsonl` beside it
(SIGKILL, a crashed parent, a lost machine). Resuming reads both, keeps the
cases of the current selection, and continues the same run id, so the history
holds one run with every case. Results made with another seed, target, canary
or set of versions are refused: mixed into one run they would make its
numbers mean nothing. A SIGKILL can cut the last line of a part file; that one
line is dropped (its case runs again), a damaged line elsewhere is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.config import ConfigError
from harness.results.case_result import CaseResult
from harness.results.store import read_results


@dataclass
class Earlier:
    results: list[CaseResult] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # the files they came from, merged into the new results
    run_id: str = ""


def part_files(results_path: Path) -> list[Path]:
    return sorted(results_path.parent.glob(f"{results_path.stem}.*.part{results_path.suffix}"))


def nothing_to_resume(results_path: Path) -> None:
    """ConfigError if there is no results file and no part file to resume from."""
    if not results_path.exists() and not part_files(results_path):
        raise ConfigError(f"invalid --resume: no results at {results_path} and no part files beside it to resume")


def earlier_results(
    results_path: Path, wanted: list[str], seed: int, target: str, canary: str, versions: dict
) -> Earlier:
    """The finished cases of the interrupted run at `results_path` that are in `wanted`; ConfigError if there is
    nothing to resume or the results were made differently."""
    nothing_to_resume(results_path)
    parts = part_files(results_path)
    files = ([results_path] if results_path.exists() else []) + parts
    earlier = Earlier(files=files)
    keep = set(wanted)
    for path in files:
        for r in read_results(path, tolerate_cut_end=path in parts):
            for name, have, want in (
                ("seed", r.seed, seed),
                ("target", r.target, target),
                ("canary", r.canary, canary),
            ):
                if have != want:
                    raise ConfigError(
                        f"invalid --resume: {path} holds results made with {name} {have!r}, "
                        f"this sweep runs {name} {want!r}"
                    )
            moved = {k: (r.versions.get(k), v) for k, v in versions.items() if r.versions.get(k) not in (None, v)}
            if moved:
                raise ConfigError(
                    f"invalid --resume: {path} was made with other versions "
                    f"({', '.join(f'{k} {a} -> {b}' for k, (a, b) in sorted(moved.items()))})"
                )
            if r.descriptor in keep:
                earlier.results.append(r)
    earlier.run_id = max((r.run_id for r in earlier.results if r.run_id), default="")
    return earlier
