"""Where the harness keeps what it can rebuild: release overlays, speed-up proofs, mutant lists, built tiers.

`$HARNESS_CACHE`, else `~/.cache/conv-harness`. Everything under it is keyed by
what it was made from, so deleting it costs time, never a result.
"""

from __future__ import annotations

import json
import os
import tempfile
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


Files = dict[str, tuple[bytes, int | None]]  # relative path -> (content, mode)
_PRIVATE: dict[str, tempfile.TemporaryDirectory] = {}  # name -> this process's folder where the cache is unwritable


def kept_folder(name: str, files: Files, prefix: str) -> Path:
    """`ROOT/name` holding `files`, made once and shared by every process (a temporary folder per process is left
    behind by every worker that ends without its exit handlers). Where the cache cannot be written, a temporary
    folder of this process (named `prefix...`), made once and removed when the process ends normally."""
    shared = ROOT / name
    if all(kept_file(shared / relative, data, mode) for relative, (data, mode) in files.items()):
        return shared
    if name not in _PRIVATE:
        folder = tempfile.TemporaryDirectory(prefix=prefix)
        for relative, (data, mode) in files.items():
            path = Path(folder.name) / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            if mode is not None:
                os.chmod(path, mode)
        _PRIVATE[name] = folder
    return Path(_PRIVATE[name].name)
