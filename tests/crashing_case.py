"""A stand-in per-case function for tests/schedule/test_parallel.py: no torch, and it
kills its own process on the descriptors a test picks."""

from __future__ import annotations

import os

from harness.results.case_result import CaseResult, Outcome


def run_case(config, settings) -> CaseResult:
    seed, target, run_id = settings.seed, settings.target, settings.run_id
    if config.in_channels == 3:
        os._exit(3)  # as a segfault in native code would end the worker
    return CaseResult(config.descriptor, seed, Outcome.PASS, target=target, run_id=run_id)


def run_pack(configs, settings) -> list[CaseResult]:
    """A pack dies as a whole if one of its cases would."""
    seed, target, run_id = settings.seed, settings.target, settings.run_id
    if any(c.in_channels == 3 for c in configs):
        os._exit(3)
    return [
        CaseResult(c.descriptor, seed, Outcome.PASS, target=target, run_id=run_id, packed=len(configs)) for c in configs
    ]
