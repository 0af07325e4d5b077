"""A git repository laid out as ExecuTorch's source tree, made from the installed package, for overlay and bisection
tests: its top-level folders hold the package files (test folders left out), `src/executorch` links to them as
upstream's does, and `version.txt` says which version it is. What each test then commits is its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from harness.overlays import installed_package
from harness.overlays.sources import is_package_file


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{path} no longer holds {old!r} once: the seeded change needs another anchor"
    path.write_text(text.replace(old, new))


def make(repo: Path, version: str = "1.6.0a0") -> str:
    """Lay the installed package out as a source tree in `repo` (a new git repository); its first commit."""
    installed = installed_package()
    git(repo, "init", "--quiet")
    for top in sorted(p for p in installed.iterdir() if p.is_dir() and p.name != "__pycache__"):
        for folder, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if d not in ("test", "tests", "__pycache__")]
            for name in names:
                source = Path(folder) / name
                rel = source.relative_to(installed)
                if is_package_file(rel.as_posix()):
                    (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, repo / rel)
        (repo / "src" / "executorch").mkdir(parents=True, exist_ok=True)
        if (repo / top.name).exists():
            (repo / "src" / "executorch" / top.name).symlink_to(Path("..") / ".." / top.name)
    (repo / "version.txt").write_text(version + "\n")
    return commit(repo, "the installed package as a source tree")
