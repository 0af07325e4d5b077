"""Cases asked for one at a time, computed a pack at a time: the pytest plugin's scheduler (no pytest here).

A test runner asks for each case's result in its own order. The first time
any case of a pack is asked for, the whole pack is lowered and run as one
program (`harness.run.packed.run_pack`, which re-runs alone every case whose
packed result is not green), and its other cases' results wait here until
they are asked for. A case in no pack, or in a pack of one, runs alone. A
result is handed out once: a case asked for again (a rerun plugin) runs again,
alone. Every computation runs on a shallow stack (`harness.run.shallow_stack`):
a test runner asks from deep in its own, and export pays for every frame.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.config import ConvConfig
from harness.results.case_result import CaseResult
from harness.run import shallow_stack
from harness.run.settings import CaseFunction, PackFunction, RunSettings


def default_functions() -> tuple[CaseFunction, PackFunction]:
    """The run path's own case and pack functions (imported here: they import torch and ExecuTorch)."""
    from harness.run.execute import run_configured
    from harness.run.packed import run_pack

    return run_configured, run_pack


@dataclass
class OnDemandPacks:
    """Results by descriptor, a pack computed when its first case is asked for."""

    packs: Sequence[Sequence[ConvConfig]]  # each case in at most one; a case in none runs alone
    settings: RunSettings
    functions: Callable[[], tuple[CaseFunction, PackFunction]] = default_functions
    computed: int = 0  # programs lowered so far (a pack counts once)
    _pack_of: dict[str, int] = field(default_factory=dict)
    _waiting: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))
    _done: set[int] = field(default_factory=set)

    def __post_init__(self):
        for index, pack in enumerate(self.packs):
            for c in pack:
                self._pack_of.setdefault(c.descriptor, index)

    def result(self, config: ConvConfig) -> CaseResult:
        """`config`'s result: waiting from its pack, or computed now (its pack, or it alone)."""
        waiting = self._waiting[config.descriptor]
        if waiting:
            return waiting.popleft()
        run_case, run_pack = self.functions()
        index = self._pack_of.get(config.descriptor)
        pack = self.packs[index] if index is not None and index not in self._done else ()
        self.computed += 1
        if len(pack) < 2:
            return shallow_stack.call(run_case, config, self.settings)
        self._done.add(index)
        for c, r in zip(pack, shallow_stack.call(run_pack, list(pack), self.settings)):
            self._waiting[c.descriptor].append(r)
        return self._waiting[config.descriptor].popleft()

    def unclaimed(self) -> list[CaseResult]:
        """The results computed with their pack but never asked for (a run stopped by -x, or interrupted),
        handed out now: they ran, so they are kept."""
        left = [r for q in self._waiting.values() for r in q]
        self._waiting.clear()
        return left
