"""The stages of a case, in order: the one definition of their names (a result's `stage`, its `timings_s` keys).

build (tensors and module) -> quantize (PT2E, for an INT scheme) -> lower -> run (on the target's runner) ->
judge (against the references). `HARNESS` names a failure outside every stage. Results written before the
judge stage had its name call it `compare` (LEGACY).
"""

from __future__ import annotations

BUILD, QUANTIZE, LOWER, RUN, JUDGE = "build", "quantize", "lower", "run", "judge"
STAGES = (BUILD, QUANTIZE, LOWER, RUN, JUDGE)
LOWERING_STAGES = (QUANTIZE, LOWER)  # where an error may be a clean, documented refusal
HARNESS = "harness"
LEGACY = {"compare": JUDGE}


def stage_seconds(timings: dict, stage: str) -> float:
    """A stage's seconds in a result's timings, its legacy name included."""
    return timings.get(stage, 0.0) + sum(timings.get(old, 0.0) for old, new in LEGACY.items() if new == stage)
