"""For which ExecuTorch an expectation holds: a range of releases, and for source trees a range of commits.

Every registry entry and documented rejection names the releases it holds for
(`executorch`, a PEP 440 specifier set such as ">=1.4.0" or "==1.5.*"). A source
tree is placed by its `version.txt` (e.g. a main branch that says 1.5.0 counts as
1.5.0), and an entry may narrow that by commits: `introduced_by` (the tree must
contain that commit) and `fixed_by` (a tree that contains it is past the bug).
Which of those commits a tree contains is decided by git when its overlay is
built (`harness.overlays`), so classification never runs git.

On a backend an expectation does not hold for, a case it would have explained
is judged on its own: a failure there is a new failure, and a pass is no news.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class Backend:
    """The ExecuTorch a case runs against, as expectations see it."""

    version: str  # the release, or a source tree's version.txt
    tree: str = ""  # 'path@commit' for a source tree
    ancestors: tuple[tuple[str, bool], ...] = ()  # for a tree: (commit named by an expectation, in its history?)

    def contains(self, commit: str) -> bool | None:
        """Whether the tree's history holds `commit` (None: not known here, or not a tree)."""
        for c, inside in self.ancestors:
            if c.startswith(commit) or commit.startswith(c):
                return inside
        return None

    @property
    def label(self) -> str:
        return self.tree or self.version


ANY = Backend("any")


def _placed_version(backend: Backend) -> Version | None:
    """A release's version; for a source tree, its version.txt as the release it leads to: main's version.txt
    names the next release, so a tree is that release's development (1.5.0 -> 1.5.0.dev0), before any of its
    release candidates and the release itself, which have fixes main may not have yet."""
    try:
        version = Version(backend.version)
    except InvalidVersion:
        return None
    if backend.tree and not version.is_prerelease and not version.is_devrelease:
        return Version(f"{version.base_version}.dev0")
    return version


_UPPER = ("<", "<=", "!=")
_ORDER = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _satisfies(releases: SpecifierSet, version: Version) -> bool:
    """Plain ordering for a tree's development version: PEP 440's '<1.5.0' leaves out 1.5.0.dev0 on purpose (a
    user asking for less than 1.5.0 does not want its pre-releases), but main before 1.5.0 is below it."""
    return all(
        _ORDER[s.operator](version, Version(s.version))
        if s.operator in _ORDER
        else s.contains(version, prereleases=True)
        for s in releases
    )


def _split(releases: SpecifierSet) -> tuple[SpecifierSet, SpecifierSet]:
    """A specifier set's lower bounds (and exact pins) and its upper bounds: history can stand in for either."""
    lower = SpecifierSet(",".join(str(s) for s in releases if s.operator not in _UPPER))
    upper = SpecifierSet(",".join(str(s) for s in releases if s.operator in _UPPER))
    return lower, upper  # no version to place: every expectation holds (for listings not about one backend)


@dataclass(frozen=True)
class Holds:
    """Where an expectation holds: releases, optionally narrowed by commits for source trees."""

    releases: SpecifierSet
    introduced_by: str = ""
    fixed_by: str = ""

    def __call__(self, backend: Backend | None) -> bool:
        """True on `backend` (None: on any, for listings that are not about one backend)."""
        if backend is None:
            return True
        version = _placed_version(backend)
        if version is None:
            return True  # a tree whose version.txt says nothing usable: only the commits can exclude it
        if not backend.tree:
            return self.releases.contains(version, prereleases=True)
        lower, upper = _split(self.releases)
        after = backend.contains(self.introduced_by) if self.introduced_by else None
        until = backend.contains(self.fixed_by) if self.fixed_by else None
        lower_ok = after if after is not None else _satisfies(lower, version)
        upper_ok = (not until) if until is not None else _satisfies(upper, version)
        return bool(lower_ok and upper_ok)

    def basis(self, backend: Backend | None) -> str:
        """How a source tree was placed for this expectation: by its history (the commits it contains) where they
        are known, else by its version label; '' for a release."""
        if backend is None or not backend.tree:
            return ""
        lower, upper = _split(self.releases)
        history = {c: backend.contains(c) for c in (self.introduced_by, self.fixed_by) if c}
        known = [f"{'contains' if inside else 'lacks'} {c[:12]}" for c, inside in history.items() if inside is not None]
        label_used = (len(lower) and history.get(self.introduced_by) is None) or (
            len(upper) and history.get(self.fixed_by) is None
        )
        label = f"version label {_placed_version(backend)}"
        if not label_used:
            return f"placed by history: {', '.join(known)}"
        return (
            f"placed by history ({', '.join(known)}) and {label}"
            if known
            else f"placed by {label}: no commit of it known in the tree's history"
        )

    def __str__(self) -> str:
        commits = "".join(f", {k} {v[:12]}" for k, v in (("after", self.introduced_by), ("until", self.fixed_by)) if v)
        return f"executorch {self.releases}{commits}"


def holds(executorch: str, introduced_by: str = "", fixed_by: str = "", where: str = "") -> Holds:
    """Parse an expectation's applicability; ValueError (one line, naming `where`) for a bad specifier or commit."""
    if not isinstance(executorch, str) or not executorch.strip():
        raise ValueError(f"{where}: executorch must name the releases it holds for, e.g. '>=1.4.0' (PEP 440)")
    try:
        releases = SpecifierSet(executorch)
    except InvalidSpecifier:
        raise ValueError(
            f"{where}: executorch={executorch!r} is not a PEP 440 specifier set (e.g. '>=1.4.0,<1.6')"
        ) from None
    for name, commit in (("introduced_by", introduced_by), ("fixed_by", fixed_by)):
        if commit and not (
            isinstance(commit, str) and 7 <= len(commit) <= 40 and all(ch in "0123456789abcdef" for ch in commit)
        ):
            raise ValueError(f"{where}: {name}={commit!r} is not a commit hash (7 to 40 hex digits)")
    return Holds(releases, introduced_by, fixed_by)


def backend_of(versions: dict, marker: dict) -> Backend:
    """The backend a run's versions (and its overlay marker, if any) describe."""
    if marker.get("kind") == "tree":
        commit = marker.get("commit", "")
        tree = f"{marker.get('source', '?')}@{commit[:12]}{'+dirty' if marker.get('dirty') else ''}"
        return Backend(
            marker.get("version") or versions.get("executorch", ""),
            tree,
            tuple(sorted(marker.get("ancestors", {}).items())),
        )
    return Backend(versions.get("executorch", ""))


@cache
def current() -> Backend:
    """The backend of this process: the ExecuTorch on its import path (an overlay's marker says which)."""
    from harness.overlays import marker
    from harness.results.case_result import versions

    return backend_of(versions(), marker())


def or_current(backend: Backend | None) -> Backend:
    """`backend`, or when None the ExecuTorch this process runs against."""
    return current() if backend is None else backend
