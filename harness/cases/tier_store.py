"""Built tiers kept on disk, keyed by every source they are built from.

Building nightly takes seconds a process (two covertable arrays, 89k validations); every pytest worker,
`list`, `sweep --shard` and the unit loop paid it again. A tier is a pure function of its name, its target
and the code below (`SOURCES`: the case space, the config and its rules, the contexts, the policy), the
covertable version and Python's: the same key gives the same cases, so a stored tier is that function's
value, read back in a fraction of the time. `tests/cases/test_tier_store.py` holds that the build imports
no harness module outside `SOURCES` and that a stored tier equals a fresh build. `HARNESS_NO_TIER_STORE=1`
builds every time (what the cross-process determinism test does, so it proves the build, not the file).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from harness import cache

HARNESS = Path(__file__).resolve().parents[1]
SOURCES = ("cases", "contexts", "policy", "config.py", "descriptor.py", "validation.py", "quiet.py", "cache.py")
STORE = cache.ROOT / "tiers"


def _source_files() -> list[Path]:
    files: list[Path] = []
    for name in SOURCES:
        p = HARNESS / name
        files += sorted(f for f in p.rglob("*") if f.suffix in (".py", ".json", ".toml")) if p.is_dir() else [p]
    return files


def key() -> str:
    """What a built tier depends on: the text of every source, covertable's version, Python's."""
    h = hashlib.sha256()
    for f in _source_files():
        h.update(str(f.relative_to(HARNESS)).encode() + b"\0" + f.read_bytes() + b"\0")
    try:
        covertable = metadata.version("covertable")
    except metadata.PackageNotFoundError:
        covertable = "absent"
    h.update(f"covertable {covertable}; python {sys.version}".encode())
    return h.hexdigest()[:24]


def stored(name: str, target: str, build: Callable[[], tuple]) -> tuple:
    """The tier `name` for `target`: read back when this key stored it, else built and stored."""
    if os.environ.get("HARNESS_NO_TIER_STORE"):
        return build()
    path = STORE / f"{name}-{target}-{key()}.pickle"
    try:
        found = pickle.loads(path.read_bytes())  # our own file, under the user's cache
        if isinstance(found, tuple):
            return found
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        pass
    built = build()
    cache.write_bytes(path, pickle.dumps(built, protocol=pickle.HIGHEST_PROTOCOL))
    return built
