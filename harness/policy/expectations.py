"""How a registered mismatch's bounds follow from what was measured.

A registry entry for a wrong number explains a mismatch only up to bounds
taken from the worst case measured over every case it covers (smoke and the
nightly cases it matches, every release it holds for, seeds 0-4), with a
margin. The margin is empirical: a registered mismatch is a bug's size on some
data, and the data move with the seed. Measured on ExecuTorch 1.5.1 over the
195 mismatching cases of the seven mismatch entries at seeds 0-4: a case's own
worst LSB moves up to 21x between seeds (p95 6x), but an entry's worst over its
cases grew by 1.0-1.66x from seed 0 to seeds 0-4, and not at all from seeds
0-3 to 0-4, but for the max-pool variant of the fused-ReLU concat (one case
whose error needs an all-negative pool window: 25 -> 49 LSB at the fifth
seed), whose LSB bound the registry takes from the mechanism instead. So a
bound is the worst seen times 1.5 plus 1 LSB (a rounding tie), never past the
output range; the share of elements off times 1.5; the SQNR floor the worst
seen less 3 dB (half the power again). A case beyond that is a new failure:
the same bug grown, or another one, and worth a look either way.
"""

from __future__ import annotations

import math

LSB_MARGIN = 1.5  # x the worst LSB seen
LSB_SLACK = 1  # + one step: a rounding tie
LSB_CAP = 255  # an int8 output cannot be further off
SHARE_MARGIN = 1.5  # x the worst share of elements off
SQNR_MARGIN_DB = 3.0  # below the worst SQNR seen


def lsb_bound(worst: float) -> int:
    return min(LSB_CAP, math.ceil(worst * LSB_MARGIN) + LSB_SLACK)


def share_bound(worst: float) -> float:
    return min(1.0, round(worst * SHARE_MARGIN + 0.005, 2))


def sqnr_floor(worst: float) -> float:
    return math.floor(worst - SQNR_MARGIN_DB)
