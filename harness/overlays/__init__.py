"""ExecuTorch overlays: run the harness against another release or a source tree, beside the installed one.

An overlay is a directory put first on the import path (PYTHONPATH for child
processes, `sys.path` here) that holds an `executorch` package; everything
else (torch, tosa-tools, Vela) stays the environment's. Two kinds:

* a release: its wheel installed with `pip install --no-deps --target` into a
  cache, once (`release`);
* a source tree: an ExecuTorch checkout's `backends/arm` laid over the
  installed ExecuTorch (every other entry links to the installed package), so
  a backend developer's working tree, or any commit of it, runs against the
  installed core (`tree`). A tree whose Arm backend needs a newer core than the
  installed one cannot import: the run stops with that import error, one line.

Each overlay's package holds `harness-overlay.json`, which says what it is
(release version; tree path, commit, version.txt, whether the tree had
uncommitted changes, and which of the commits the expectations name are its
ancestors). `harness.results.case_result.versions` and
`harness.expectations.applies` read it without importing ExecuTorch.

`bisect versions`, `bisect commits` and `--executorch` all build overlays here.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness import cache
from harness.descriptor import ConfigError
from harness.overlays import sources

PACKAGE = "executorch"
MARKER = "harness-overlay.json"
ARM = Path("backends") / "arm"
DEFAULT_CACHE = cache.ROOT / "overlays"
_COMPLETE = ".complete"
_RELEASE = re.compile(r"^\d+(\.\d+)*([a-z]+\d+)?$")


class OverlayError(RuntimeError):
    """A release that cannot be installed into an overlay."""


@dataclass(frozen=True)
class Overlay:
    path: Path | None  # the import-path entry; None: the installed ExecuTorch, no overlay
    kind: str  # 'installed', 'release' or 'tree'
    label: str  # what a run records: '1.4.1', or '/src/executorch@1a2b3c4d5e6f+dirty'
    seconds: float = 0.0  # spent building it
    reused: bool = True  # found complete in the cache


def installed_version() -> str:
    return importlib.metadata.version(PACKAGE)


def installed_package() -> Path:
    """The installed ExecuTorch package directory (outside any overlay on the path)."""

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{PACKAGE} is not installed here")
    found = Path(next(iter(spec.submodule_search_locations)))
    marker = _read_marker(found)
    if marker and marker.get("installed"):
        return Path(marker["installed"])
    return found


def _read_marker(package: Path) -> dict | None:
    try:
        return json.loads((package / MARKER).read_text())
    except (OSError, ValueError):
        return None


def marker() -> dict:
    """What the ExecuTorch on the import path is, from its overlay marker ({} for an installed one), unimported."""

    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return {}
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = _read_marker(Path(folder))
        if found:
            return found
    return {}


# -- releases ----------------------------------------------------------------------------------------------
def release(version: str, cache: Path = DEFAULT_CACHE) -> Overlay:
    """The overlay of an ExecuTorch release (none for the installed one), installed into `cache` once."""
    start = time.perf_counter()
    if version == installed_version():
        return Overlay(None, "installed", version)
    target = Path(cache) / f"{PACKAGE}-{version}"
    if (target / _COMPLETE).exists():
        if not (target / PACKAGE / MARKER).exists():  # made before overlays carried a marker
            (target / PACKAGE / MARKER).write_text(json.dumps({"kind": "release", "version": version}))
        return Overlay(target, "release", version, time.perf_counter() - start, True)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-compile",
            "--quiet",
            "--target",
            str(partial),
            f"{PACKAGE}=={version}",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode:
        shutil.rmtree(partial, ignore_errors=True)
        raise OverlayError(f"pip could not install {PACKAGE}=={version}: {done.stderr.strip().splitlines()[-1:]}")
    top = partial / PACKAGE / "__init__.py"
    if not top.exists():  # a namespace package would merge with the installed release's modules
        top.write_text("# made a regular package by harness.overlays: nothing resolves outside it\n")
    (partial / PACKAGE / MARKER).write_text(json.dumps({"kind": "release", "version": version}))
    (partial / _COMPLETE).write_text(version)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return Overlay(target, "release", version, time.perf_counter() - start, False)


# -- source trees ------------------------------------------------------------------------------------------
def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`git -C repo ARGS` as text; ConfigError naming the command when it fails and `check`."""
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and done.returncode:
        raise ConfigError(f"git {' '.join(args)} failed in {repo}: {done.stderr.strip().splitlines()[-1:]}")
    return done


def ancestors(repo: Path, rev: str, commits: tuple[str, ...]) -> dict[str, bool]:
    """For each commit the expectations name: whether it is in `rev`'s history (unknown commits are left out)."""
    out = {}
    for c in commits:
        done = git(repo, "merge-base", "--is-ancestor", c, rev, check=False)
        if done.returncode in (0, 1):
            out[c] = done.returncode == 0
    return out


def _write_files(package: Path, files: dict[str, str], contents: dict[str, bytes] | None) -> None:
    for rel, source in files.items():
        dest = package / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if contents is None:
            shutil.copyfile(source, dest)
        else:
            dest.write_bytes(contents[source])


def _covered(rel: str, roots: tuple[str, ...]) -> str:
    """'all' when `rel` lies in a folder that comes from the tree, 'part' when such a folder lies in it."""
    if any(rel == r or rel.startswith(r + "/") for r in roots):
        return "all"
    return "part" if any(r.startswith(rel + "/") for r in roots) else ""


def _lay_installed(installed: Path, package: Path, roots: tuple[str, ...], rel: str = "") -> int:
    """Link into `package` what the tree does not give: whole folders it has nothing of, and inside its own
    folders the compiled parts and data (not Python) it lacks. Returns how many compiled files were linked."""
    linked = 0
    for entry in sorted((installed / rel).iterdir() if rel else installed.iterdir()):
        name = f"{rel}/{entry.name}" if rel else entry.name
        if entry.name in ("__pycache__", MARKER) or name in ("__init__.py",):
            continue
        dest = package / name
        cover = _covered(name, roots)
        if not cover:
            if not dest.exists() and not (name == "version.py" and dest.exists()):
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.symlink_to(entry)
        elif entry.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            linked += _lay_installed(installed, package, roots, name)
        elif cover == "all" and not dest.exists() and not sources.is_package_file(name) and not name.endswith(".pyc"):
            dest.symlink_to(entry)
            linked += 1
    return linked


def assemble_tree(
    found: sources.PackageFiles,
    contents: dict[str, bytes] | None,
    into: Path,
    facts: dict,
    installed: Path | None = None,
) -> Path:
    """An overlay (an import-path entry) made afresh in `into`: the tree's package files (`found`; `contents`
    holds them for a commit, None copies them from a working tree), and from the installed package its compiled
    parts and whatever the tree has no folder for; `facts` go into its marker."""
    installed = installed or installed_package()
    shutil.rmtree(into, ignore_errors=True)
    package = into / PACKAGE
    package.mkdir(parents=True)
    _write_files(package, found.files, contents)
    (package / "__init__.py").write_text("")  # a regular package: nothing resolves to the installed copy
    if found.own_core:  # the wheel generates version.py; the tree's is its version.txt and commit
        (package / "version.py").write_text(
            f"__version__ = {facts.get('version') or '0.0.0'!r}\ngit_version = {facts.get('commit', '')!r}\n"
        )
    compiled = _lay_installed(installed, package, found.roots)
    from_installed = installed_version_at(installed)
    core = "tree" if found.own_core else f"installed {from_installed}"
    (package / MARKER).write_text(
        json.dumps(
            {
                "kind": "tree",
                "installed": str(installed),
                **facts,
                "core": core,
                "from_tree": list(found.roots),
                "files": len(found.files),
                "compiled_from": from_installed,
                "compiled_files": compiled,
            }
        )
    )
    return into


def installed_version_at(installed: Path) -> str:
    """The release of the installed package at `installed` (its dist-info beside it), or the running one's."""
    for info in installed.parent.glob(f"{PACKAGE}-*.dist-info"):
        return info.name[len(PACKAGE) + 1 : -len(".dist-info")]
    return installed_version()


def origin_line(marker: dict) -> str:
    """One line: what of an overlay came from the tree and what from the installed release."""
    if marker.get("kind") != "tree":
        return ""
    roots = marker.get("from_tree", [])
    if str(marker.get("core", "")).startswith("installed"):
        return (
            f"{', '.join(roots)} from the tree ({marker.get('files', 0)} files); exir, the passes and the "
            f"serializers from the {marker['core']} (the tree has no src/executorch: not its own core)"
        )
    return (
        f"its own Python core from the tree ({marker.get('files', 0)} files: {', '.join(roots)}); "
        f"{marker.get('compiled_files', 0)} compiled files from the installed {marker.get('compiled_from')}"
    )


def assemble_commit(repo: Path, commit: str, into: Path, facts: dict) -> Path:
    """The overlay of `commit` of `repo`, read from git without a checkout (partial and blobless clones work)."""
    installed = installed_package()
    found, contents = sources.at_commit(repo, commit, _top_names(installed))
    return assemble_tree(found, contents, into, facts, installed)


def assemble_working(top: Path, into: Path, facts: dict) -> Path:
    """The overlay of a working tree as it is now (copied: edits during the run change nothing)."""
    installed = installed_package()
    return assemble_tree(sources.in_working_tree(top, _top_names(installed)), None, into, facts, installed)


def _top_names(installed: Path) -> list[str]:
    return sorted(p.name for p in installed.iterdir() if p.is_dir() and p.name != "__pycache__")


def top_names() -> list[str]:
    """The installed package's top-level folders (exir, backends, ...)."""
    return _top_names(installed_package())


def tree_facts(top: Path, rev: str | None, commits: tuple[str, ...] = ()) -> dict:
    """What a tree overlay records: its path, commit (+dirty for a working tree with changes under
    backends/arm), version.txt, and which of `commits` it contains."""
    head = git(top, "rev-parse", f"{rev or 'HEAD'}^{{commit}}").stdout.strip()
    dirty = rev is None and bool(git(top, "status", "--porcelain").stdout.strip())
    if rev is None:
        version_file = top / "version.txt"
        version = version_file.read_text().strip() if version_file.exists() else ""
    else:
        version = git(top, "show", f"{head}:version.txt", check=False).stdout.strip()
    return {
        "source": str(top),
        "commit": head,
        "dirty": dirty,
        "version": version,
        "ancestors": ancestors(top, head, commits),
    }


def check_checkout(repo: str | Path, rev: str = "") -> Path:
    """The checkout's top directory (a bare repository's own, when a commit is named); ConfigError unless it is a
    git repository."""
    path = Path(repo).expanduser()
    if not path.is_dir():
        raise ConfigError(f"invalid --executorch={repo}: not a release (e.g. 1.4.1) and not a git checkout")
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip():
        return Path(done.stdout.strip())
    bare = subprocess.run(["git", "-C", str(path), "rev-parse", "--is-bare-repository"], capture_output=True, text=True)
    if bare.stdout.strip() == "true":
        if not rev:
            raise ConfigError(
                f"invalid --executorch={repo}: a bare repository has no working tree; name a commit of it: {repo}@REV"
            )
        return path.resolve()
    raise ConfigError(f"invalid --executorch={repo}: not a release (e.g. 1.4.1) and not a git checkout")


def tree(spec: str, cache: Path = DEFAULT_CACHE, commits: tuple[str, ...] = ()) -> Overlay:
    """The overlay of a source tree: 'PATH' (its working tree as it is now) or 'PATH@REV' (a commit of it)."""
    start = time.perf_counter()
    path, _, rev = spec.rpartition("@") if "@" in spec else (spec, "", "")
    top = check_checkout(path, rev)
    if rev:
        if git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False).returncode:
            raise ConfigError(f"invalid --executorch={spec}: {rev} is not a commit of {top}")
        if git(top, "cat-file", "-e", f"{rev}:{ARM.as_posix()}", check=False).returncode:
            raise ConfigError(f"invalid --executorch={spec}: {top} has no {ARM.as_posix()} at {rev}")
    elif not (top / ARM).is_dir():
        raise ConfigError(f"invalid --executorch={spec}: {top} has no {ARM.as_posix()} (an ExecuTorch checkout?)")
    facts = tree_facts(top, rev or None, commits)
    key = hashlib.sha256(f"{top}@{facts['commit']}{'+dirty' if facts['dirty'] else ''}".encode()).hexdigest()[:16]
    into = Path(cache) / f"tree-{key}"
    try:
        if rev:
            assemble_commit(top, facts["commit"], into, facts)
        else:  # a working tree is copied as it is at the start, so that edits during the run change nothing
            assemble_working(top, into, facts)
    except sources.SourceError as e:
        raise ConfigError(f"invalid --executorch={spec}: {e}") from None
    label = f"{top}@{facts['commit'][:12]}{'+dirty' if facts['dirty'] else ''}"
    return Overlay(into, "tree", label, time.perf_counter() - start, False)


# -- choosing one ------------------------------------------------------------------------------------------
def resolve(spec: str, cache: Path = DEFAULT_CACHE, commits: tuple[str, ...] = ()) -> Overlay:
    """`--executorch SPEC`: 'installed', a release ('1.4.1'), or a checkout ('PATH' or 'PATH@REV')."""
    if spec in ("", "installed"):
        return Overlay(None, "installed", installed_version())
    if _RELEASE.match(spec) and not Path(spec).exists():
        return release(spec, cache)
    return tree(spec, cache, commits)


def activate(overlay: Overlay) -> None:
    """Put the overlay first on this process's import path and its children's (PYTHONPATH); ConfigError if
    ExecuTorch is already imported here (it would stay the one imported)."""
    if overlay.path is None:
        return
    if PACKAGE in sys.modules:
        raise ConfigError(
            "--executorch must take effect before ExecuTorch is imported (give it to "
            "`python -m harness`, not to a process that already imported it)"
        )
    entry = str(overlay.path)
    os.environ["PYTHONPATH"] = os.pathsep.join([entry, *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ["HARNESS_EXECUTORCH"] = overlay.label
    os.environ["HARNESS_EXECUTORCH_PATH"] = entry  # harness/__init__.py puts it back where a launcher reset sys.path
    if entry not in sys.path:
        sys.path.insert(0, entry)

    importlib.invalidate_caches()
