"""The last stage: what happened to a case -> the outcome its result reports.

A pure function of the config and an `Observation`, given the documented
rejections (`harness.expectations.rejections`) and the known-issue registry
(`harness/expectations/known_issues.toml`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.config import ConvConfig
from harness.expectations.applies import Backend, or_current
from harness.expectations.known_issues import known_issues
from harness.expectations.rejections import expected_rejection
from harness.results.case_result import Outcome
from harness.results.stages import LOWERING_STAGES


@dataclass
class Observation:
    """What happened to a case, before documented rejections and the registry have their say."""

    outcome: Outcome
    reason: str = ""
    rule: str = ""  # the judging rule, for a judged case
    metrics: dict = field(default_factory=dict)
    stage: str = ""  # the stage that failed, if one did
    error: str = ""  # the failure's whole message (the wrapper's and its root cause's)
    error_type: str = ""  # the class of the exception at the root of it
    frames: tuple[str, ...] | None = None  # where in torch or ExecuTorch it arose, innermost first; None: unknown


@dataclass
class Classification:
    outcome: Outcome
    reason: str
    actual_outcome: str
    rejection: str = ""
    issue: str = ""
    stale: str = ""


def classify(
    config: ConvConfig, seen: Observation, family: str = "tosa", backend: Backend | None = None
) -> Classification:
    """The outcome a result reports. A documented rejection turns a clean
    refusal (left on the CPU, or an error in quantize/lower, whose message is the
    rule's) into `expected_rejection`; a registry entry whose signature fits turns a
    failure into `known_issue`. A failure of a registered case outside its entries'
    signatures stays a failure, and its reason says so. An expectation that no longer
    holds (a rejected config that passes, a strict known issue that passes) is `stale`.
    `family`: the target's ('tosa', 'ethos-u55', ...), for rules and entries of some
    targets only; `backend`: the ExecuTorch it ran on (None: this process's)."""
    outcome, rejection, stale = seen.outcome, "", ""
    matching = known_issues(config.descriptor, family, backend)
    rule = expected_rejection(config, family, backend)
    if rule is not None:

        def accounted(op: str, said: str) -> bool:  # another node left out, by a registered known issue of the case
            return any(i.left_on_cpu and i.leaves_exactly({op: said}) for i in matching)

        refused = (seen.outcome is Outcome.NOT_DELEGATED and rule.refuses(seen.reason, seen.error, accounted)) or (
            seen.outcome is Outcome.LOWERING_ERROR and seen.stage in LOWERING_STAGES and rule.matches_error(seen.error)
        )
        if refused:
            outcome, rejection = Outcome.EXPECTED_REJECTION, rule.name
        elif seen.outcome is Outcome.PASS:
            rejection = rule.name
            stale = f"expected rejection {rule.name} did not happen: the backend now supports it; update the rule"
    result = Classification(outcome, seen.reason, seen.outcome.value, rejection, stale=stale)
    issue = next((i for i in matching if i.explains(outcome.value, seen.metrics, seen.reason, seen.frames)), None)
    if issue is not None:
        result.outcome, result.issue = Outcome.KNOWN_ISSUE, issue.id
        placed = issue.holds.basis(or_current(backend))
        if placed:  # a source tree: say whether its history or only its version label placed it
            result.reason = f"{seen.reason} [{placed}]"
    elif outcome is Outcome.PASS:
        strict = [i for i in matching if i.strict]
        if strict:
            result.issue = strict[0].id
            result.stale = f"known issue {strict[0].id} no longer reproduces: remove it from the registry"
    elif matching and outcome.value in {o for i in matching for o in i.outcomes}:
        ids = ", ".join(i.id for i in matching)
        result.reason = f"{seen.reason} [a new failure: outside the signature of {ids}]"
    return result
