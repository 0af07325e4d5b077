"""The known-issue registry: data in known_issues.toml, loaded once.

A registry entry turns a failing outcome into `known_issue` with its reason.
It matches a case by a regex over the descriptor and, optionally, `fields`:
config attributes or properties (e.g. `asymmetric_padding`) and the values
they may take.
It is strict: a matching case that passes is reported as fixed, so the
entry gets removed rather than silently hiding a later regression.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

REGISTRY = Path(__file__).with_name("known_issues.toml")


class RegistryError(ValueError):
    """A malformed registry entry (one line naming the entry and the field)."""


@dataclass(frozen=True)
class KnownIssue:
    id: str
    descriptor: re.Pattern
    outcomes: tuple[str, ...]
    reason: str
    link: str
    fields: tuple[tuple[str, tuple], ...] = ()  # config attribute -> allowed values

    def matches(self, descriptor: str) -> bool:
        if self.descriptor.search(descriptor) is None:
            return False
        if not self.fields:
            return True
        from harness.config import parse_descriptor

        config = parse_descriptor(descriptor)
        return all(getattr(config, name) in allowed for name, allowed in self.fields)


def parse_registry(text: str, source: str = "registry") -> tuple[KnownIssue, ...]:
    from harness.results import Outcome

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RegistryError(f"{source}: not valid TOML: {e}") from e
    issues = []
    allowed = {o.value for o in Outcome} - {"pass", "known_issue"}
    from harness.config import ConvConfig

    known_fields = set(ConvConfig.__dataclass_fields__) | {
        n for n, v in vars(ConvConfig).items() if isinstance(v, property)
    }
    for i, entry in enumerate(data.get("issue", [])):
        where = f"{source} issue #{i + 1} ({entry.get('id', '?')})"
        for key in ("id", "descriptor", "outcomes", "reason", "link"):
            if key not in entry:
                raise RegistryError(f"{where}: missing field {key!r}")
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
        issues.append(
            KnownIssue(entry["id"], pattern, tuple(entry["outcomes"]), " ".join(entry["reason"].split()), entry["link"], tuple(fields))
        )
    return tuple(issues)


@lru_cache(maxsize=None)
def registry() -> tuple[KnownIssue, ...]:
    return parse_registry(REGISTRY.read_text(encoding="utf-8"), str(REGISTRY))


def known_issue(descriptor: str) -> KnownIssue | None:
    for issue in registry():
        if issue.matches(descriptor):
            return issue
    return None
