"""Ways to draw cases from the config space; each returns valid configs only.

* `edge_cases`: hand-picked configs, each aimed at a branch of
  RewriteConvPass, SizeAdjustInputPass or DecomposeGroupedConvPass.
* `grid`: exhaustive over small 2D shapes (kernel, stride, padding, dilation,
  H != W inputs), so pad trimming and input slicing happen on each axis alone
  and together.
* `pairwise`: a covering array (covertable) in which every pair of values of
  any two dimensions (shape family, channels, groups, sizes, kernel, stride,
  padding, dilation, bias, padding mode, scheme, data set, context, ...)
  appears in some valid case, wherever a valid case can hold that pair.
* `random_cases`: seeded uniform sampling over the same dimensions (a
  quarter of them with dynamic dims).
* `dynamic_cases`: hand-picked bases with dynamic dims (`torch.export.Dim`),
  each run at several sizes.
* `fp8_cases`: the conv alone in the fp8 schemes (which take no graph context).

All are pure functions of their arguments: same call, same list, same order.
"""

from __future__ import annotations

import random

from harness.config import ConfigError, ConvConfig, parse_descriptor
from harness.contexts.names import CONTEXT_NAMES
from harness.policy.schemes import FP8_SCHEMES, GRAPH_SCHEMES, MIRRORS
from harness.validation import DATASETS, DYNAMICS, PADDING_MODES

# One line per target; the comment names the branch it aims at.
EDGE_BASES = (
    # RewriteConvPass._adjust_pad_if_needed: trailing pad trimmed, per axis
    "conv2d_ic4_oc8_i16x17_k3_s2_p1",  # trim on H only
    "conv2d_ic4_oc8_i17x16_k3_s2_p1",  # trim on W only
    "conv2d_ic4_oc8_i16x16_k3_s2_p1",  # trim on both
    "conv2d_ic4_oc4_i17x17_k3_s3_p1",  # stride 3, remainder 1 <= pad
    "conv1d_ic4_oc8_i16_k3_s2_p1",  # 1D trim
    "conv3d_ic2_oc4_i6x7x6_k3_s2_p1",  # 3D trim on D and W
    # SizeAdjustInputPass: remainder > pad, the input is sliced, per axis
    "conv2d_ic4_oc8_i16x17_k3_s2",  # slice H only
    "conv2d_ic4_oc8_i17x16_k3_s2",  # slice W only
    "conv2d_ic4_oc8_i18x18_k3_s3_p1",  # remainder 2 > pad 1 on both
    "conv2d_ic4_oc8_i9x9_k2_s3",  # stride larger than the kernel
    "conv1d_ic4_oc8_i17_k2_s4",  # 1D slice
    "conv3d_ic2_oc4_i7x6x7_k2_s2",  # 3D slice
    "conv2d_ic4_oc8_g4_i16x16_k3_s2",  # depthwise with a slice
    "conv2d_ic4_oc8_g4_i16x15_k3_s2_p1",  # depthwise, trim on H, slice-free W
    # asymmetric H/W everywhere
    "conv2d_ic3_oc5_i11x14_k3x5_s1x2_p2x1_d2x1",
    "conv2d_ic4_oc4_i13x9_k1x3_s3x1_p0x1",
    "conv2d_ic2_oc6_i1x16_k1x3_p0x1",  # H of 1
    # depthwise multipliers 1-4, 1D and 2D; depthwise 3D is decomposed
    "conv2d_ic4_oc4_g4_i10x10_k3_p1",
    "conv2d_ic4_oc8_g4_i10x10_k3_p1",
    "conv2d_ic4_oc12_g4_i10x10_k3_p1",
    "conv2d_ic4_oc16_g4_i10x10_k3_p1",
    "conv1d_ic4_oc8_g4_i12_k3_p1",
    "conv1d_ic6_oc6_g6_i20_k5_s2_d2_p2",
    "conv3d_ic4_oc4_g4_i5x5x5_k3_p1",
    # DecomposeGroupedConvPass: fewer and more outputs than inputs, 1D/3D, no bias
    "conv2d_ic8_oc4_g2_i8x8_k3_p1",
    "conv2d_ic4_oc12_g2_i8x8_k3_p1",
    "conv2d_ic6_oc6_g3_i8x8_k1_b0",
    "conv1d_ic8_oc8_g4_i12_k3",
    "conv3d_ic4_oc8_g2_i5x5x5_k3",
    # kernels: 1x1, equal to the padded input (one output), large KS
    "conv2d_ic8_oc8_i7x7_k1",
    "conv2d_ic4_oc8_i5x5_k7_p1",
    "conv2d_ic32_oc16_i8x8_k3_p1",
    "conv2d_ic4_oc4_i12x12_k5_p2_d2",
    # batch, padding strings and modes
    "conv2d_n3_ic4_oc8_i8x8_k3_p1",
    "conv2d_ic4_oc8_i9x9_k3_psame",
    "conv2d_ic4_oc8_i9x9_k4_psame",
    "conv2d_ic4_oc8_i9x9_k3_pvalid",
    "conv2d_ic4_oc8_i9x9_k3_p2_pmreplicate",
    "conv2d_ic4_oc8_i9x9_k3_p1_pmcircular",
    "conv1d_ic4_oc8_i12_k3_p1_pmreflect",
    # no bias: the zero bias RewriteConvPass inserts (INT32, INT48 for a16w8)
    "conv2d_ic4_oc8_i9x9_k3_b0",
    "conv1d_ic4_oc8_i12_k3_b0",
    "conv3d_ic2_oc4_i5x5x5_k3_b0",
    # transposed conv: output padding per axis, even kernels, strides
    "tconv2d_ic4_oc8_i6x6_k2_s2",
    "tconv2d_ic4_oc4_i6x6_k3_s2_p1_op1x0",
    "tconv2d_ic4_oc4_i5x7_k3x2_s2x1_p1x0",
    "tconv2d_ic4_oc4_i6x6_k3",
    "tconv2d_n2_ic8_oc4_i4x4_k4_s2_p1_b0",
    "tconv2d_ic4_oc4_g2_i6x6_k3_s2",  # grouped tconv (rejected per channel)
    # conv3d strides and depth kernels
    "conv3d_ic4_oc4_i5x6x7_k1x3x3_s1x2x2_p0x1x1",
    "conv3d_ic2_oc4_i6x6x6_k3_d2_p2",
)

# Configs documented unsupported: each must be rejected cleanly.
REJECTION_CASES = (
    "tconv2d_ic4_oc4_i6x6_k3_d2",
    "tconv1d_ic4_oc4_i6_k3",
    "tconv3d_ic2_oc2_i4x4x4_k3",
    "tconv2d_ic4_oc4_i6x6_k3_p3",
    "tconv2d_ic4_oc4_g2_i6x6_k3",
)


# Dynamic shapes (each in batch, spatial, spatial-wide and all): the symbolic
# branches of SizeAdjustInputPass and RewriteConvPass and the runtime PAD.
DYNAMIC_BASES = (
    "conv2d_n2_ic4_oc8_i16x17_k3_s2_p1",  # runtime pad and trim on both axes
    "conv2d_n2_ic4_oc8_i16x17_k3_s2",  # no pad: the input slice is symbolic
    "conv2d_n2_ic4_oc8_i17x17_k3_s3_p1",  # pad < stride - 1: slice as a sum of floor-divs
    "conv2d_n2_ic4_oc8_i12x12_k3_p1",  # stride 1: remainder constant, padding static
    "conv2d_n2_ic3_oc5_i11x14_k3x5_s3x1_p1x2_d1x2",  # symbolic on H only
    "conv2d_n2_ic4_oc8_g4_i12x12_k3_s2_p1",  # depthwise
    "conv2d_n2_ic4_oc8_g2_i12x12_k3_s2",  # grouped (decomposed)
    "conv2d_n2_ic4_oc8_i16x16_k3_s2_p2_d2",  # dilation
    "conv2d_n2_ic4_oc8_i9x9_k2_psame",  # 'same' with an odd total pad
    "conv2d_n2_ic4_oc8_i9x9_k3_p1_pmreplicate",  # padding mode: documented unsupported
    "conv1d_n2_ic4_oc8_i17_k3_s2_p1",
    "conv3d_n2_ic2_oc4_i6x7x8_k3_s2_p1",
    "conv2d_n2_ic8_oc8_b0_i12x12_k3_s2_p1",  # no bias: the inserted zero bias
    "tconv2d_n2_ic4_oc8_i7x8_k3_s2_p1_op1",
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool",
    "conv2d_n2_ic8_oc8_i12x12_k3_s2_p1_cxrelu",
    "conv2d_n2_ic8_oc8_i12x12_k3_s2_p1_cxchain",
)
DYNAMIC_KINDS = ("batch", "spatial", "spatial-wide", "all")
# For TOSA 1.0 (no shape operators): static padding lowers, runtime padding must be refused.
DYNAMIC_TOSA10_BASES = (
    "conv2d_n2_ic4_oc8_i16x17_k3_s2_p1",
    "conv2d_n2_ic4_oc8_i12x12_k3_p1",
    "conv2d_n2_ic4_oc8_g4_i12x12_k3_p1",
    "conv1d_n2_ic4_oc8_i17_k3_p1",
    "conv3d_n2_ic2_oc4_i6x7x8_k3_p1",
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool",
    "conv2d_n2_ic8_oc8_i12x12_k3_s2_p1_cxavgpool",
    "tconv2d_n2_ic4_oc8_i7x8_k3_s2_p1_op1",
)
DYNAMIC_TOSA10_KINDS = ("batch-tosa10", "spatial-tosa10")
# Even sizes only (2*k): with stride 1 or 2 every remainder is constant, so on
# TOSA 1.0 such convs lower with static padding, and a pool after a stride-1
# conv with an odd output keeps no leftover row (its symbolic padding check).
DYNAMIC_EVEN_BASES = (
    "conv2d_n2_ic4_oc8_i16x16_k3_s2_p1",  # constant remainder <= pad: static trim
    "conv2d_n2_ic4_oc8_i16x16_k3_s2",  # constant remainder > pad: a fixed slice of a symbolic dim
    "conv2d_n2_ic4_oc8_i12x18_k3_s3x2_p1",  # stride 3 on H: runtime pad on H only
    "conv2d_n2_ic4_oc8_g4_i12x12_k3_s2_p1",  # depthwise
    "conv3d_n2_ic2_oc4_i6x6x8_k3_s2_p1",
    "conv2d_n2_ic8_oc8_i12x12_k2_cxmaxpool",  # odd conv output: the pool needs no slice
    "conv2d_n2_ic8_oc8_i12x12_k2_cxavgpool",
    "conv2d_n2_ic8_oc8_i12x12_k3_p1_cxmaxpool",  # even conv output: the pool slices
)
DYNAMIC_EVEN_KINDS = ("spatial-even", "spatial-even-tosa10")


# Ethos-U: each documented limit, at the limit and one past it (the U55 subset's rules in
# harness.expectations.rejections; the U85 takes them all: which the U55 refuses and the U85 runs).
ETHOS_U_LIMIT_CASES = (
    "conv2d_ic4_oc4_i16x16_k3_s3_p1",  # stride 3 with padding: at the limit
    "conv2d_ic4_oc4_i16x16_k3_s4_p1",  # stride 4 with padding: past it
    "conv2d_ic4_oc4_i16x16_k3_s4",  # stride 4, no padding, dilation 1: allowed
    "conv2d_ic4_oc4_i24x24_k3_s4_d2",  # stride 4 without padding but dilation 2: past it
    "conv2d_ic2_oc2_i4x64_k1x64",  # kernel_x 64: at the limit
    "conv2d_ic2_oc2_i4x65_k1x65",  # kernel_x 65: past it
    "conv2d_ic1_oc2_i64x64_k64x64",  # 4096 taps: at the limit
    "conv2d_ic1_oc2_i65x64_k65x64",  # 4160 taps: past it
    "conv1d_ic1_oc2_i4096_k4096",  # a 1D kernel of 4096 taps: at the limit
    "conv1d_ic1_oc2_i4097_k4097",  # 4097 taps: past it
    "conv3d_ic2_oc2_i4x4x4_k1x3x3",  # CONV3D with a kernel_z (the backend's: the width) of 3: refused
    "conv3d_ic2_oc2_i4x4x4_k1x3x1",  # kernel_z 1 and a depth kernel of 1: lowered, Vela runs it
    "conv3d_ic2_oc2_i4x4x4_k2x3x1",  # kernel_z 1 but a depth kernel of 2: lowered, Vela cannot run it
    "tconv2d_ic4_oc4_i6x6_k3_s2",  # transposed stride 2: allowed
    "tconv2d_ic4_oc4_i6x6_k3_s3",  # transposed stride 3: past it
    "tconv2d_ic4_oc4_i1x6_k1x3_s1x2",  # stride (1, 2) with a unit input and kernel height: allowed
    "tconv2d_ic4_oc4_i2x6_k1x3_s1x2",  # the same with an input of height 2: past it
)


def ethos_u_limit_cases(schemes=("a8w8",)) -> list[ConvConfig]:
    return [_with(b, q=s) for b in ETHOS_U_LIMIT_CASES for s in schemes]


def dynamic_cases(schemes=GRAPH_SCHEMES, bases=DYNAMIC_BASES, kinds=DYNAMIC_KINDS) -> list[ConvConfig]:
    return [_with(b, dy=k, q=s) for b in bases for k in kinds for s in schemes]


def _with(base: str, **tokens: str) -> ConvConfig:
    return parse_descriptor(base + "".join(f"_{k}{v}" for k, v in tokens.items()))


def edge_cases(schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    return [_with(b, q=s) for b in EDGE_BASES for s in schemes]


def rejection_cases(schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    return [_with(b, q=s) for b in REJECTION_CASES for s in schemes]


def fp8_cases(bases=EDGE_BASES, datasets=("normal",)) -> list[ConvConfig]:
    """The conv alone in each fp8 scheme: the FP16 bias and the CAST after the
    conv RewriteConvPass inserts for fp8 operands."""
    return [_with(b, q=s, ds=d) for b in bases for d in datasets for s in FP8_SCHEMES]


def grid(schemes=("fp32", "a8w8")) -> list[ConvConfig]:
    """Every kernel/stride/padding/dilation on H != W inputs, valid ones only."""
    out = []
    for size in ((7, 8), (9, 11)):
        for k in (1, 2, 3):
            for s in (1, 2, 3):
                for p in (0, 1, 2):
                    for d in (1, 2):
                        for scheme in schemes:
                            try:
                                out.append(
                                    ConvConfig(
                                        rank=2,
                                        in_channels=3,
                                        out_channels=4,
                                        input_size=size,
                                        kernel=(k, k),
                                        stride=(s, s),
                                        padding=(p, p),
                                        dilation=(d, d),
                                        scheme=scheme,
                                    )
                                )
                            except ConfigError:
                                pass
    return out


# The dimensions pairwise and random draws range over.
DIMENSIONS: dict[str, list] = {
    "family": ["conv1d", "conv2d", "conv3d", "tconv2d"],
    "groups": ["1", "depthwise", "depthwise2", "grouped"],
    "in_channels": [2, 4, 6],
    "out_channels": [2, 4, 8],
    "batch": [1, 2],
    "size": [5, 8, 11],
    "asymmetric": [False, True],
    "kernel": [1, 2, 3, 5],
    "stride": [1, 2, 3],
    "padding": [0, 1, 2, "same", "valid"],
    "dilation": [1, 2],
    "output_padding": [0, 1],
    "bias": [True, False],
    "padding_mode": list(PADDING_MODES),
    "scheme": list(GRAPH_SCHEMES),  # fp8 runs the conv alone: fp8_cases
    "dataset": list(DATASETS),
    "context": list(CONTEXT_NAMES),
    # TOSA 1.0 and even-size kinds: hand-picked bases (DYNAMIC_TOSA10_BASES, DYNAMIC_EVEN_BASES)
    "dynamic": [d for d in DYNAMICS if not d.endswith("-tosa10") and not d.startswith("spatial-even")],
}
# Random draws: most real graphs are static; one case in four is dynamic.
_RANDOM_DYNAMIC = ("none",) * 12 + tuple(DIMENSIONS["dynamic"][1:])


def config_of(row: dict) -> ConvConfig:
    """A config from one value per dimension; ConfigError if it is not valid."""
    family = row["family"]
    rank = 3 if family == "conv3d" else 1 if family == "conv1d" else 2
    ic = row["in_channels"]
    groups, oc = {
        "1": (1, row["out_channels"]),
        "depthwise": (ic, ic),
        "depthwise2": (ic, 2 * ic),
        "grouped": (2, row["out_channels"]),
    }[row["groups"]]

    def dims(v: int, other: int) -> tuple[int, ...]:
        return tuple([v] + [other if row["asymmetric"] else v] * (rank - 1))

    size = row["size"] if rank < 3 else min(row["size"], 7)
    padding = row["padding"]
    return ConvConfig(
        rank=rank,
        transposed=family.startswith("t"),
        batch=row["batch"],
        in_channels=ic,
        out_channels=oc,
        input_size=dims(size, size + 3),
        kernel=dims(row["kernel"], max(1, row["kernel"] - 1)),
        stride=dims(row["stride"], 1),
        padding=padding if isinstance(padding, str) else dims(padding, 0),
        dilation=dims(row["dilation"], 1),
        output_padding=dims(row["output_padding"], 0) if family.startswith("t") else (),
        groups=groups,
        bias=row["bias"],
        padding_mode=row["padding_mode"],
        scheme=row["scheme"],
        dataset=row["dataset"],
        context=row["context"],
        dynamic=row.get("dynamic", "none"),
    )


def _valid(row: dict) -> bool:
    if len(row) < len(DIMENSIONS):
        return True  # covertable also asks about partial rows
    try:
        config_of(row)
    except ConfigError:
        return False
    return True


def _pairs(row: dict) -> set[tuple]:
    names = list(DIMENSIONS)
    return {(a, repr(row[a]), b, repr(row[b])) for i, a in enumerate(names) for b in names[i + 1 :]}


def pairwise(seed: int = 0, attempts: int = 400) -> list[ConvConfig]:
    """Every pair of values of every two dimensions, in valid configs.

    covertable builds the array; rows that are not valid configs are dropped,
    and each pair only they covered is then looked for in up to `attempts`
    seeded random completions (pairs no valid config can hold stay uncovered).
    """
    from covertable import make

    rows = [r for r in make(DIMENSIONS, pre_filter=_valid) if _valid(r)]
    covered = set().union(*(_pairs(r) for r in rows))
    rng = random.Random(seed)
    names = list(DIMENSIONS)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for va in DIMENSIONS[a]:
                for vb in DIMENSIONS[b]:
                    if (a, repr(va), b, repr(vb)) in covered:
                        continue
                    for _ in range(attempts):
                        row = {n: rng.choice(v) for n, v in DIMENSIONS.items()}
                        row[a], row[b] = va, vb
                        if _valid(row):
                            rows.append(row)
                            covered |= _pairs(row)
                            break
    return unique(config_of(r) for r in rows)


def random_cases(n: int, seed: int) -> list[ConvConfig]:
    """`n` valid configs drawn uniformly per dimension from a seeded generator."""
    rng = random.Random(seed)
    out: list[ConvConfig] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n and attempts < 200 * max(n, 1):
        attempts += 1
        row = {name: rng.choice(values) for name, values in DIMENSIONS.items() if name != "dynamic"}
        row["dynamic"] = rng.choice(_RANDOM_DYNAMIC)
        try:
            c = config_of(row)
        except ConfigError:
            continue
        if c.descriptor not in seen:
            seen.add(c.descriptor)
            out.append(c)
    return out


def unique(configs) -> list[ConvConfig]:
    """Each descriptor once, first occurrence kept, order preserved."""
    seen: set[str] = set()
    out = []
    for c in configs:
        if c.descriptor not in seen:
            seen.add(c.descriptor)
            out.append(c)
    return out


def mirrored(cases: list[ConvConfig]) -> list[ConvConfig]:
    """Each case of a mirrored scheme again in each scheme that mirrors it (a8w8 -> a8w4), in order."""
    return [c.replace(scheme=m) for c in cases for m in MIRRORS.get(c.scheme, ())]
