"""The fixed numbers of the judging rules, each with the argument behind it.

Tolerances that follow from a case's own quantities (the DOT_PRODUCT limit
from the dot-product length and formats, a context's LSB tolerance from its
quantization parameters) are computed where they are applied
(`harness.judging.compare`, `harness.contexts.base`); the SQNR floors are
per scheme (`harness.policy.schemes`).
"""

# A conforming INT lowering computes exactly what the integer-exact oracle
# does (the spec's RESCALE from the same accumulator): 0 LSB.
MAX_LSB_EXACT = 0
# The fake-quant model rescales in fp32 and rounds once; the TOSA RESCALE is a
# fixed-point multiply and shift. One requantization: at most 1 LSB apart.
MAX_LSB_FAKE_QUANT = 1

# A reference whose output is mostly one value, or mostly clamped, cannot tell
# a right lowering from a wrong one: such a case is "mistrusted", never a pass.
DEGENERATE_MODE_SHARE = 0.9
DEGENERATE_CLAMP_SHARE = 0.5

# An fp32 output with more than this share of its elements at its maximum
# and as many at its minimum is clamped at both ends (exact data through a
# hardtanh): its quantization step is set by the unclamped range, so its SQNR
# says little and it takes the full-range floor.
TWO_SIDED_SATURATION_SHARE = 0.2
