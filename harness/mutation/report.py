"""The mutation report's model: each mutant's result and status, the report and its two scores. The runner
(`run.py`) fills it, the renderer (`render.py`) writes it, `merge.py` joins pieces of it."""

from __future__ import annotations

from dataclasses import dataclass, field

STATUSES = ("killed", "survived", "masked", "equivalent", "unreached", "invalid")


@dataclass
class MutantResult:
    name: str
    function: str
    line: int
    operator: str
    description: str
    status: str  # killed, survived, unreached, equivalent, invalid
    cases_run: int = 0
    killed_by: str = ""
    outcome: str = ""
    reason: str = ""
    diff: str = ""
    carried: bool = False  # killed in an earlier report by a case this tier still has: not run again
    outputs_changed: int = 0  # green cases whose output bits differ from the unmutated run's: the tolerance hid it
    changed_case: str = ""  # the first of them
    judged: int = 0  # cases the oracle judged (not ended by a known issue or a documented rejection)
    masked_by: str = ""  # the known issues and rejections that ended its unjudged cases, comma-separated
    column: int = 0  # the changed node's 1-based column (Mutant.column)


@dataclass
class MutationReport:
    tier: str
    modules: list[str]
    versions: dict
    wall_s: float = 0.0
    mutants: list[MutantResult] = field(default_factory=list)
    fraction: float = 1.0  # a seeded uniform sample of each module's mutants
    seed: int = 0
    not_green: list[str] = field(default_factory=list)  # cases not green without a mutant: they judge none
    undecided: list[str] = field(default_factory=list)  # mutants no piece of a merged report decided (merge.py)

    def counts(self, module: str | None = None, operator: str | None = None) -> dict[str, int]:
        rows = [
            m
            for m in self.mutants
            if (module is None or m.name.split(":")[1] == module) and (operator is None or m.operator == operator)
        ]
        return {s: sum(1 for m in rows if m.status == s) for s in STATUSES}

    def score(self, module: str | None = None, operator: str | None = None) -> float | None:
        """killed / the mutants that ran and were not shown equivalent; None when none did."""
        c = self.counts(module, operator)
        counted = c["killed"] + c["survived"] + c["masked"]
        return round(c["killed"] / counted, 4) if counted else None

    def conventional_score(self, module: str | None = None, operator: str | None = None) -> float | None:
        """killed / (all - equivalent - invalid), the score the literature reports: an unreached mutant counts
        as not killed. Shown beside `score`, which leaves the unreached apart."""
        c = self.counts(module, operator)
        counted = sum(c.values()) - c["equivalent"] - c["invalid"]
        return round(c["killed"] / counted, 4) if counted else None

    def operators(self) -> list[str]:
        return sorted({m.operator for m in self.mutants})
