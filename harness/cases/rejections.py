"""Configs the Arm backend documents as unsupported, and why.

Each rule mirrors a rejection the backend reports itself (its TOSA support
check for convolutions, `ConvolutionSupported`, or an explicit error in
`RewriteConvPass`). A case matching a rule must be rejected cleanly: left on
the CPU or refused with an error. Then its outcome is `expected_rejection`;
a crash elsewhere or a wrong number is still a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from harness.config import ConvConfig


@dataclass(frozen=True)
class Rejection:
    name: str
    reason: str  # the backend's own words
    applies: Callable[[ConvConfig], bool]
    # An exception counts as a clean rejection only if its message matches
    # this (case-insensitive) regex; leaving the conv on the CPU always does.
    error_pattern: str = "not supported"

    def matches_error(self, message: str) -> bool:
        return re.search(self.error_pattern, message, re.IGNORECASE) is not None


def _tconv_pad_exceeds_kernel(c: ConvConfig) -> bool:
    # TOSA out_pad = (-pad, -pad + output_padding) per dim must stay > -kernel.
    pads = c.explicit_padding()
    return any(
        p >= k or p - op >= k for (p, _), op, k in zip(pads, c.output_padding, c.kernel)
    )


REJECTIONS: tuple[Rejection, ...] = (
    Rejection(
        "tconv-dilation",
        "Transpose convolutions with dilation are not supported.",
        lambda c: c.transposed and any(d != 1 for d in c.dilation),
    ),
    Rejection(
        "tconv-not-2d",
        "Only 2D transpose convolutions are supported.",
        lambda c: c.transposed and c.rank != 2,
    ),
    Rejection(
        "tconv-grouped-per-channel",
        "Grouped transpose convolutions with per-channel weight quantization are not supported.",
        lambda c: c.transposed and c.groups > 1 and c.scheme in ("a8w8", "a16w8"),
    ),
    Rejection(
        "dynamic-padding-mode",
        "Pad mode '<mode>' does not support symbolic shape yet.",
        lambda c: c.dynamic_spatial and c.padding_mode != "zeros" and any(sum(p) for p in c.explicit_padding()),
        error_pattern="does not support symbolic shape",
    ),
    Rejection(
        "dynamic-needs-shape-extension",
        "Symbolic spatial dims unsupported (without the TOSA shape extension, a conv whose padding or "
        "input slice depends on a dynamic size is left on the CPU).",
        lambda c: c.dynamic_spatial and not c.shape_extension
        and (c.runtime_trim or c.symbolic_slice or c.transposed or c.pool_slice),
    ),
    Rejection(
        "tconv-out-pad-exceeds-kernel",
        "Transpose convolution out_pad exceeds kernel height/width.",
        lambda c: c.transposed and c.rank == 2 and _tconv_pad_exceeds_kernel(c),
    ),
)


def expected_rejection(c: ConvConfig) -> Rejection | None:
    """The first documented rejection that applies to `c`, if any."""
    for rule in REJECTIONS:
        if rule.applies(c):
            return rule
    return None


def rejection(name: str) -> Rejection | None:
    """The documented rejection called `name`, if it is still documented."""
    return next((r for r in REJECTIONS if r.name == name), None)
