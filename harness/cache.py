"""Where the harness keeps what it can rebuild: release overlays, speed-up proofs, mutant lists, built tiers.

`$HARNESS_CACHE`, else `~/.cache/conv-harness`. Everything under it is keyed by
what it was made from, so deleting it costs time, never a result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(os.environ.get("HARNESS_CACHE", Path.home() / ".cache" / "conv-harness"))


def read_json(path: Path):
    """What a cache file holds, or None when it is missing or unreadable (the caller then rebuilds it)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, data) -> None:
    """Keep `data` at `path` as JSON, atomically (see `write_bytes`)."""
    write_bytes(path, json.dumps(data, indent=1).encode())


def write_bytes(path: Path, data: bytes) -> None:
    """Keep `data` at `path`, atomically (a reader sees the whole file or none, even with several processes
    writing); an unwritable cache costs the next process the work again, nothing else."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass
