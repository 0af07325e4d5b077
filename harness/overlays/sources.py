"""The pure-Python ExecuTorch of a source tree: which of its files make the `executorch` package, read from git.

ExecuTorch's package is `src/executorch`, whose entries are symlinks to the
repository's top-level folders (`src/executorch/exir -> ../../exir`, and
`kernels/quantized`, `examples/models`, ... one level down). The wheel adds
generated and compiled parts (`version.py`, the `.so` files, `flatc`, the
schema copies `setup.py` makes). A tree's own core is every package file the
mapping reaches: Python and the package data setup.py ships (`*.fbs`, `*.yaml`,
the VGF shaders); the compiled parts come from the installed wheel
(`harness.overlays.assemble_tree`).

Files are read with `git ls-tree` and `git cat-file --batch`, never with a
checkout: a step of a bisection costs what the package's files cost, and a
partial or blobless clone works as long as those blobs are there or can be
fetched (missing ones are fetched in one batch from the promisor remote; the
large blobs a partial clone lacks are test data, GIFs and tokenizers, none of
them package files). A tree without `src/executorch` (a checkout holding only
`backends/arm`, say) gives the folders it has that the installed package has,
each backend on its own; the rest stays the installed release's.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
from dataclasses import dataclass
from pathlib import Path

SRC = "src/executorch"
# What setup.py ships of a package folder besides Python: pyproject's package-data and the VGF shaders.
PACKAGE_SUFFIXES = (".py", ".pyi", ".fbs", ".yaml", ".glsl", ".spirv.b64")
# setup.py's copies of the schema into the packages that read it at run time (src -> package path).
SCHEMA_COPIES = (
    ("schema/scalar_type.fbs", "exir/_serialize/scalar_type.fbs"),
    ("schema/program.fbs", "exir/_serialize/program.fbs"),
    (
        "devtools/bundled_program/schema/bundled_program_schema.fbs",
        "devtools/bundled_program/serialize/bundled_program_schema.fbs",
    ),
    ("devtools/bundled_program/schema/scalar_type.fbs", "devtools/bundled_program/serialize/scalar_type.fbs"),
)
SKIP_PARTS = ("__pycache__", "third-party", "third_party")


class SourceError(RuntimeError):
    """A tree whose package files cannot be read (a blob absent and not fetchable)."""


@dataclass(frozen=True)
class PackageFiles:
    """A tree's package files: package path -> (git blob id, or a file path for a working tree)."""

    roots: tuple[str, ...]  # the package folders that come from the tree ('exir', 'backends', ...)
    files: dict[str, str]
    own_core: bool  # the tree has the package layout (src/executorch): its exir, passes, serializers are its own


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True)
    if done.returncode:
        raise SourceError(
            f"git {' '.join(args[:3])} failed in {repo}: "
            f"{done.stderr.decode(errors='replace').strip().splitlines()[-1:]}"
        )
    return done.stdout


def is_package_file(path: str) -> bool:
    return path.endswith(PACKAGE_SUFFIXES) and not any(p in SKIP_PARTS for p in path.split("/"))


def _ls(repo: Path, commit: str, *paths: str) -> list[tuple[str, str, str]]:
    """(mode, blob id, path) of every file under `paths` at `commit`."""
    out = _git(repo, "ls-tree", "-r", "-z", "--full-tree", commit, "--", *paths)
    rows = []
    for entry in out.split(b"\0"):
        if entry:
            meta, path = entry.split(b"\t", 1)
            mode, kind, blob = meta.decode().split()
            if kind == "blob":
                rows.append((mode, blob, path.decode()))
    return rows


def _read_blobs(repo: Path, blobs: list[str]) -> dict[str, bytes]:
    """The contents of `blobs`, through one `git cat-file --batch`."""
    unique = list(dict.fromkeys(blobs))
    _prefetch(repo, unique)
    out = _git(repo, "cat-file", "--batch", stdin="".join(f"{b}\n" for b in unique).encode())
    found, at = {}, 0
    for blob in unique:
        end = out.index(b"\n", at)
        header = out[at:end].decode().split()
        if len(header) < 3 or header[1] == "missing":
            raise SourceError(f"blob {blob} is not in {repo} and could not be fetched")
        size = int(header[2])
        found[blob] = out[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return found


def _promisor(repo: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "config", "--get-regexp", r"^remote\..*\.promisor$"], capture_output=True, text=True
    )
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        if value.strip() == "true":
            return key.split(".")[1]
    return ""


def _prefetch(repo: Path, blobs: list[str]) -> None:
    """Fetch the blobs a partial clone lacks in one request, as git's own sparse checkout does (not one by one)."""
    remote = _promisor(repo)
    if not remote:
        return
    have = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-check=%(objectname)", "--buffer"],
        input="".join(f"{b}\n" for b in blobs),
        capture_output=True,
        text=True,
        env=dict(os.environ, GIT_NO_LAZY_FETCH="1"),
    )
    missing = [line.split()[0] for line in have.stdout.splitlines() if line.endswith(" missing")]
    if missing:
        subprocess.run(
            [
                "git",
                "-C",
                str(repo),
                "-c",
                "fetch.negotiationAlgorithm=noop",
                "fetch",
                remote,
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
            ],
            input="".join(f"{b}\n" for b in missing),
            capture_output=True,
            text=True,
        )


def _links_at(repo: Path, commit: str) -> dict[str, str] | None:
    """src/executorch's mapping at `commit`: package path -> repository folder; None without that layout."""
    entries = _ls(repo, commit, SRC)
    if not entries:
        return None
    targets = _read_blobs(repo, [blob for mode, blob, _ in entries if mode == "120000"])
    mapping = {}
    for mode, blob, path in entries:
        rel = path[len(SRC) + 1 :]
        if mode == "120000":
            mapping[rel] = posixpath.normpath(posixpath.join(posixpath.dirname(path), targets[blob].decode()))
        else:
            mapping[rel] = path
    return mapping


def _links_in(top: Path) -> dict[str, str] | None:
    """The same mapping in a working tree (symlinks read from the disk)."""
    src = top / SRC
    if not src.is_dir():
        return None
    mapping = {}
    for folder, dirs, names in os.walk(src):
        for name in [*dirs, *names]:
            path = Path(folder) / name
            if path.is_symlink():
                rel = path.relative_to(src).as_posix()
                mapping[rel] = Path(os.path.normpath(path.parent / os.readlink(path))).relative_to(top).as_posix()
                if name in dirs:
                    dirs.remove(name)
            elif name in names:
                mapping[path.relative_to(src).as_posix()] = path.relative_to(top).as_posix()
    return mapping


def _fallback(has, installed_top: list[str]) -> dict[str, str]:
    """Without src/executorch: the installed package's top-level folders the tree has, each backend on its own."""
    mapping = {}
    for name in installed_top:
        if name == "backends":
            mapping.update({f"backends/{b}": f"backends/{b}" for b in has("backends")})
        elif name in has(""):
            mapping[name] = name
    return mapping


def _mapping_at(repo: Path, commit: str, installed_top: list[str]) -> tuple[dict[str, str], bool]:
    """The package path -> repository folder mapping at `commit`, and whether it is the tree's own layout
    (src/executorch) rather than the installed package's top folders the tree has."""
    mapping = _links_at(repo, commit)
    if mapping is not None:
        return mapping, True

    def has(folder: str) -> list[str]:
        out = _git(repo, "ls-tree", "--name-only", "-z", commit, "--", f"{folder}/" if folder else ".")
        return [posixpath.basename(p) for p in out.decode().split("\0") if p]

    return _fallback(has, installed_top), False


def package_folders(repo: Path, commit: str, installed_top: list[str]) -> dict[str, str]:
    """Repository path -> package path of what the package is made of at `commit` (`at_commit`'s mapping, with
    setup.py's schema copies where the tree has its own layout): which package file, if any, a changed repository
    file is."""
    mapping, own = _mapping_at(repo, commit, installed_top)
    return {**{r: p for p, r in mapping.items()}, **(dict(SCHEMA_COPIES) if own else {})}


def _roots(mapping: dict[str, str]) -> tuple[str, ...]:
    """The top folders of the package a mapping covers, for the one line that says what came from the tree."""
    return tuple(
        sorted({p.split("/")[0] if not p.startswith("backends/") else "/".join(p.split("/")[:2]) for p in mapping})
    )


def at_commit(repo: Path, commit: str, installed_top: list[str]) -> tuple[PackageFiles, dict[str, bytes]]:
    """The package files of `commit` and their contents."""
    mapping, own = _mapping_at(repo, commit, installed_top)
    files: dict[str, str] = {}
    for package_path, repo_path in sorted(mapping.items()):
        for mode, blob, path in _ls(repo, commit, repo_path):
            rel = path[len(repo_path) :].lstrip("/")
            full = f"{package_path}/{rel}" if rel else package_path
            if mode != "120000" and is_package_file(full):
                files[full] = blob
    if own:
        for src, dst in SCHEMA_COPIES:
            rows = _ls(repo, commit, src)
            if rows:
                files[dst] = rows[0][1]
    contents = _read_blobs(repo, list(files.values()))
    return PackageFiles(_roots(mapping), files, own), contents


def in_working_tree(top: Path, installed_top: list[str]) -> PackageFiles:
    """The package files of a working tree as they are now (values are paths to copy)."""
    mapping = _links_in(top)
    own = mapping is not None
    if mapping is None:

        def has(folder: str) -> list[str]:
            base = top / folder if folder else top
            return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []

        mapping = _fallback(has, installed_top)
    files: dict[str, str] = {}
    for package_path, repo_path in sorted(mapping.items()):
        base = top / repo_path
        if base.is_file():
            if is_package_file(package_path):
                files[package_path] = str(base)
            continue
        for folder, dirs, names in os.walk(base):
            dirs[:] = [d for d in dirs if d not in SKIP_PARTS and not (Path(folder) / d).is_symlink()]
            for name in names:
                path = Path(folder) / name
                full = f"{package_path}/{path.relative_to(base).as_posix()}"
                if is_package_file(full) and not path.is_symlink():
                    files[full] = str(path)
    if own:
        for src, dst in SCHEMA_COPIES:
            if (top / src).is_file():
                files[dst] = str(top / src)
    return PackageFiles(_roots(mapping), files, own)
