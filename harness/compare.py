"""Tolerance policies and metrics: does a target's output match its reference?

Two policies, each an argument rather than a knob:

* Quantized schemes are compared in output LSB (quantization steps of the
  quantizer's output scale). The fake-quant reference differs from a correct
  integer pipeline only by the rounding of the fixed-point output RESCALE and
  of fp32 accumulation, so a correct lowering is within 1 LSB everywhere.
* fp32 follows the TOSA DOT_PRODUCT compliance rule (see `dot_product`).

Every comparison names its worst element as (n, c, spatial position).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

MAX_LSB = 1
# A reference whose output is mostly one value or mostly clamped cannot tell
# a right lowering from a wrong one: such a case is "mistrusted", never a pass.
DEGENERATE_MODE_SHARE = 0.9
DEGENERATE_CLAMP_SHARE = 0.5

_FP_FORMATS = {  # fraction bits, smallest normal
    "fp32": (23, float(np.finfo(np.float32).tiny)),
    "fp16": (10, float(np.finfo(np.float16).tiny)),
    "bf16": (7, 2.0**-126),
}


def element(index: tuple[int, ...]) -> dict:
    """Coordinates of one output element: batch, channel, spatial position."""
    return {"n": int(index[0]), "c": int(index[1]), "pos": [int(i) for i in index[2:]]}


def _argmax(a: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(a)), a.shape))


@dataclass
class Verdict:
    passed: bool
    metrics: dict
    reason: str


def quantize_output(x: torch.Tensor, scale: float, zero_point: int, qmin: int, qmax: int) -> np.ndarray:
    """Integer codes of a dequantized (or real-valued) tensor."""
    q = torch.round(x.double() / scale) + zero_point
    return q.clamp(qmin, qmax).to(torch.int64).numpy()


def lsb(out_q: np.ndarray, ref_q: np.ndarray) -> Verdict:
    """Pass when every element is within MAX_LSB codes of the reference."""
    if out_q.shape != ref_q.shape:
        return Verdict(False, {"shape": list(out_q.shape), "ref_shape": list(ref_q.shape)}, "output shape differs from the reference")
    diff = np.abs(out_q - ref_q)
    worst = _argmax(diff)
    max_lsb = int(diff[worst]) if diff.size else 0
    metrics = {
        "max_lsb": max_lsb,
        "n_diff": int(np.count_nonzero(diff)),
        "n_over": int(np.count_nonzero(diff > MAX_LSB)),
        "n_total": int(diff.size),
        "exact_share": round(float(np.mean(diff == 0)), 6) if diff.size else 1.0,
        "worst": {**element(worst), "out": int(out_q[worst]), "ref": int(ref_q[worst])},
    }
    passed = max_lsb <= MAX_LSB
    reason = "" if passed else f"{metrics['n_over']} element(s) off by more than {MAX_LSB} LSB (max {max_lsb})"
    return Verdict(passed, metrics, reason)


def dot_product(
    out: torch.Tensor, ref: torch.Tensor, bnd: torch.Tensor, ks: int, has_bias: bool, fmt: str = "fp32"
) -> Verdict:
    """TOSA DOT_PRODUCT compliance of `out` against an fp64 reference.

    With nf the output fraction bits (fp32 23, fp16 10, bf16 7), accumulating
    in the same format, `ksb = KS + (1 if a bias is non-zero else 0)` (the
    general form is ceil(KS / 2^((nf_acc - nf_out)/2)) + bias). Per element:

        err = (out - ref) / max(bnd * 2^(-1-nf), smallest_normal)

    where bnd is the same conv in fp64 on |x|, |w|, |b|. Require
    |err| <= 6*ksb for fp32 inputs (2*ksb otherwise) and, over the T elements,
    sum(err^2) <= 1.6*ksb*T. Where bnd is 0 the output must be exactly 0;
    where bnd*(1 + 2^(-1-nf)) overflows the format there is no limit.
    """
    nf, normal_min = _FP_FORMATS[fmt]
    o = out.double().numpy()
    r = ref.double().numpy()
    b = bnd.double().numpy()
    if o.shape != r.shape:
        return Verdict(False, {"shape": list(o.shape), "ref_shape": list(r.shape)}, "output shape differs from the reference")
    ksb = ks + (1 if has_bias else 0)
    limit = (6 if fmt == "fp32" else 2) * ksb
    fmax = {"fp32": float(np.finfo(np.float32).max), "fp16": 65504.0, "bf16": 3.3895313892515355e38}[fmt]
    overflow = b * (1 + 2.0 ** (-1 - nf)) > fmax
    zero_bound = b == 0
    err = (o - r) / np.maximum(b * 2.0 ** (-1 - nf), normal_min)
    err = np.where(overflow | zero_bound, 0.0, err)
    zero_violations = zero_bound & ~overflow & (o != 0)
    abs_err = np.abs(err)
    worst = _argmax(np.where(zero_violations, np.inf, abs_err))
    T = o.size
    sum_sq = float(np.sum(err**2))
    sum_sq_limit = 1.6 * ksb * T
    n_over = int(np.count_nonzero(abs_err > limit))
    metrics = {
        "max_err": round(float(abs_err.max()), 6) if T else 0.0,
        "err_limit": limit,
        "sum_sq": round(sum_sq, 6),
        "sum_sq_limit": round(sum_sq_limit, 3),
        "ksb": ksb,
        "n_over": n_over,
        "n_zero_bound_violations": int(np.count_nonzero(zero_violations)),
        "n_diff": int(np.count_nonzero(o != r.astype(np.float32).astype(np.float64))),
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
    return Verdict(not reasons, metrics, "; ".join(reasons))


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


def degenerate_reason(values: np.ndarray, qmin: int | None = None, qmax: int | None = None) -> str:
    """Why an output cannot discriminate (mostly one value / clamped), or ''."""
    if values.size == 0:
        return "empty output"
    _, counts = np.unique(values, return_counts=True)
    mode_share = counts.max() / values.size
    if mode_share > DEGENERATE_MODE_SHARE:
        return f"{mode_share:.0%} of the reference output is one value"
    if qmin is not None and qmax is not None:
        clamp_share = float(np.mean((values <= qmin) | (values >= qmax)))
        if clamp_share > DEGENERATE_CLAMP_SHARE:
            return f"{clamp_share:.0%} of the reference output is clamped to [{qmin}, {qmax}]"
    return ""
