"""A run proves its environment: control cases that must pass and a canary that must be caught.

The controls and the canary go first into the same workers as the run's own
cases (`tasks`), so they cost no extra start-up; a control that is also a case
of the run serves as both. Their results are checked as they arrive: a control
that does not pass (a skip is fine: the runner is absent here) or a canary that
is not caught raises `EnvironmentBroken`, which stops the run with its own exit
code; a canary that cannot be applied to this ExecuTorch (its anchor moved in a
source tree: a harness error) is said, not failed. Only the run's own cases are
recorded; the proof's are in its one line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from harness.config import parse_descriptor
from harness.policy.controls import CANARY_CASES, CONTROLS, PROOF_CANARY
from harness.policy.targets import check_case, get_target
from harness.results.case_result import CaseResult
from harness.schedule.parallel import Task


class EnvironmentBroken(RuntimeError):
    """A control failed or the canary was missed: the harness or this environment, not the backend."""


def _fits(target: str, descriptor: str) -> bool:
    try:
        check_case(get_target(target), parse_descriptor(descriptor))
        return True
    except ValueError:
        return False


@dataclass
class Proof:
    target: str
    controls: tuple[str, ...]
    canary_case: str
    seen: dict[str, str] = field(default_factory=dict)  # control -> its actual outcome
    canary: str = ""  # the canary case's actual outcome ('' until it ends)

    @classmethod
    def for_target(cls, target: str) -> Proof:
        controls = tuple(d for d in CONTROLS if _fits(target, d))
        canary_case = next((d for d in CANARY_CASES.values() if _fits(target, d)), "")
        return cls(target, controls, canary_case)

    def tasks(self, tier: set[str]) -> list[Task]:
        """The proof's tasks, to run before the tier's: the controls the tier does not hold, and the canary."""
        out = [Task((d,)) for d in self.controls if d not in tier]
        return out + ([Task((self.canary_case,), PROOF_CANARY)] if self.canary_case else [])

    def take(self, r: CaseResult) -> bool:
        """Check a result that belongs to the proof; True if it does. EnvironmentBroken when it fails it."""
        if r.canary == PROOF_CANARY and r.descriptor == self.canary_case:
            self.canary = r.actual_outcome
            if r.actual_outcome in ("pass", "mistrusted"):
                raise EnvironmentBroken(
                    f"the harness or this environment is broken: the canary {PROOF_CANARY} was "
                    f"not caught on {r.descriptor} (it ended in {r.actual_outcome}); nothing "
                    "was blamed on the backend"
                )
            return True
        if not r.canary and r.descriptor in self.controls:
            self.seen[r.descriptor] = r.actual_outcome
            if r.actual_outcome not in ("pass", "skipped"):
                raise EnvironmentBroken(
                    f"the harness or this environment is broken: the control {r.descriptor} "
                    f"ended in {r.actual_outcome} ({(r.reason or '')[:200]}); nothing was "
                    "blamed on the backend"
                )
            return True
        return False

    def line(self) -> str:
        """What the proof showed, in one line."""
        passed = sum(1 for o in self.seen.values() if o == "pass")
        skipped = sum(1 for o in self.seen.values() if o == "skipped")
        parts = [f"{passed} of {len(self.controls)} controls passed" + (f", {skipped} skipped" if skipped else "")]
        if self.canary == "harness_error":
            parts.append(f"the canary {PROOF_CANARY} cannot be applied to this ExecuTorch (its anchor moved)")
        elif self.canary == "skipped":
            parts.append(f"the canary {PROOF_CANARY} was skipped (the runner is absent)")
        elif self.canary:
            parts.append(f"the canary {PROOF_CANARY} was caught ({self.canary})")
        return "environment: " + "; ".join(parts)


def prove_here(target: str, run: Callable[[str, str], CaseResult]) -> Proof:
    """The proof run in this process, one case after the other (`run(descriptor, canary)`: its result), for a
    run whose cases are not this module's tasks (a pytest session). EnvironmentBroken when it fails."""
    proof = Proof.for_target(target)
    for task in proof.tasks(set()):
        proof.take(run(task.descriptors[0], task.canary))
    return proof


EXECUTED = ("pass", "mismatch", "mistrusted", "runner_error")  # the runner ran the program (or refused it)


def nothing_ran(results: list[CaseResult]) -> str:
    """'' when some case ran on the target's runner; else one line saying why none did. A run whose cases were
    all skipped (the runner is absent here) or refused before it, with some skipped, proves nothing."""
    if not results:
        return "no case ran: the selection is empty"
    skipped = [r for r in results if r.actual_outcome == "skipped"]
    if not skipped or any(r.actual_outcome in EXECUTED for r in results):
        return ""
    reasons = "; ".join(sorted({(r.reason or "")[:160] for r in skipped})[:2])
    before = len(results) - len(skipped)
    return f"no case ran on the target's runner: {len(skipped)} of {len(results)} skipped ({reasons})" + (
        f", {before} ended before it (refused or failed in the lowering)" if before else ""
    )
