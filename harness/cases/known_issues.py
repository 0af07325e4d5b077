"""The known-issue registry: data in known_issues.toml, loaded once.

A registry entry turns a failing outcome into `known_issue` with its reason.
It matches a case by a regex over the descriptor and, optionally, `fields`:
config attributes or properties (e.g. `asymmetric_padding`) and the values
they may take.
It is strict: a matching case that passes is reported as fixed, so the
entry gets removed rather than silently hiding a later regression.

Optional keys narrow an entry further: `error`, a regex the case's reason
must match (so a lowering error explains only that crash, not any crash of
the same config); and, for bugs that only show on some data,
`border_only = true` explains a mismatch only if every differing element
is on the border (the harness localizes mismatches), so an interior error in
the same config still fails; `strict = false` lets a matching case pass
without being reported as fixed (say why in the reason).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness.cases.sweeps import SWEEPS
from harness.config import ConvConfig, parse_descriptor
from harness.results.case_result import Outcome

REGISTRY = Path(__file__).with_name("known_issues.toml")


class RegistryError(ValueError):
    """A malformed registry entry (one line naming the entry and the field)."""


@dataclass(frozen=True)
class KnownIssue:
    id: str
    tier: str  # the smallest sweep that reproduces it (a test keeps it true)
    descriptor: re.Pattern
    outcomes: tuple[str, ...]
    reason: str
    link: str
    fields: tuple[tuple[str, tuple], ...] = ()  # config attribute -> allowed values
    strict: bool = True  # a matching case that passes is reported as fixed
    border_only: bool = False  # explains a mismatch only if it is all on the border
    error: re.Pattern | None = None  # the reason must match this
    families: tuple[str, ...] = ()  # target families it is seen on ('tosa', 'ethos-u55', ...); () = every target

    def explains(self, outcome: str, metrics: dict, reason: str = "") -> bool:
        """Whether this entry accounts for a case that ended in `outcome`."""
        if outcome not in self.outcomes:
            return False
        if self.error is not None and self.error.search(reason) is None:
            return False
        if self.border_only and outcome == "mismatch":
            where = metrics.get("where")
            return bool(where) and where.get("interior") == 0
        return True

    def matches(self, descriptor: str, family: str | None = None) -> bool:
        if family is not None and self.families and family not in self.families:
            return False
        if self.descriptor.search(descriptor) is None:
            return False
        if not self.fields:
            return True
        config = parse_descriptor(descriptor)
        return all(getattr(config, name) in allowed for name, allowed in self.fields)


def parse_registry(text: str, source: str = "registry") -> tuple[KnownIssue, ...]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RegistryError(f"{source}: not valid TOML: {e}") from e
    issues = []
    allowed = {o.value for o in Outcome} - {"pass", "known_issue"}
    known_fields = set(ConvConfig.__dataclass_fields__) | {
        n for n, v in vars(ConvConfig).items() if isinstance(v, property)
    }
    for i, entry in enumerate(data.get("issue", [])):
        where = f"{source} issue #{i + 1} ({entry.get('id', '?')})"
        for key in ("id", "tier", "descriptor", "outcomes", "reason", "link"):
            if key not in entry:
                raise RegistryError(f"{where}: missing field {key!r}")
        if entry["tier"] not in SWEEPS:
            raise RegistryError(f"{where}: unknown tier {entry['tier']!r}; tiers: {', '.join(SWEEPS)}")
        fields = []
        for name, wanted in entry.get("fields", {}).items():
            if name not in known_fields:
                raise RegistryError(f"{where}: unknown config field {name!r} in fields")
            values = wanted if isinstance(wanted, list) else [wanted]
            fields.append((name, tuple(tuple(v) if isinstance(v, list) else v for v in values)))
        try:
            pattern = re.compile(entry["descriptor"])
        except re.error as e:
            raise RegistryError(f"{where}: bad descriptor regex {entry['descriptor']!r}: {e}") from e
        bad = [o for o in entry["outcomes"] if o not in allowed]
        if bad:
            raise RegistryError(f"{where}: unknown outcome(s) {bad}; allowed: {', '.join(sorted(allowed))}")
        flags: dict = {}
        if "error" in entry:
            try:
                flags["error"] = re.compile(entry["error"])
            except re.error as e:
                raise RegistryError(f"{where}: bad error regex {entry['error']!r}: {e}") from e
        if "families" in entry:
            families = entry["families"]
            if not isinstance(families, list) or not all(isinstance(f, str) for f in families):
                raise RegistryError(f"{where}: families must be a list of target families, not {families!r}")
            flags["families"] = tuple(families)
        for key in ("strict", "border_only"):
            if key in entry:
                if not isinstance(entry[key], bool):
                    raise RegistryError(f"{where}: {key} must be true or false, not {entry[key]!r}")
                flags[key] = entry[key]
        issues.append(
            KnownIssue(entry["id"], entry["tier"], pattern, tuple(entry["outcomes"]), " ".join(entry["reason"].split()), entry["link"],
                       tuple(fields), **flags)
        )
    return tuple(issues)


@lru_cache(maxsize=None)
def registry() -> tuple[KnownIssue, ...]:
    return parse_registry(REGISTRY.read_text(encoding="utf-8"), str(REGISTRY))


def known_issues(descriptor: str, family: str | None = None) -> tuple[KnownIssue, ...]:
    """Every registry entry that matches (on a target of `family`, if given), in registry order (a case can
    hit two issues, e.g. a ReLU6 that is not delegated and a dynamic-shape pad)."""
    return tuple(issue for issue in registry() if issue.matches(descriptor, family))


def known_issue(
    descriptor: str, outcome: str | None = None, metrics: dict | None = None, reason: str = "",
    family: str | None = None,
) -> KnownIssue | None:
    """The first matching entry; with `outcome` (and the case's `metrics` and
    `reason`), the first that explains it."""
    for issue in known_issues(descriptor, family):
        if outcome is None or issue.explains(outcome, metrics or {}, reason):
            return issue
    return None


def entry(issue_id: str) -> KnownIssue | None:
    """The registry entry with this id, if it is still there."""
    return next((i for i in registry() if i.id == issue_id), None)
