"""Two executors of one lowered program compared: the second executor's verdict of its own.

Both run the same TOSA semantics (the reference model the TOSA graph, the ML
SDK's emulation layer the `.vgf` converted from it), so:

* INT: the outputs are integers of one RESCALE chain, dequantized by the same
  CPU op: they must agree bit for bit.
* float: the TOSA spec lets each executor's output differ from the exact
  result by the DOT_PRODUCT rule's per-element limit (the judge's
  `Expectation.limit`), so two conforming executors differ by at most twice
  that limit; where the limit is zero (exact data) they must agree bit for bit.

A difference past that is a finding about the executors (or the converter
between their two inputs), whatever eager torch says, and is reported as such.
"""

from __future__ import annotations

import numpy as np
import torch

RULE = "executors"


def disagreement(
    first: torch.Tensor, second: torch.Tensor, limit: np.ndarray | None, names: tuple[str, str]
) -> tuple[str, dict]:
    """('' or why the two outputs disagree, metrics). `limit`: the per-element limit each executor has against the
    exact result (None: the outputs must be bit-identical, the INT rule)."""
    a, b = first.detach().double().numpy(), second.detach().double().numpy()
    if a.shape != b.shape:
        return f"{names[0]} gives shape {list(a.shape)}, {names[1]} {list(b.shape)}", {"second": names[1]}
    # NaN or an infinity on one side only is a disagreement whatever the limit; NaN on both sides agrees
    one_sided = (np.isnan(a) != np.isnan(b)) | ((np.isinf(a) | np.isinf(b)) & (a != b))
    both_nan = np.isnan(a) & np.isnan(b)
    with np.errstate(invalid="ignore"):
        diff = np.where(one_sided | both_nan | np.isinf(a), 0.0, np.abs(a - b))
    unequal = first.detach().contiguous().numpy().tobytes() != second.detach().contiguous().numpy().tobytes()
    metrics = {
        "second": names[1],
        "bit_exact": not unequal,
        "max_abs_diff": float(diff.max(initial=0.0)),
        "n_diff": int(((a != b) & ~both_nan).sum()),
        "non_finite_one_side": int(one_sided.sum()),
    }
    if one_sided.any():
        worst = tuple(int(i) for i in np.argwhere(one_sided)[0])
        metrics["worst"] = {"index": list(worst), "first": float(a[worst]), "second": float(b[worst])}
        return (
            f"{names[0]} and {names[1]} disagree on {int(one_sided.sum())} element(s) where only one gives a "
            f"non-finite value: {a[worst]} against {b[worst]} at {list(worst)}"
        ), metrics
    if limit is None or not np.any(limit):
        if unequal:
            worst = tuple(int(i) for i in np.unravel_index(np.argmax(diff), diff.shape))
            metrics["worst"] = {"index": list(worst), "first": float(a[worst]), "second": float(b[worst])}
            return (
                f"{names[0]} and {names[1]} differ on {metrics['n_diff']} element(s), up to "
                f"{metrics['max_abs_diff']:.6g} at {list(worst)}, where they must agree bit for bit"
            ), metrics
        return "", metrics
    over = diff > 2 * limit
    with np.errstate(divide="ignore", invalid="ignore"):  # an element with a zero limit must be equal: ratio 0 or inf
        ratios = np.where(diff == 0, 0.0, diff / (2 * limit))
    metrics["max_share_of_limit"] = float(ratios.max(initial=0.0))  # how close to the allowed difference they came
    if over.any():
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(diff - 2 * limit), diff.shape))
        metrics["worst"] = {"index": list(worst), "first": float(a[worst]), "second": float(b[worst])}
        return (
            f"{names[0]} and {names[1]} differ by more than twice the DOT_PRODUCT limit on {int(over.sum())} "
            f"element(s), worst {diff[worst]:.6g} > {2 * limit[worst]:.6g} at {list(worst)}"
        ), metrics
    return "", metrics
