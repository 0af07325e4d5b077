"""A stand-in per-case function for the time-limit tests: no torch, and it
hangs (as a deadlock in native code would) on the descriptors a test picks."""

from __future__ import annotations

import time

from harness.results.case_result import CaseResult, Outcome


def run_case(config, settings) -> CaseResult:
    seed, target, run_id = settings.seed, settings.target, settings.run_id
    if config.in_channels == 3:
        time.sleep(3600)
    return CaseResult(config.descriptor, seed, Outcome.PASS, target=target, run_id=run_id)


def run_pack(configs, settings) -> list[CaseResult]:
    """A pack hangs as a whole if one of its cases would."""
    seed, target, run_id = settings.seed, settings.target, settings.run_id
    if any(c.in_channels == 3 for c in configs):
        time.sleep(3600)
    return [
        CaseResult(c.descriptor, seed, Outcome.PASS, target=target, run_id=run_id, packed=len(configs)) for c in configs
    ]
