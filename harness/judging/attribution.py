"""Where a case's error comes from: each stage's own share, measured against the stage before it.

A verdict says whether the output is right; a user asking why a number is off (pytorch/executorch#16426) wants
the error split by the stage that added it:

* `quantization`: the fake-quantized model (the quantizer's scales, fp32 arithmetic) against the float model in
  fp64: what the scheme costs before any lowering. INT schemes only.
* `lowering`: the target's output against the stage before it: the fake-quantized model (INT, in output LSB,
  codes against codes) or the fp64 reference (float, in units of the TOSA DOT_PRODUCT rule's per-element
  limit: 1.0 is at the limit).
* `executor`: the second executor against the first, where two ran (`harness.judging.executors`).

Each stage: `worst` (its largest error, in `unit`), `at` (that element's index), `sqnr_db` (null when the two
are identical). A case that did not pass also names `added_by`: the first stage whose own error breaks its own
check (quantization: its SQNR below the scheme's floor; lowering: the case's rule; executor: a disagreement).

Pure: numpy and torch tensors in, a JSON-ready dict out.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from harness.judging.compare import sqnr_db

LSB = "lsb"
RULE_UNITS = "rule"  # |error| / the element's limit under the case's rule
ABSOLUTE = "abs"  # where the rule allows no error at all (exact data): the error itself


def _worst(errors: np.ndarray) -> tuple[float, list[int]]:
    if errors.size == 0 or not np.any(errors):
        return 0.0, []
    flat = int(np.nanargmax(np.where(np.isnan(errors), np.inf, errors)))
    index = [int(i) for i in np.unravel_index(flat, errors.shape)]
    value = float(errors.flat[flat])
    return (value if math.isfinite(value) else math.inf), index


def _stage(errors: np.ndarray, unit: str, reference: torch.Tensor, approx: torch.Tensor) -> dict:
    worst, at = _worst(errors)
    return {
        "worst": round(worst, 4) if math.isfinite(worst) else None,  # None: non-finite (JSON has no inf)
        "unit": unit,
        "at": at,
        "sqnr_db": sqnr_db(reference, approx),
    }


def quantization(ref64: torch.Tensor, fake_quant: torch.Tensor, scale: float) -> dict:
    """The fake-quantized model's error against the float model in fp64, in output LSB."""
    errors = np.abs(fake_quant.double().numpy() - ref64.double().numpy()) / scale
    return _stage(errors, LSB, ref64, fake_quant)


def lowering_int(out_codes: np.ndarray, fq_codes: np.ndarray, output: torch.Tensor, fake_quant: torch.Tensor) -> dict:
    """The target's output codes against the fake-quantized model's, in output LSB."""
    errors = np.abs(out_codes.astype(np.int64) - fq_codes.astype(np.int64)).astype(np.float64)
    return _stage(errors, LSB, fake_quant, output)


def _against_limit(diff: np.ndarray, limit: np.ndarray, reference: torch.Tensor, approx: torch.Tensor) -> dict:
    """`diff` in units of the per-element `limit`, or absolute where the limit allows nothing anywhere."""
    if not np.any(limit):
        return _stage(diff, ABSOLUTE, reference, approx)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / limit)
    return _stage(ratio, RULE_UNITS, reference, approx)


def lowering_float(output: torch.Tensor, ref64: torch.Tensor, limit: np.ndarray) -> dict:
    """The target's output against fp64 in units of the rule's per-element limit (absolute where it allows 0)."""
    diff = np.abs(output.double().numpy() - ref64.double().numpy())
    return _against_limit(np.where(np.isnan(diff), np.inf, diff), limit, ref64, output)


def executor(first: torch.Tensor, second: torch.Tensor, scale: float | None, limit: np.ndarray | None) -> dict:
    """The second executor against the first: LSB for INT (`scale`), else in units of the difference two
    conforming executors may show (`harness.judging.executors`: twice the rule's per-element `limit`), absolute
    where none is allowed. NaN on one side only is the worst error there is; NaN on both agrees."""
    a, b = first.detach().double().numpy(), second.detach().double().numpy()
    if a.shape != b.shape:
        return {"worst": None, "unit": ABSOLUTE, "at": [], "sqnr_db": None}
    with np.errstate(invalid="ignore"):
        diff = np.where(np.isnan(a) != np.isnan(b), np.inf, np.nan_to_num(np.abs(a - b), nan=0.0))
    if scale is not None:
        return _stage(np.rint(diff / scale), LSB, first, second)
    return _against_limit(diff, 2 * limit if limit is not None else np.zeros(diff.shape), first, second)


def added_by(stages: dict, quantization_ok: bool, lowering_ok: bool, executors_ok: bool = True) -> str:
    """The first stage whose own error breaks its own check; '' when none does (the case failed elsewhere)."""
    if "quantization" in stages and not quantization_ok:
        return "quantization"
    if "lowering" in stages and not lowering_ok:
        return "lowering"
    if "executor" in stages and not executors_ok:
        return "executor"
    return ""
