"""Survivors shown equivalent (no observable change) or unreachable, read from policy data.

Each entry of `harness/policy/mutation_equivalents.toml` names a mutant by what it
changes, not by its index (indices move when the mutator or the file does): the
module, the function(s), the source line(s) it changes (stripped) and the change
(`operator description`, or `*` for any change on that line), and the `column`
(1-based, one or a list, as `mutate --list` prints it) where that change can be
made at several places of one line, with the reason that no case can observe it. A listed mutant that a case kills
stays killed:
the report then says the listing was wrong.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.config import ConfigError

POLICY = Path(__file__).resolve().parents[1] / "policy" / "mutation_equivalents.toml"
KINDS = ("equivalent", "unreachable", "defensive", "unexpressed")


@dataclass(frozen=True)
class Equivalent:
    module: str
    function: tuple[str, ...]  # the qualified names it covers
    source: tuple[str, ...]  # the stripped source lines it covers
    change: tuple[str, ...]  # "operator description" (one or a list) or "*"
    # equivalent: no observable change; unreachable: no graph the backend takes runs it; defensive: the condition or
    # the message of a raise for a malformed graph; unexpressed: reachable only by a graph the tiers cannot spell (the
    # reason names it and what was run to look for one)
    kind: str
    reason: str
    previous: str = ""  # the stripped line before, where two lines of a function read alike
    column: tuple[int, ...] = ()  # the 1-based columns of the changed nodes (Mutant.column), where the same
    # change can be made at several places of one line; empty: every place

    def matches(
        self,
        module: str,
        function: str,
        source: str,
        operator: str,
        description: str,
        previous: str = "",
        column: int = 0,
    ) -> bool:
        return (
            self.module == module
            and function in self.function
            and source.strip() in self.source
            and ("*" in self.change or f"{operator} {description}" in self.change)
            and (not self.previous or previous.strip() == self.previous)
            and (not self.column or column in self.column)
        )


@cache
def load(path: Path = POLICY) -> tuple[Equivalent, ...]:
    """The listed equivalents; ConfigError (one line) for an entry that lacks a field or has a bad kind."""
    entries = tomllib.loads(path.read_text()).get("equivalent", [])
    out = []
    for i, e in enumerate(entries):
        missing = [f for f in ("module", "function", "source", "change", "kind", "reason") if not e.get(f)]
        if missing:
            raise ConfigError(f"{path.name} entry {i + 1}: missing {', '.join(missing)}")
        if e["kind"] not in KINDS:
            raise ConfigError(f"{path.name} entry {i + 1}: invalid kind {e['kind']!r}; allowed: {', '.join(KINDS)}")
        fields = {k: e[k] for k in Equivalent.__dataclass_fields__ if k in e}
        if "column" in e:
            fields["column"] = tuple([e["column"]] if isinstance(e["column"], int) else e["column"])
        for key in ("function", "source", "change"):  # one or a list
            fields[key] = tuple(v.strip() for v in ([e[key]] if isinstance(e[key], str) else e[key]))
        out.append(Equivalent(**fields))
    return tuple(out)


def lookup(
    module: str,
    function: str,
    source: str,
    operator: str,
    description: str,
    listed: tuple[Equivalent, ...] | None = None,
    previous: str = "",
    column: int = 0,
) -> Equivalent | None:
    """The entry naming this change, if any; `previous` is the line before the changed one."""
    for e in load() if listed is None else listed:
        if e.matches(module, function, source, operator, description, previous, column):
            return e
    return None


def lookup_at(
    module: str,
    function: str,
    line: int,
    operator: str,
    description: str,
    lines: list[str],
    listed: tuple[Equivalent, ...] | None = None,
    column: int = 0,
) -> Equivalent | None:
    """`lookup` of the change at 1-based `line` of the module's source `lines` (and the line before it)."""
    previous = lines[line - 2] if line > 1 else ""
    return lookup(module, function, lines[line - 1], operator, description, listed, previous, column)
