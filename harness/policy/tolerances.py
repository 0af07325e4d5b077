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

# TOSA DOT_PRODUCT compliance (the spec's rule for a dot product, harness.judging.compare.dot_product):
# per element |err| <= DOT_PRODUCT_FP32_FACTOR * ksb for fp32 inputs, DOT_PRODUCT_FACTOR * ksb for narrower
# ones, and over the T elements sum(err^2) <= DOT_PRODUCT_SUM_SQ_FACTOR * ksb * T. The spec's numbers.
DOT_PRODUCT_FP32_FACTOR = 6
DOT_PRODUCT_FACTOR = 2
DOT_PRODUCT_SUM_SQ_FACTOR = 1.6

# FuseBatchNorm2dPass folds a BN into the conv in the parameters' own format (torch's fuse_conv_bn_weights): with
# u = 2^(-1-nf), K = gamma * rsqrt(var + eps) is off by 2.5u relative (the add's u halved by the rsqrt, the rsqrt's
# and the product's u), w * K by 3.5u, and (b - mean) * K + beta by 4.5u of |(b - mean) K| (the subtraction's u, K's
# 2.5u, the product's u) plus u of |b'|. The conv's output is then off by at most 4.5u of its bound (taken with
# |(b - mean) K| + |beta|, as the fold sums them): 4.5 units of the rule, rounded up.
BN_FOLD_ROUNDINGS = 5

# Drift between two runs (harness.history.diff), each the smallest change that is not noise. Within one release
# every number is deterministic (same seed, same bytes), so noise only comes from what a new release may
# legitimately change: calibration (the quantizer's observers), the accumulation order of a float conv.
# * max_lsb (INT): up by 1 LSB or more. Integer outputs carry no noise: a new LSB of error is a changed rounding or
#   scale somewhere, even where it stays within the context's tolerance.
# * exact_share (INT): down by 0.01 or more (1% of the elements no longer equal to the reference): one element
#   moving is covered by max_lsb; this catches a systematic shift that stays at 1 LSB.
# * sqnr_db (INT): down by 1 dB or more. A recalibrated quantizer moves SQNR by tenths of a dB; 1 dB is 26% more
#   noise power, the size of a real scale or rounding change (a scale 12% off costs about that).
# * error_ratio (all, error as a share of the case's own limit): up by 0.25 or more. A float conv's error moves
#   with its accumulation order, within what the DOT_PRODUCT rule allows for; a quarter of the case's budget is
#   more than an order change gives on these sizes and well before the rule fails.
DRIFT_UP = {"max_lsb": 1.0, "error_ratio": 0.25}
DRIFT_DOWN = {"exact_share": 0.01, "sqnr_db": 1.0}
