"""What a mutation campaign is asked to do, as one value: which mutants, against which cases, run how, kept where.

`harness.mutation.run.mutate` takes one; `python -m harness mutate` builds it from its options, a test from the
few fields it needs. Frozen: a campaign is what was asked, and its journal key and report must match it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.policy.packing import PACK_SIZE


@dataclass(frozen=True, kw_only=True)
class Campaign:
    tier: str = "smoke"
    # which mutants
    modules: tuple[str, ...] = ()  # none: the policy's default modules
    function: str | None = None  # a regex over the mutated function's qualified name
    names: frozenset[str] = frozenset()  # only these mutants (none: all that the rest selects)
    limit: int | None = None  # at most this many per module, in listing order
    fraction: float = 1.0  # a seeded sample of what the rest selects
    seed: int = 0
    # against which cases
    filter: str | None = None  # a descriptor regex over the tier's cases
    cases: frozenset[str] | None = None  # only the tier's cases with these descriptors
    # run how
    jobs: int = 2
    pack: int = PACK_SIZE
    trace_pack: int = 1
    cluster: str = ""  # a Ray cluster's address ('local' starts one here with `jobs` CPUs)
    # kept where, and what an earlier run left
    out: Path = Path("reports/mutate")
    carry: Path | None = None  # an earlier report whose kills stand
    resume: bool = False  # take the verdicts an interrupted run with the same key left in `out`'s journal
