"""A stand-in per-case function for the proof tests: no torch; every case passes and the canary is caught,
unless the run's seed says otherwise (it travels to the workers with the settings): 1, every control case
fails; 2, the canary passes; 3, every case is skipped."""

from __future__ import annotations

from harness.policy.controls import CONTROLS
from harness.results.case_result import CaseResult, Outcome


def run_case(config, settings) -> CaseResult:
    broken = {1: "control", 2: "canary", 3: "skip"}.get(settings.seed, "")
    if settings.canary:
        outcome = Outcome.PASS if broken == "canary" else Outcome.MISMATCH
    elif broken == "control" and config.descriptor in CONTROLS:
        outcome = Outcome.LOWERING_ERROR
    elif broken == "skip":
        outcome = Outcome.SKIPPED
    else:
        outcome = Outcome.PASS
    return CaseResult(
        config.descriptor,
        settings.seed,
        outcome,
        target=settings.target,
        run_id=settings.run_id,
        canary=settings.canary,
        rule="dot-product",
        reason="stand-in",
        metrics={},
        timings_s={"total": 0.01},
    )
