"""Comparison rules and metrics: does a target's output match its reference?

Each rule is an argument rather than a knob (the fixed numbers and their
arguments: `harness.policy.tolerances`; SQNR floors: `harness.policy.schemes`):

* Quantized schemes are compared in output LSB (quantization steps of the
  quantizer's output scale). Against the integer-exact oracle a conforming
  lowering is exact (0 LSB). Against the fake-quant model it may differ by
  the rounding of the fixed-point RESCALE and of fp32 sums: 1 LSB.
* SQNR against eager fp32 measures the scheme's inherent noise; a floor per
  scheme and data set catches a gross scale error both quantized paths share.
* Float schemes follow the TOSA DOT_PRODUCT compliance rule (see `dot_product`).

Every comparison names its worst element as (n, c, spatial position).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from harness.policy.tolerances import (
    DEGENERATE_CLAMP_SHARE,
    DEGENERATE_MODE_SHARE,
    DOT_PRODUCT_FACTOR,
    DOT_PRODUCT_FP32_FACTOR,
    DOT_PRODUCT_SUM_SQ_FACTOR,
    MAX_LSB_EXACT,
    TWO_SIDED_SATURATION_SHARE,
)

FP_FORMATS = {  # fraction bits, smallest normal
    "fp32": (23, float(np.finfo(np.float32).tiny)),
    "fp16": (10, float(np.finfo(np.float16).tiny)),
    "bf16": (7, 2.0**-126),
    "fp8e4m3": (3, 2.0**-6),
    "fp8e5m2": (2, 2.0**-14),
}
FP_MAX = {"fp32": float(np.finfo(np.float32).max), "fp16": 65504.0, "bf16": 3.3895313892515355e38}


def element(index: tuple[int, ...]) -> dict:
    """Coordinates of one output element: batch, channel, spatial position."""
    return {"n": int(index[0]), "c": int(index[1]), "pos": [int(i) for i in index[2:]]}


def _argmax(a: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(a)), a.shape))


@dataclass
class RuleCheck:
    passed: bool
    metrics: dict
    reason: str


def quantize_output(x: torch.Tensor, scale: float, zero_point: int, qmin: int, qmax: int) -> np.ndarray:
    """Integer codes of a dequantized (or real-valued) tensor."""
    q = torch.round(x.double() / scale) + zero_point
    return q.clamp(qmin, qmax).to(torch.int64).numpy()


def lsb(out_q: np.ndarray, ref_q: np.ndarray, max_lsb: int = MAX_LSB_EXACT) -> RuleCheck:
    """Pass when every element is within `max_lsb` codes of the reference."""
    if out_q.shape != ref_q.shape:
        return RuleCheck(
            False,
            {"shape": list(out_q.shape), "ref_shape": list(ref_q.shape)},
            "output shape differs from the reference",
        )
    diff = np.abs(out_q - ref_q)
    worst = _argmax(diff)
    worst_lsb = int(diff[worst]) if diff.size else 0
    metrics = {
        "max_lsb": worst_lsb,
        "n_diff": int(np.count_nonzero(diff)),
        "n_over": int(np.count_nonzero(diff > max_lsb)),
        "n_total": int(diff.size),
        "exact_share": round(float(np.mean(diff == 0)), 6) if diff.size else 1.0,
        "worst": {**element(worst), "out": int(out_q[worst]), "ref": int(ref_q[worst])},
    }
    passed = worst_lsb <= max_lsb
    reason = "" if passed else f"{metrics['n_over']} element(s) off by more than {max_lsb} LSB (max {worst_lsb})"
    return RuleCheck(passed, metrics, reason)


def ksb(ks: int, has_bias: bool, fmt: str, acc: str = "fp32", roundings: int = 0) -> int:
    """ceil(KS / 2^((nf_acc - nf_out)/2)) + (1 if the bias is non-zero) + the roundings that ops after the
    conv add in the output's format (`Context.format_roundings`: whole units, not shrunk like KS)."""
    nf_out, nf_acc = FP_FORMATS[fmt][0], FP_FORMATS[acc][0]
    return math.ceil(ks / 2.0 ** ((nf_acc - nf_out) / 2)) + (1 if has_bias else 0) + roundings


def dot_product_limit(ks: int, has_bias: bool, fmt: str, acc: str = "fp32", roundings: int = 0) -> int:
    """Per-element |err| limit: 6*ksb for fp32 inputs, 2*ksb otherwise."""
    return (DOT_PRODUCT_FP32_FACTOR if fmt == "fp32" else DOT_PRODUCT_FACTOR) * ksb(ks, has_bias, fmt, acc, roundings)


def dot_product_errors(out: torch.Tensor, ref: torch.Tensor, bnd: torch.Tensor, fmt: str) -> np.ndarray:
    """err = (out - ref) / max(bnd * 2^(-1-nf), smallest_normal); 0 where bnd is 0 or overflows."""
    nf, normal_min = FP_FORMATS[fmt]
    o, r, b = (t.double().numpy() for t in (out, ref, bnd))
    err = (o - r) / np.maximum(b * 2.0 ** (-1 - nf), normal_min)
    overflow = b * (1 + 2.0 ** (-1 - nf)) > FP_MAX[fmt]
    return np.where(overflow | (b == 0), 0.0, err)


def dot_product_abs_limits(
    ref: torch.Tensor, bnd: torch.Tensor, ks: int, has_bias: bool, fmt: str, acc: str = "fp32", roundings: int = 0
) -> np.ndarray:
    """The rule's per-element limit on |out - ref| in the output's own units: the |err| limit times
    max(bnd * 2^(-1-nf), smallest normal); 0 where bnd is 0, infinite where the bound overflows."""
    nf, normal_min = FP_FORMATS[fmt]
    b = bnd.double().numpy()
    limit = dot_product_limit(ks, has_bias, fmt, acc, roundings) * np.maximum(b * 2.0 ** (-1 - nf), normal_min)
    return np.where(b * (1 + 2.0 ** (-1 - nf)) > FP_MAX[fmt], np.inf, np.where(b == 0, 0.0, limit))


def dot_product(
    out: torch.Tensor,
    ref: torch.Tensor,
    bnd: torch.Tensor,
    ks: int,
    has_bias: bool,
    fmt: str = "fp32",
    acc: str = "fp32",
    roundings: int = 0,
) -> RuleCheck:
    """TOSA DOT_PRODUCT compliance of `out` against an fp64 reference.

    With nf the output fraction bits (fp32 23, fp16 10, bf16 7) and nf_acc
    those of the accumulator the graph declares for the conv (its acc_type),
    `ksb = ceil(KS / 2^((nf_acc - nf)/2)) + (1 if a bias is non-zero else 0)`,
    KS the dot-product length (KH*KW*IC per group, x KD in 3D). Per element:

        err = (out - ref) / max(bnd * 2^(-1-nf), smallest_normal)

    where bnd is the same conv in fp64 on |x|, |w|, |b|. Require
    |err| <= 6*ksb for fp32 inputs (2*ksb otherwise) and, over the T elements,
    sum(err^2) <= 1.6*ksb*T. Where bnd is 0 the output must be exactly 0;
    where bnd*(1 + 2^(-1-nf)) overflows the format there is no limit.
    """
    if tuple(out.shape) != tuple(ref.shape):
        return RuleCheck(
            False, {"shape": list(out.shape), "ref_shape": list(ref.shape)}, "output shape differs from the reference"
        )
    o, r, b = (t.double().numpy() for t in (out, ref, bnd))
    k = ksb(ks, has_bias, fmt, acc, roundings)
    limit = dot_product_limit(ks, has_bias, fmt, acc, roundings)
    err = dot_product_errors(out, ref, bnd, fmt)
    overflow = b * (1 + 2.0 ** (-1 - FP_FORMATS[fmt][0])) > FP_MAX[fmt]
    zero_violations = (b == 0) & ~overflow & (o != 0)
    abs_err = np.abs(err)
    worst = _argmax(np.where(zero_violations, np.inf, abs_err))
    T = o.size
    sum_sq = float(np.sum(err**2))
    sum_sq_limit = DOT_PRODUCT_SUM_SQ_FACTOR * k * T
    n_over = int(np.count_nonzero(abs_err > limit))
    metrics = {
        "max_err": round(float(abs_err.max()), 6) if T else 0.0,
        "err_limit": limit,
        "sum_sq": round(sum_sq, 6),
        "sum_sq_limit": round(sum_sq_limit, 3),
        "ksb": k,
        "acc": acc,
        "n_over": n_over,
        "n_zero_bound_violations": int(np.count_nonzero(zero_violations)),
        "n_total": int(T),
        "max_abs_diff": float(np.max(np.abs(o - r))) if T else 0.0,
        "worst": {**element(worst), "out": float(o[worst]), "ref": float(r[worst]), "bnd": float(b[worst])},
    }
    reasons = []
    if n_over:
        reasons.append(f"{n_over} element(s) beyond |err| <= {limit} (max {metrics['max_err']:.3g})")
    if metrics["n_zero_bound_violations"]:
        reasons.append(f"{metrics['n_zero_bound_violations']} element(s) non-zero where the bound is 0")
    if sum_sq > sum_sq_limit:
        reasons.append(f"error variance {sum_sq:.3g} > {sum_sq_limit:.3g}")
    return RuleCheck(not reasons, metrics, "; ".join(reasons))


def half_ulp(values: np.ndarray, fmt: str) -> np.ndarray:
    """Half the spacing of format `fmt` at |values|: the most one round-to-nearest moves a value."""
    nf, normal_min = FP_FORMATS[fmt]
    v = np.maximum(np.abs(values), normal_min)
    return 2.0 ** (np.floor(np.log2(v)) - nf - 1)


def cast_limits(
    ref: torch.Tensor, bnd: torch.Tensor, ks: int, has_bias: bool, fmt: str, acc: str, conv: str, roundings: int = 0
) -> np.ndarray:
    """Per-element |out - ref| limit of a conv computed in format `conv` and CAST to `fmt`.

    The conv's own limit e (the DOT_PRODUCT rule for fp8 inputs into fp16: 2*ksb
    units of max(bnd * 2^-11, smallest fp16 normal)) plus one rounding to `fmt`
    of a value at most |ref| + e: e + half_ulp_fmt(|ref| + e). Infinite where the
    bound overflows `conv` (no limit there, as in the rule).
    """
    nf, normal_min = FP_FORMATS[conv]
    r, b = ref.double().numpy(), bnd.double().numpy()
    e = dot_product_limit(ks, has_bias, conv, acc, roundings) * np.maximum(b * 2.0 ** (-1 - nf), normal_min)
    limit = e + half_ulp(np.abs(r) + e, fmt)
    return np.where(b * (1 + 2.0 ** (-1 - nf)) > FP_MAX[conv], np.inf, limit)


def dot_product_cast(
    out: torch.Tensor,
    ref: torch.Tensor,
    bnd: torch.Tensor,
    ks: int,
    has_bias: bool,
    fmt: str,
    acc: str,
    conv: str,
    roundings: int = 0,
) -> RuleCheck:
    """An fp8 conv: TOSA computes it into a tensor of format `conv` (fp16), where
    the DOT_PRODUCT rule holds, and the backend CASTs that to `fmt` (round to
    nearest), which is all a caller sees. Per element |out - ref| <= `cast_limits`; where bnd
    is 0 the output must be exactly 0. The rule's variance test is about the
    fp16 values, which the CAST hides, so it is not applied."""
    if tuple(out.shape) != tuple(ref.shape):
        return RuleCheck(
            False, {"shape": list(out.shape), "ref_shape": list(ref.shape)}, "output shape differs from the reference"
        )
    o, r, b = (t.double().numpy() for t in (out, ref, bnd))
    limits = cast_limits(ref, bnd, ks, has_bias, fmt, acc, conv, roundings)
    ratio = np.where(np.isinf(limits), 0.0, np.abs(o - r) / limits)
    zero_violations = (b == 0) & (o != 0)
    worst = _argmax(np.where(zero_violations, np.inf, ratio))
    n_over = int(np.count_nonzero(ratio > 1))
    metrics = {
        "max_err": round(float(ratio.max()), 6) if o.size else 0.0,  # in units of the element's limit
        "err_limit": 1,
        "ksb": ksb(ks, has_bias, conv, acc, roundings),
        "acc": acc,
        "n_over": n_over,
        "n_zero_bound_violations": int(np.count_nonzero(zero_violations)),
        "n_total": int(o.size),
        "max_abs_diff": float(np.max(np.abs(o - r))) if o.size else 0.0,
        "worst": {
            **element(worst),
            "out": float(o[worst]),
            "ref": float(r[worst]),
            "bnd": float(b[worst]),
            "limit": float(limits[worst]),
        },
    }
    reasons = []
    if n_over:
        reasons.append(
            f"{n_over} element(s) beyond the {conv} conv limit plus one rounding to {fmt} "
            f"(max {metrics['max_err']:.3g} limits)"
        )
    if metrics["n_zero_bound_violations"]:
        reasons.append(f"{metrics['n_zero_bound_violations']} element(s) non-zero where the bound is 0")
    return RuleCheck(not reasons, metrics, "; ".join(reasons))


def sqnr_db(reference: torch.Tensor, approx: torch.Tensor) -> float | None:
    """Signal-to-quantization-noise ratio of `approx` against `reference`."""
    ref = reference.double()
    noise = float(torch.sum((approx.double() - ref) ** 2))
    signal = float(torch.sum(ref**2))
    if noise == 0:
        return None  # identical: infinite SQNR (JSON has no inf)
    if signal == 0:
        return -math.inf if noise else None
    return round(10 * math.log10(signal / noise), 3)


def degenerate_reason(
    values: np.ndarray, qmin: int | None = None, qmax: int | None = None, zero_point: int | None = None
) -> str:
    """Why an output cannot discriminate (mostly one value / clamped), or ''.

    Codes at qmin count as clamped unless qmin is the real zero (after a
    fused ReLU the quantizer puts the zero point at qmin: zeros are values).
    Calibrated on the case's own input, the output's minimum and maximum land
    on qmin and qmax by construction: one element at each rail is what
    calibration puts there, only the ones beyond it are clamped (a conv1d with
    3 outputs, 2 of them on the rails, is not degenerate).
    """
    if values.size == 0:
        return "empty output"
    _, counts = np.unique(values, return_counts=True)
    mode_share = counts.max() / values.size
    if mode_share > DEGENERATE_MODE_SHARE:
        return f"{mode_share:.0%} of the reference output is one value"
    if qmin is not None and qmax is not None:
        low = int(np.sum(values <= qmin)) if zero_point != qmin else 0
        high = int(np.sum(values >= qmax))
        clamp_share = (max(low - 1, 0) + max(high - 1, 0)) / values.size
        if clamp_share > DEGENERATE_CLAMP_SHARE:
            return (
                f"{clamp_share:.0%} of the reference output is clamped to [{qmin}, {qmax}] beyond the one element "
                "at each rail that calibration puts there"
            )
    return ""


def two_sided_saturation(reference: np.ndarray, share: float = TWO_SIDED_SATURATION_SHARE) -> bool:
    """Whether more than `share` of the elements equal the maximum and more than
    `share` equal the minimum: an output clamped at both ends, where the
    quantization step is set by the unclamped range and SQNR says little."""
    r = np.asarray(reference)
    if r.size == 0 or r.max() == r.min():
        return False
    return bool(np.mean(r == r.max()) > share and np.mean(r == r.min()) > share)


def _ranges(values: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    out, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            out.append(f"{start}-{v}" if v != start else f"{v}")
            start = None
    return ",".join(out)


def localize(diff: np.ndarray, border: np.ndarray) -> dict:
    """Where the differing elements sit: border vs interior, which channels.

    `diff` is a boolean (N, C, *spatial) mask; `border` a (*spatial) mask of the
    positions whose window reaches the padding or the edge of the input.
    """
    n = int(diff.sum())
    on_border = int((diff & border[None, None]).sum())
    channels = [int(c) for c in np.flatnonzero(diff.any(axis=tuple(i for i in range(diff.ndim) if i != 1)))]
    border_total = int(border.sum()) * diff.shape[0] * diff.shape[1]
    return {
        "n_diff": n,
        "border": on_border,
        "interior": n - on_border,
        "border_share": round(on_border / n, 4) if n else 0.0,
        "border_positions_share": round(border_total / diff.size, 4) if diff.size else 0.0,
        "channels": _ranges(channels),
        "n_channels": len(channels),
        "of_channels": int(diff.shape[1]),
    }
