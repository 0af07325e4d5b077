"""A stand-in per-case function for the recycling test: no torch, and every
case leaks 64 MiB into the worker, as a cache that never clears would."""

from __future__ import annotations

from harness.results.case_result import CaseResult, Outcome

_LEAK: list[bytearray] = []


def run_case(config, settings) -> CaseResult:
    seed, target, run_id = settings.seed, settings.target, settings.run_id
    _LEAK.append(bytearray(64 << 20))
    for i in range(0, len(_LEAK[-1]), 4096):  # touch every page: resident, not just reserved
        _LEAK[-1][i] = 1
    return CaseResult(
        config.descriptor, seed, Outcome.PASS, target=target, run_id=run_id, metrics={"leaked": len(_LEAK)}
    )
