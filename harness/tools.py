"""Where a command-line tool a target runs lives: on PATH, or beside the Python that runs the harness.

A wheel's executable (`model-converter`) is installed into the environment's scripts directory, which is on PATH
only when the environment was activated; `.venv/bin/python -m pytest` (as CI runs it) leaves it off. Without this
lookup such a run would blame the backend for a tool this machine has.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path


def _beside_python() -> list[Path]:
    """The scripts directories of the running interpreter's environment, the interpreter's own first."""
    dirs = [Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))]
    return list(dict.fromkeys(dirs))


def locate(tool: str) -> str | None:
    """The path of `tool`: PATH's first, else the one in this Python's scripts directory; None when neither."""
    found = shutil.which(tool)
    if found:
        return found
    for folder in _beside_python():
        candidate = folder / tool
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def expose(tool: str) -> str | None:
    """Put the directory of `tool` on this process's PATH when only this Python's scripts directory has it, so that
    ExecuTorch (which looks the tool up on PATH) and every subprocess find the one `locate` found."""
    found = locate(tool)
    if found and shutil.which(tool) is None:
        os.environ["PATH"] = os.pathsep.join(p for p in (str(Path(found).parent), os.environ.get("PATH", "")) if p)
    return found
