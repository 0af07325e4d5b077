"""The smoke tier's hand-picked cases, each family with the branch of the conv passes it aims at.

Data only: `harness.cases.tiers.smoke` crosses them with the schemes, data sets and contexts.
"""

from __future__ import annotations

# The smoke sweep: one representative of each branch of RewriteConvPass and
# its neighbours, each in every scheme. Comments name the branch aimed at.
SMOKE_BASES = (
    "conv1d_ic4_oc8_i20_k3_s2_p1",  # conv1d -> CONV2D via unsqueeze; stride placement
    "conv1d_ic6_oc6_g6_i16_k3_p1",  # conv1d depthwise -> DEPTHWISE_CONV2D
    "conv2d_ic8_oc16_i16x16_k3_p1",  # plain CONV2D
    "conv2d_n2_ic3_oc8_i17x15_k3x5_s3x2_p1x2",  # batch 2, odd/asymmetric stride, kernel, pad, input
    "conv2d_ic4_oc8_i16x16_k3_d2_p2",  # dilation 2
    "conv2d_ic8_oc8_g8_i12x12_k3_p1",  # depthwise, multiplier 1
    "conv2d_ic4_oc8_g4_i12x12_k3_s2_p1",  # depthwise, multiplier 2, stride 2
    "conv2d_ic8_oc12_g4_i10x10_k3_p1",  # grouped -> DecomposeGroupedConvPass
    "conv2d_ic8_oc8_i10x10_k1_b0",  # 1x1, no bias -> zero bias inserted
    "conv2d_ic8_oc8_i16x16_k3_s2_p1",  # pad does not divide: trailing pad trimmed
    "conv2d_ic8_oc8_i16x16_k3_s2_p0",  # remainder > pad: SizeAdjustInputPass slices the input
    "conv2d_ic4_oc8_i12x12_k3_p1_pmreflect",  # padding mode reflect (pad op before the conv)
    "tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1",  # TRANSPOSE_CONV2D with output padding
    "tconv2d_ic4_oc8_i7x7_k4_s2_p1_b0",  # TRANSPOSE_CONV2D, even kernel, no bias
    "conv3d_ic4_oc4_i6x6x6_k3_p1",  # CONV3D
    "conv3d_ic2_oc4_i5x6x7_k2x3x1_s2x1x1",  # CONV3D, asymmetric dims, stride in depth
)

# One case per structural family a fault on one axis could hide in (harness.cases.classes): each padding
# remainder kind on H alone and on W alone, on conv1d, on each axis of conv3d; a transposed conv's stride and
# output padding on one axis; an even dilated kernel on one axis. In a float and an INT scheme.
SMOKE_STRUCTURAL_BASES = (
    "conv2d_ic4_oc4_i8x9_k3x3_s2x1_p1x1",  # H trim1, the whole pad
    "conv2d_ic4_oc4_i8x8_k3x5_s1x2_p1x2",  # W trim1, 1 of 2 pad rows left
    "conv2d_ic4_oc4_i9x8_k5x3_s4x1_p3x1",  # H trim>1, 1 of 3 pad rows left
    "conv2d_ic4_oc4_i8x9_k3x5_s1x3_p1x2",  # W trim>1, the whole pad
    "conv2d_ic4_oc4_i10x8_k3x3_s2x1_p0x1",  # H slice
    "conv2d_ic4_oc4_i8x10_k3x3_s1x2_p1x0",  # W slice
    "conv2d_ic4_oc4_i9x8_k3x3_s3x1_p1x1",  # H slice past a pad: remainder 2 > pad 1, 1 row sliced, 1 pad row kept
    "conv1d_ic4_oc4_i12_k5_s3_p2",  # 1D trim>1
    "conv1d_ic4_oc4_i10_k3_s2_p0",  # 1D slice
    "conv3d_ic2_oc4_i6x5x5_k3x3x3_s2x1x1_p0x1x1",  # D slice
    "conv3d_ic2_oc4_i5x6x5_k3x3x3_s1x2x1_p1x0x1",  # H slice
    "conv3d_ic2_oc4_i5x5x6_k3x3x3_s1x1x2_p1x1x0",  # W slice
    "tconv2d_ic4_oc4_i5x5_k3x3_s2x1_p1x0_op1x0",  # H stride, padding and output padding
    "tconv2d_ic4_oc4_i5x5_k3x3_s1x2_p0x1_op0x1",  # W stride, padding and output padding
    "conv2d_n2_ic4_oc4_i8x8_k2x3_d2x1_p1x1_b0",  # H even kernel, dilated; batch 2 and the inserted zero bias
    "conv2d_n2_ic4_oc4_i8x8_k3x2_d1x2_p1x1_b0",  # W even kernel, dilated
    "conv1d_ic4_oc4_i16_k3_d2_p2",  # conv1d dilated: the dilation goes to the lifted conv's W, not H
    "conv1d_ic4_oc8_g4_i16_k3_p1",  # conv1d depthwise, multiplier 2: the HWCM weight's multiplier
    "conv2d_ic4_oc8_g4_i12x10_k3x5_p1x2",  # depthwise, kernel H != W: the HWCM weight's reshape
)
SMOKE_STRUCTURAL_SCHEMES = ("fp32", "a8w8")
# One case per family of the crossing (harness.cases.crossed) the cases above leave out: each conv kind with each
# group kind and bias (dense, depthwise multiplier 1 and 2, grouped; with and without bias), and pads that reach
# the kernel or the dilated extent, on one axis and on all. In one scheme each, float and INT in turn (a grouped
# transposed conv's INT case per tensor: per channel is a documented rejection).
SMOKE_CROSSED = (
    ("conv1d_ic4_oc4_i10_k2_p2_b0", "fp32"),  # dense, no bias, an even kernel padded by its size
    ("conv1d_ic4_oc4_g4_i12_k3_s2_p3_b0", "a8w8"),  # depthwise, no bias, pad = k, strided
    ("conv1d_ic4_oc8_g4_i11_k3_d2_p5_b0", "fp32"),  # depthwise x2, no bias, pad = the dilated extent
    ("conv1d_ic4_oc4_g2_i12_k4_s3_p4_b0", "a8w8"),  # grouped, no bias, pad = k
    ("conv1d_ic4_oc4_g2_i9_k2_s2_p1", "fp32"),  # grouped, bias
    ("conv2d_ic4_oc4_g4_i8x8_k2_p1", "a8w8"),  # depthwise 2x2, bias
    ("conv2d_ic4_oc4_g4_i8x8_k2_p2x0_b0", "fp32"),  # depthwise, no bias, H pad = k
    ("conv2d_ic4_oc8_g4_i9x9_k3_s1x2_p0x3_b0", "a8w8"),  # depthwise x2, no bias, W pad = k, strided
    ("conv2d_ic4_oc4_i8x8_k3_p3", "fp32"),  # dense, pad = k on both axes
    ("conv2d_ic4_oc4_i9x8_k3x1_d3x1_p7x0", "a8w8"),  # dense, H pad = the dilated extent (7)
    ("tconv2d_ic4_oc4_g4_i5x5_k3_s2_p1_op1_b0", "a8w8-pt"),  # groups = channels, no bias
    ("tconv2d_ic4_oc4_g4_i5x5_k2_s2_p0", "fp32"),  # groups = channels, bias
    ("tconv2d_ic4_oc8_g4_i5x5_k3_s1x2_p1_op0x1_b0", "fp32"),  # groups = channels x2, no bias
    ("tconv2d_ic4_oc8_g4_i5x5_k3_s2_p2_op1", "a8w8-pt"),  # groups = channels x2, bias
    ("tconv2d_ic4_oc4_g2_i5x5_k4x2_s2x1_p1x0_b0", "fp32"),  # grouped, no bias
    ("conv3d_ic4_oc4_i4x4x4_k1_b0", "a8w8"),  # 1x1x1, no bias
    ("conv3d_ic4_oc4_i5x5x5_k2_p2", "fp32"),  # 2x2x2, pad = k
    ("conv3d_ic4_oc4_g4_i5x5x5_k3_p1_b0", "a8w8"),  # groups = channels, no bias (decomposed)
    ("conv3d_ic4_oc4_g4_i5x6x5_k2_s2_p1", "fp32"),  # groups = channels, bias
    ("conv3d_ic4_oc8_g4_i5x5x5_k3_s1x2x1_p1_b0", "fp32"),  # groups = channels x2, no bias
    ("conv3d_ic4_oc4_g2_i5x5x5_k3_b0", "a8w8"),  # grouped 3x3x3, no bias
    ("conv3d_ic4_oc4_g2_i6x5x5_k3_s2x1x1_p3x1x1", "a8w8"),  # grouped, bias, D pad = k
)
# DecomposeGroupedConvPass's other two branches: a grouped transposed conv (sliced on its weight's input
# channels; the weight is 6x5x3x3: the input (3) and output (5) slice sizes, 5 // 2 and 3 // 2 differ; int8
# per tensor, as per channel is a documented rejection) and a grouped conv without bias (None per group).
SMOKE_GROUPED = (
    "tconv2d_ic6_oc10_g2_i5x6_k3_s2_p1_qfp32",
    "tconv2d_ic6_oc10_g2_i5x6_k3_s2_p1_qa8w8-pt",
    "conv2d_ic8_oc12_g4_i10x10_k3_p1_b0_qfp32",
    "conv2d_ic8_oc12_g4_i10x10_k3_p1_b0_qa8w8",
    "conv3d_ic4_oc8_g4_i5x6x5_k3_p1_qfp32",  # depthwise conv3d: no DEPTHWISE_CONV3D, so one CONV3D per group
    "conv3d_ic4_oc8_g4_i5x6x5_k3_p1_qa8w8",
)

# a16w8's conv feeding an add through INT32: RewriteConvPass forks the INT48 accumulator straight to INT32
# (no rounding to int16). With the quantizer's minimum scale (2^-12) both paths round alike; with offset data the
# scales differ and the fork shows (measured: 267 of 1,152 outputs 1 LSB off the fake-quant model, 90 without it).
# A conv1d narrows to int16 before its add instead (RewriteConvPass's documented exception: its rank-changing view
# sits between); a fork there fails to permute a rank-4 accumulator with a rank-3 permutation.
SMOKE_A16W8_CONTEXTS = (
    "conv2d_ic8_oc8_i12x12_k3_p1_qa16w8_dsoffset_cxadd",
    "conv1d_ic8_oc8_i12_k3_p1_qa16w8_dsoffset_cxadd",
)

# Every data set in every scheme, on one base per TOSA conv op.
SMOKE_DATASET_BASES = (
    "conv1d_ic4_oc8_i20_k3_s2_p1",
    "conv2d_ic8_oc16_i16x16_k3_p1",
    "conv2d_ic4_oc8_g4_i12x12_k3_s2_p1",
    "tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1",
    "conv3d_ic4_oc4_i6x6x6_k3_p1",
)
# The poolings of real networks beyond the named contexts' 3x3/2 (harness.contexts.grammar.POOLS): padding,
# ceil_mode and an avg_pool2d with torch's defaults are what SizeAdjustInputPass reads from a pool.
SMOKE_POOLS = ("maxpool3p1", "maxpool3ceil", "avgpool2", "maxpool5p2", "avgpool5s3", "maxpool3s3p1")
# What real networks put around a conv beyond the named contexts: the activations after a conv in EfficientNet,
# MobileNetV3, YOLO and transformers' conv stems (table-lowered in INT, decomposed in FP), a classifier's global
# average pool in its two spellings, an explicit F.pad in its three modes and a nearest x2 upsample before a conv,
# and the FPN join (a second input upsampled x2 and added).
SMOKE_NEIGHBOURS = (
    "silu",
    "hardswish",
    "hardsigmoid",
    "lrelu",
    "lrelu01",
    "gelu",
    "gelutanh",
    "tanh",
    "elu",
    "gap",
    "gapmean",
    "pad-in",
    "reflect-in",
    "replicate-in",
    "up-in",
    "fpn",
)
# A conv whose output has two users, as in YOLOv5's SPPF (a stride-1 pool and the concat both take it): the only
# case where RewriteConvPass's lookup of a following op's output qparams would raise instead of falling back.
SMOKE_FORKS = ("maxpool5p2-catpre",)
# A conv inside a cond inside a cond: its bias crosses two boundaries, each with its rescale, which RewriteConvPass
# recovers in order (a single cond has one). Offset data (x about 3) take the inner branch at run time.
SMOKE_NESTED_COND = (
    "conv2d_ic8_oc8_i12x12_k3_p1_qfp32_dsoffset_cxcond-nested",
    "conv2d_ic8_oc8_i12x12_k3_p1_qa8w8_dsoffset_cxcond-nested",
)
# A conv whose input and weights calibrate to zero (`silent` data): its bias scale is 2^-32 and the biases sit just
# past the int32 limit (0.5), where a lowering must saturate. Alone, PT2E's int32 bias wraps (known issue
# int32-bias-quantize-wraps); in a cond, RewriteConvPass rebuilds the bias itself and clamps it.
SMOKE_SILENT = ("conv2d_ic8_oc8_i12x12_k3_p1_qa8w8_dssilent", "conv2d_ic8_oc8_i12x12_k3_p1_qa8w8_dssilent_cxcond")
# What SizeAdjustInputPass and the partitioner read from a pool beyond those, each spelled as a (base, kind) pair
# in a float and an INT scheme (kind "" = static). Static: an avg pool with ceil_mode (never sliced) on an odd input.
# Dynamic, on TOSA 1.0: a pad whose leftover changes with the size (refused) or stays within it (lowers), on both
# axes or on W alone; a pool called without a stride or padding (the edge op's args stop short); and on TOSA 1.1
# ResNet's padded stem pool, which crashes (known issue dynamic-maxpool-symbolic-pad).
SMOKE_POOL_CASES = (
    ("conv2d_ic8_oc8_i12x12_k2_cxavgpool2ceil", ""),
    ("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool3p1", "spatial-tosa10"),
    ("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool3p1", "spatial-even-tosa10"),
    ("conv2d_n2_ic8_oc8_i12x12_k3_s1x2_p1_cxmaxpool3p1", "spatial-even-tosa10"),
    ("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool", "spatial-even-tosa10"),
    ("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool2", "spatial-even-tosa10"),
    ("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxavgpool3s1p1", "spatial-even-tosa10"),
    ("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool3p1", "spatial"),
)
# SizeAdjustInputPass's symbolic slice: summed over two leftover thresholds (stride 3, no pad: one floor-div term
# per leftover that exceeds the pad; smoke's stride-2 and padded stride-3 convs have one term).
# With wide ranges the leftover's values are not enumerated (None): the range-bound branches (a conv3d, a pool).
# A single symbolic leftover above the pad: a fixed slice of 1 off an even size; and one within it (none).
SMOKE_SLICE_CASES = (
    ("conv2d_n2_ic4_oc8_i12x12_k3_s3", "spatial"),
    ("conv3d_n2_ic2_oc4_i6x7x8_k3_s2_p1", "spatial-wide"),
    ("conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool", "spatial-wide"),
    ("conv2d_n2_ic4_oc8_i16x16_k3_s2", "spatial-even"),
    ("conv2d_n2_ic4_oc8_i16x16_k2_s2", "spatial-even-tosa10"),  # one symbolic leftover, 0, within the pad: no slice
    # A pad of 1 below stride - 1: the early exit not taken, the loop from pad + 1 (the operand deletions
    # `pad >= stride - 1` -> `pad >= 1` and `range(pad + 1, ...)` -> `range(1, ...)` survived every other case).
    ("conv2d_ic4_oc4_i9x8_k3x3_s3x1_p1x1", "spatial"),
)
# A conv that must be trimmed after an op SizeAdjustInputPass does not adjust, as TF-style "same" padding writes a
# strided conv (EfficientNet's ports: an explicit F.pad, then k3 s2 without padding; 8 + 2 - 3 leaves 1 row). The
# pass visits every node: a walk that stopped at the first node it skips would leave this conv untrimmed
# (mutant size_adjust_input_pass:505, `continue` -> `break`, survived every other smoke case).
SMOKE_TRIM_AFTER_OP = ("conv2d_ic4_oc4_i8x8_k3_s2_p0_cxpad-in",)

# FP8: one base per TOSA conv op, with and without a bias (the inserted FP16 zero bias).
SMOKE_FP8_BASES = (
    "conv1d_ic4_oc8_i20_k3_s2_p1",
    "conv2d_ic8_oc16_i16x16_k3_p1",
    "conv2d_ic8_oc8_i10x10_k1_b0",
    "conv2d_ic4_oc8_g4_i12x12_k3_s2_p1",
    "tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1",
    "conv3d_ic4_oc4_i6x6x6_k3_p1",
)

# Configs the backend documents as unsupported: each must be rejected cleanly.
SMOKE_REJECTIONS = (
    "tconv2d_ic4_oc4_i6x6_k3_d2_qfp32",
    "tconv2d_ic4_oc4_i6x6_k3_d2_qa8w8",
    "tconv1d_ic4_oc4_i6_k3_qfp32",
    "tconv1d_ic4_oc4_i6_k3_qa8w8",
)


# Dynamic dims: runtime pad, symbolic slice, depthwise; each run at 3 sizes.
SMOKE_DYNAMIC_BASES = (
    "conv2d_n2_ic4_oc8_i16x17_k3_s2_p1",
    "conv2d_n2_ic4_oc8_i16x17_k3_s2",
    "conv2d_n2_ic4_oc8_g4_i12x12_k3_s2_p1",
)
# Dynamic spatial dims for TOSA 1.0: static padding lowers, runtime padding is refused.
# The symbolic padding check reads each axis (a runtime pad on H only) and each rank (conv1d: one stride,
# padding and dilation for one axis, expanded by the input's rank).
SMOKE_TOSA10_BASES = (
    "conv2d_n2_ic4_oc8_i16x17_k3_s2_p1",
    "conv2d_n2_ic4_oc8_i12x12_k3_p1",
    "conv2d_n2_ic4_oc8_i16x17_k3_s2x1_p1",
    "conv1d_n2_ic4_oc8_i17_k3_p1",
    "conv1d_n2_ic4_oc8_i17_k3_s2_p1",
)
# Even sizes on TOSA 1.0: a pool after an odd conv output lowers (the symbolic pooling check).
# And a constant remainder <= pad on a symbolic dim is a static trim, which TOSA 1.0 takes.
SMOKE_EVEN_BASES = ("conv2d_n2_ic8_oc8_i12x12_k2_cxmaxpool", "conv2d_n2_ic4_oc8_i16x16_k3_s2_p1")
# One operand of the remainder (L + 2 * pad - dilation * (k - 1) - 1) % stride alone tips the decision of
# SizeAdjustInputPass (slice or not) and RewriteConvPass (the end pad): the mutation tool's operand deletions
# (`dilation * (k - 1)` -> `k - 1`, `2 * pad` -> `2`) survived every other smoke case, whose dilated convs all have
# stride 1 and whose stride-3 convs a pad of 1 (2 * 1 == 2).
# Each operand of the passes' arithmetic decisions alone tipping one (harness.cases.decisions, MC/DC): a base whose
# H axis slices ((12 + 2 - 2 - 1) % 3 = 2 > pad 1; output 4 rows), then one operand changed: the input size (none,
# 5 rows), the pad (trim, 5), the dilation (none), the kernel (none, 5), the stride (trim, 6); and a depthwise conv
# (groups = in channels = 4, out 8) with the groups or the in channels changed (grouped, not depthwise).
SMOKE_DECISION_TIPS = (
    "conv2d_ic4_oc4_i12x12_k3x3_s3x1_p1x1",
    "conv2d_ic4_oc4_i13x12_k3x3_s3x1_p1x1",
    "conv2d_ic4_oc4_i12x12_k3x3_s3x1_p2x1",
    "conv2d_ic4_oc4_i12x12_k3x3_s3x1_p1x1_d2x1",
    "conv2d_ic4_oc4_i12x12_k2x3_s3x1_p1x1",
    "conv2d_ic4_oc4_i12x12_k3x3_s2x1_p1x1",
    "conv2d_ic4_oc8_g4_i12x12_k3_p1",
    "conv2d_ic4_oc8_g2_i12x12_k3_p1",
    "conv2d_ic8_oc8_g4_i12x12_k3_p1",
)
SMOKE_OPERAND_TIPS = (
    "conv2d_ic4_oc4_i12x12_k3x3_s3x1_p0x1_d2x1",  # H: remainder 1 > pad 0, one row sliced; 0 without the dilation
    "conv2d_ic4_oc4_i12x12_k3x3_s3x1_p0x1",  # H: remainder 0, no slice; 2 > pad 0 were the pad counted as 1 per side
)
