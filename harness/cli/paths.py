"""Every path a verb will write, checked before any work: an unwritable one is one line, not a traceback later.

A path is checked by doing what the verb would do first: make its directory
(the verbs create theirs anyway) and create and remove a file in it. Asking
`os.access` is not enough: root passes it for /proc, where nothing can be
made. A path left to its default is checked through `reports/`, where every
default goes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from harness.config import ConfigError

DEFAULTS = "reports"  # where a path left to its default goes

# verb -> {argument: 'file' or 'dir'}: what each verb writes. The history ('db') counts where the verb records.
WRITES: dict[str, dict[str, str]] = {
    "run": {"keep": "dir"},
    "list": {"html": "file"},
    "sweep": {"results": "file", "db": "file"},
    "import": {"db": "file"},
    "merge": {"out": "file", "db": "file"},
    "report": {"out": "dir"},
    "nightly": {"out": "dir", "db": "file"},
    "repro": {"out": "file"},
    "issue": {"out": "file"},
    "network": {"out": "dir"},
    "mutate": {"out": "dir"},
}


def _unwritable(directory: Path) -> str:
    """Why no file can be made in `directory` (made if missing); '' if one can."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"{e.strerror or type(e).__name__}: {e.filename or directory}"
    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".harness-write-check-")
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        return f"no file can be made in {directory}: {e.strerror or type(e).__name__}"
    return ""


def check_path(option: str, path: str | Path, kind: str) -> None:
    """ConfigError (one line) if `path` cannot be written as a `kind` ('file' or 'dir')."""
    p = Path(path)
    if kind == "file" and p.is_dir():
        raise ConfigError(f"invalid {option} {path}: it is a directory; a file path is needed")
    if kind == "dir" and p.exists() and not p.is_dir():
        raise ConfigError(f"invalid {option} {path}: it is a file; a directory is needed")
    why = _unwritable(p if kind == "dir" else (p.parent if str(p.parent) else Path(".")))
    if why:
        raise ConfigError(f"invalid {option} {path}: cannot write there ({why})")
    if kind == "file" and p.exists() and not os.access(p, os.W_OK):
        raise ConfigError(f"invalid {option} {path}: the file is read-only")


def check_writes(verb: str, args: argparse.Namespace) -> None:
    """Check each path `verb` will write, as the command line gave it (or `reports/` for a default)."""
    for name, kind in WRITES.get(verb, {}).items():
        if name == "db" and getattr(args, "no_history", False):
            continue
        if not hasattr(args, name):
            continue  # a sub-verb that writes no such path
        value = getattr(args, name)
        if value is None:
            if name == "keep":
                continue  # nothing kept unless asked
            check_path(f"--{name} (its default, under)", DEFAULTS, "dir")
        else:
            check_path(f"--{name.replace('_', '-')}", value, kind)
