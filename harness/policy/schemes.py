"""The numeric schemes: every fact about a scheme, in one table.

A scheme says what a case's tensors are (float types, or the PT2E quantizer
configuration for the INT ones), which TOSA profile and extensions it lowers
to, which rule judges its output, and the SQNR floor of the INT ones. Adding
a scheme is one row here (and, for a new quantizer kind, its mapping in the
target's quantizer factory).

Torch-free on purpose: the config validator, the descriptor and the case
strategies read this table without loading torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Judging rules (harness.judging.judge applies them):
INT_RULE = "int"  # integer-exact oracle (standalone) / fake-quant within the context's tolerance; SQNR floor
DOT_PRODUCT_RULE = "dot-product"  # the TOSA DOT_PRODUCT compliance rule for the declared accumulator
DOT_PRODUCT_CAST_RULE = "dot-product-cast"  # that rule on the conv's fp16 output plus one rounding to fp8
RULES = (INT_RULE, DOT_PRODUCT_RULE, DOT_PRODUCT_CAST_RULE)
# What decided a judged case (a result's `rule`): the scheme's rule as the
# case applied it. INT: the integer-exact oracle (the conv alone) or the
# fake-quant model within the context's tolerance. Float: the DOT_PRODUCT
# bound, or on exact data the exactly rounded result too.
DECIDING_RULES = (
    "int-exact",
    "int-fake-quant",
    "dot-product",
    "dot-product-exact",
    "dot-product-cast",
    "dot-product-cast-exact",
    "executors",
)  # executors: two executors of one program disagree


@dataclass(frozen=True)
class QuantizerConfig:
    """Which of the Arm quantizer's symmetric configurations, per channel or per tensor."""

    kind: str  # "a8w8" (get_symmetric_quantization_config) | "a16w8" (get_symmetric_a16w8_quantization_config)
    # | "a8w4" (get_symmetric_a8w4_quantization_config: int4 weights, -7..7, post-training)
    per_channel: bool


@dataclass(frozen=True)
class SqnrFloor:
    """An INT scheme's floor on SQNR against fp32, and what it rests on."""

    db: float
    basis: str  # 'noise model', 'empirical' (below a measured distribution) or 'none' (no check, and why)
    why: str


@dataclass(frozen=True)
class Scheme:
    name: str
    tosa_spec: str  # the TOSA 1.0 profile and extensions a static standalone case lowers to
    rule: str
    # Float schemes: the torch dtype (name) of the model, its inputs and outputs.
    # INT schemes: None (an fp32 model, quantized by PT2E, with Q/DQ at the boundary).
    dtype: str | None = None
    quantizer: QuantizerConfig | None = None
    # The float format whose DOT_PRODUCT rule bounds the conv's own output:
    # the scheme's type, except fp8, whose conv TOSA computes into fp16.
    conv_format: str | None = None
    # In graph contexts and with dynamic shapes too, or the conv alone and static only.
    in_graphs: bool = True
    # INT: SQNR floor against eager fp32, by default and per data set.
    sqnr: SqnrFloor | None = None
    sqnr_by_dataset: dict[str, SqnrFloor] = field(default_factory=dict)
    # In the tiers (smoke, nightly, full) and the Ethos-U targets, or runnable by descriptor on tosa only:
    # a new scheme joins the tiers once a nightly run of it has been investigated.
    tiered: bool = True
    # A scheme that joins the tiers as the twin of another: every case of a tier in `mirrors` is run in
    # this scheme too, and no strategy draws it itself. The case generators (pairwise, random) then
    # draw exactly what they drew before it came, so every earlier case of a tier, and its baseline, stays.
    mirrors: str | None = None
    # The TOSA element type of the conv's weight tensor in the lowered graph: what the scheme asks the backend
    # for. Numbers cannot tell int4 weights from the same values stored as int8 (harness.judging.op_choice).
    weight_type: str = ""

    @property
    def quantized(self) -> bool:
        return self.quantizer is not None


# SQNR floors: their job is to catch a scale error both quantized paths share,
# which comparing the two cannot see. A scale 1.25x off costs a signal 12 dB;
# 2x off, 6 dB. Each floor says what it is (`SqnrFloor.basis`): derived from a
# noise model, or empirical (below the measured distribution of passing cases,
# which its `why` gives), or none (a data set that leaves the check nothing to
# separate, and why). The distributions: ExecuTorch 1.5.1, smoke and the nightly
# cases the registry covers, passing cases, min / 1st percentile / median.
_A8W8 = SqnrFloor(
    14.0,
    "empirical",
    "below the passing cases: a8w8 min 34.3, p1 34.7, median 39.4 dB (97 "
    "cases); a8w8-pt p1 25.7, median 38.8 dB (63); earlier nightly runs 19.7 and 20.1 dB at their "
    "lowest (per-channel-skewed weights before hardtanh, a spike channel under per-tensor "
    "weights); a scale 1.25x off costs 12 dB",
)
_A16W8 = SqnrFloor(
    25.0,
    "empirical",
    "below the passing cases: min 41.7, median 47.1 dB (54 cases); 35.5 dB the lowest of an earlier nightly",
)
# `full-range` saturates a quarter to a half of the outputs by design (4.1-7.3 dB measured at 8 bits).
_SATURATED = SqnrFloor(
    0.0,
    "none",
    "full-range data saturate a quarter to a half of the outputs by design "
    "(4.1-9.0 dB measured): the SQNR says how much is clamped, not whether the scale is right",
)
_INT8_FLOORS = {"full-range": _SATURATED}
# int4 weights (symmetric, -7..7, max-scaled): for uniform weights (torch's
# default init) the weight noise alone gives SQNR = 12 * 7^2 / 3 = 196, 22.9 dB,
# and 22.6 dB with the 8-bit activations.
_A8W4 = SqnrFloor(
    8.0,
    "noise model",
    "int4 weight noise alone, uniform weights: 12 * 7^2 / 3 = 196, 22.9 dB "
    "(22.6 with 8-bit activations); measured min 15.8, median 21.7 dB (83 cases; 17.2 and 11.4 dB "
    "the lowest per channel and per tensor of 311 nightly configs); 8 dB still catches a shared "
    "scale error of 1.4x or more",
)
# `special` data (huge and tiny values) leave int4 weights little signal by design, like `full-range`.
_INT4_FLOORS = {
    "full-range": _SATURATED,
    "special": SqnrFloor(
        0.0,
        "none",
        "special data (huge and tiny values) leave int4 weights little signal by design (3.2 and 4.5 dB "
        "measured on earlier nightly runs): nothing separates a scale error from that",
    ),
}
# Per-tensor int4 weights on `channel-skew` data (output channels' weights spread
# over 100x, logspace(-1, 1)): one step of max|w|/7 rounds every weight of a
# channel below 0.71x the largest channel's magnitude to 0, i.e. half of the
# channels (0.1..0.72 of 8) lose their whole signal, which the quantized model
# then carries as error. Unclamped that is ~23 dB (their share of the power is
# 0.5%), but under a clamp (hardtanh, relu6) the large channels saturate and
# their power caps at ~1 each: 10 log10(3.3 / 0.24) = 11.5 dB at best, less with
# the 3-level channel next to them; measured 5.8 dB on a conv3d with hardtanh,
# the fake-quant model as low as the lowered one.
_INT4_PER_TENSOR_FLOORS = {
    **_INT4_FLOORS,
    "channel-skew": SqnrFloor(
        0.0,
        "none",
        "per-tensor int4 weights round the weaker half of 100x-skewed channels to 0: 11.5 dB at best "
        "under a clamp, 5.8 dB measured, the fake-quant model as low: nothing separates a scale error from that",
    ),
}

SCHEMES: dict[str, Scheme] = {
    s.name: s
    for s in (
        Scheme("fp32", "TOSA-1.0+FP", DOT_PRODUCT_RULE, dtype="float32", conv_format="fp32", weight_type="FP32"),
        Scheme("fp16", "TOSA-1.0+FP", DOT_PRODUCT_RULE, dtype="float16", conv_format="fp16", weight_type="FP16"),
        Scheme("bf16", "TOSA-1.0+FP+bf16", DOT_PRODUCT_RULE, dtype="bfloat16", conv_format="bf16", weight_type="BF16"),
        Scheme(
            "a8w8",
            "TOSA-1.0+INT",
            INT_RULE,
            quantizer=QuantizerConfig("a8w8", True),
            sqnr=_A8W8,
            sqnr_by_dataset=_INT8_FLOORS,
            weight_type="INT8",
        ),
        Scheme(
            "a8w8-pt",
            "TOSA-1.0+INT",
            INT_RULE,
            quantizer=QuantizerConfig("a8w8", False),
            sqnr=_A8W8,
            sqnr_by_dataset=_INT8_FLOORS,
            weight_type="INT8",
        ),
        Scheme(
            "a16w8",
            "TOSA-1.0+INT+int16",
            INT_RULE,
            quantizer=QuantizerConfig("a16w8", True),
            sqnr=_A16W8,
            weight_type="INT8",
        ),
        Scheme(
            "a8w4",
            "TOSA-1.0+INT+int4",
            INT_RULE,
            quantizer=QuantizerConfig("a8w4", True),
            sqnr=_A8W4,
            sqnr_by_dataset=_INT4_FLOORS,
            mirrors="a8w8",
            weight_type="INT4",
        ),
        Scheme(
            "a8w4-pt",
            "TOSA-1.0+INT+int4",
            INT_RULE,
            quantizer=QuantizerConfig("a8w4", False),
            sqnr=_A8W4,
            sqnr_by_dataset=_INT4_PER_TENSOR_FLOORS,
            mirrors="a8w8-pt",
            weight_type="INT4",
        ),
        # TOSA FP8 extensions: fp8 operands, an FP16 accumulator and output, a
        # CAST back to fp8. The rule bounds that one rounding after the conv,
        # not one after every op of a graph context: the conv alone, static.
        Scheme(
            "fp8e4m3",
            "TOSA-1.0+FP+fp8e4m3",
            DOT_PRODUCT_CAST_RULE,
            dtype="float8_e4m3fn",
            conv_format="fp16",
            in_graphs=False,
            weight_type="FP8E4M3",
        ),
        Scheme(
            "fp8e5m2",
            "TOSA-1.0+FP+fp8e5m2",
            DOT_PRODUCT_CAST_RULE,
            dtype="float8_e5m2",
            conv_format="fp16",
            in_graphs=False,
            weight_type="FP8E5M2",
        ),
    )
}

SCHEME_NAMES = tuple(SCHEMES)
TIERED_SCHEMES = tuple(s.name for s in SCHEMES.values() if s.tiered)
# What the tiers' strategies draw and put in graphs (a mirroring scheme comes with its twin's cases).
GRAPH_SCHEMES = tuple(s.name for s in SCHEMES.values() if s.in_graphs and s.tiered and not s.mirrors)
MIRRORS: dict[str, tuple[str, ...]] = {
    base: tuple(s.name for s in SCHEMES.values() if s.tiered and s.mirrors == base)
    for base in {s.mirrors for s in SCHEMES.values() if s.mirrors}
}
INT_SCHEMES = tuple(s.name for s in SCHEMES.values() if s.quantized and s.tiered)  # the Ethos-U targets' schemes
FLOAT_SCHEMES = tuple(s.name for s in SCHEMES.values() if not s.quantized)
FP8_SCHEMES = tuple(s.name for s in SCHEMES.values() if s.rule == DOT_PRODUCT_CAST_RULE)


def sqnr_floor(scheme: str, dataset: str, saturated: bool = False) -> float | None:
    """The SQNR floor (dB) of an INT case (see `sqnr_floor_of` for what it is)."""
    floor = sqnr_floor_of(scheme, dataset, saturated)
    return None if floor is None else floor.db


def sqnr_floor_of(scheme: str, dataset: str, saturated: bool = False) -> SqnrFloor | None:
    """The SQNR floor of an INT case. `saturated`: the fp32 output itself sits
    at both ends of a clamp for much of the tensor (exact data through a
    hardtanh): treated like `full-range`, whose floor it then takes.

    None for `captured` data: the floors hold for the distributions the data
    sets draw, and a model's activations can be anything (a random-init
    network's deep layers quantize to 0 dB in the fake-quant model itself).
    Against fp32 the lowered output is then within the fake-quant check's
    tolerance of the fake-quant output, which bounds its SQNR by the
    fake-quant model's own (triangle inequality): the floor adds nothing."""
    if dataset == "captured":
        return None
    s = SCHEMES[scheme]
    if saturated:
        dataset = "full-range"
    return s.sqnr_by_dataset.get(dataset, s.sqnr)
