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


def write_bytes(path: Path, data: bytes, mode: int | None = None) -> bool:
    """Keep `data` at `path` (with `mode`, e.g. executable), atomically: a reader sees the whole file or none,
    even with several processes writing. False when the cache is unwritable, which costs the next process the
    work again, nothing else."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def kept_file(path: Path, data: bytes, mode: int | None = None) -> bool:
    """`path` holds `data` (with `mode`), written now if it did not: a file every process shares, made once."""
    try:
        if path.read_bytes() == data and (mode is None or path.stat().st_mode & 0o777 == mode):
            return True
    except OSError:
        pass
    return write_bytes(path, data, mode)
