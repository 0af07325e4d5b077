"""Which cases a sweep lowers together, and how many at once: policy as data.

A pack lowers and runs many cases as one program (`harness.run.packed`);
that each case's result is the one it has alone is proven case by case over
the smoke tier's packs (tests/schedule/test_packing.py: in CI the packs that hold
every fact a pack can differ by; `--every-pack`, all). Only what that proof covers
is packed; the rest runs alone:

* targets of the generic TOSA family. An Ethos-U target's Vela compile reports
  its facts (cycles, SRAM, CPU fallbacks) for the whole program, not per case.
* no control flow: a torch.cond is lowered with the cf extension into regions.
* generated data: a `captured` case replays one model's conv on its own.
* no documented rejection, and no registered known issue but a wrong number:
  a case expected to be refused, to crash or to stay on the CPU would stop
  its whole pack. A known mismatch is judged on its own output like any case.

Size. Measured here (benchmarks/bench_per_case.py): an a8w8 case's share of a
pack's lowering falls from 0.67 s alone to 0.37 s at 8 cases and 0.36 s at 16;
an fp32 case's from 0.71 s to 0.24 s at 8 and 0.18 s at 16, hardly less at 32.
16 takes nearly all of the gain while a pack that fails costs 16 cases re-run
alone. `PACK_ELEMENTS` keeps a pack's tensors within one case's memory share
(harness/policy/limits.py): elements moved, summed over the pack.
"""

from __future__ import annotations

from harness.policy.limits import MAX_CASE_ELEMENTS
from harness.policy.targets import CONTROL_FLOW_CONTEXTS

PACK_SIZE = 16
PACK_ELEMENTS = MAX_CASE_ELEMENTS // 4
PACKABLE_FAMILIES = ("tosa",)
UNPACKABLE_CONTEXTS = tuple(CONTROL_FLOW_CONTEXTS)
PACKABLE_OUTCOMES = frozenset({"mismatch"})  # the known issues a pack may hold
