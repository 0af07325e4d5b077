"""Named sweeps: fixed, ordered lists of cases.

A sweep is a pure function of its name: the same name always gives the same
descriptors in the same order, in every process, so pytest ids and results
match between `-n 0` and `-n auto` and between runs.
"""

from __future__ import annotations

from harness.config import DATASETS, SCHEMES, ConfigError, ConvConfig, parse_descriptor

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

# Every data set in every scheme, on one base per TOSA conv op.
SMOKE_DATASET_BASES = (
    "conv1d_ic4_oc8_i20_k3_s2_p1",
    "conv2d_ic8_oc16_i16x16_k3_p1",
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


def smoke() -> list[ConvConfig]:
    cases = [parse_descriptor(f"{b}_q{s}") for b in SMOKE_BASES for s in SCHEMES]
    cases += [
        parse_descriptor(f"{b}_q{s}_ds{d}")
        for b in SMOKE_DATASET_BASES
        for d in DATASETS
        if d != "normal"
        for s in SCHEMES
    ]
    cases += [parse_descriptor(d) for d in SMOKE_REJECTIONS]
    return cases


SWEEPS = {"smoke": smoke}


def sweep(name: str) -> list[ConvConfig]:
    """The cases of sweep `name`; ConfigError for an unknown name."""
    if name not in SWEEPS:
        raise ConfigError(f"unknown sweep {name!r}; known sweeps: {', '.join(SWEEPS)}")
    return SWEEPS[name]()
