"""What each test took last time, so that xdist starts the longest work first.

Under `-n`, xdist hands out units of work (a test, a pack of cases, a group
marked `xdist_group`) in a fixed order; a long unit handed out last keeps one
worker busy while the others sit idle. Given the durations of an earlier run
(`--harness-durations`, a JSON object {node id: seconds}, the format of
pytest-split's `.test_durations`), the units go out longest first (a unit's
cost is its tests' sum; a test the file does not know counts as the median of
those it does). `--harness-store-durations` writes such a file from the
session that just ran. The order changes which worker runs what and when,
never what a test does or what it finds.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

GROUP_SEP = "@"  # xdist's loadgroup suffix: 'path::test[id]@group'


class DurationsError(ValueError):
    """A durations file that cannot be read (the plugin turns it into pytest's usage error)."""


def bare(nodeid: str) -> str:
    """The node id without xdist's group suffix (a parameter id may hold '@' itself: only a suffix after ']' or a
    name is one, which xdist adds after the whole id)."""
    head, sep, group = nodeid.rpartition(GROUP_SEP)
    return head if sep and "[" not in group and "]" not in group and "::" in head else nodeid


def load(path: str | Path) -> dict[str, float]:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DurationsError(f"invalid --harness-durations {path}: no such file") from None
    except (OSError, ValueError) as e:
        raise DurationsError(f"invalid --harness-durations {path}: not a JSON file ({e})") from None
    if not isinstance(data, dict) or not all(isinstance(v, (int, float)) and v >= 0 for v in data.values()):
        raise DurationsError(f"invalid --harness-durations {path}: must be a JSON object of node id -> seconds >= 0")
    return {str(k): float(v) for k, v in data.items()}


def order_units(units: list[tuple[str, list[str]]], known: dict[str, float]) -> list[tuple[str, list[str]]]:
    """The units (scope, node ids), longest expected first; equal ones keep their order."""
    default = statistics.median(known.values()) if known else 1.0
    cost = {scope: sum(known.get(bare(n), default) for n in ids) for scope, ids in units}
    return sorted(units, key=lambda unit: -cost[unit[0]])


class Recorder:
    """A pytest plugin object: sums each test's setup, call and teardown as the reports arrive (in the xdist
    controller, or a lone process), and writes them when the session ends."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[bare(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session) -> None:
        if self.seconds:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            rows = {k: round(v, 2) for k, v in sorted(self.seconds.items())}
            self.path.write_text(json.dumps(rows, indent=0) + "\n")
