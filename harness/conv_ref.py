"""The reference conv, on explicit tensors in any dtype, and the border mask.

Neutral ground: the module a case exports (`harness.build.model`), the
oracles and the localization of mismatches (`harness.judging`) all take the
conv's semantics from here, and nothing here knows how a case is lowered.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness.config import ConvConfig

_F_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_F_TCONV = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def conv_forward(c: ConvConfig, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """The conv of `c` on explicit tensors, in their dtype (torch semantics)."""
    if c.transposed:
        return _F_TCONV[c.rank](
            x,
            weight,
            bias,
            stride=c.stride,
            padding=c.padding,
            output_padding=c.output_padding,
            groups=c.groups,
            dilation=c.dilation,
        )
    if c.padding_mode != "zeros":
        pads: list[int] = []
        for before, after in reversed(c.explicit_padding()):
            pads += [before, after]
        x = F.pad(x, pads, mode=c.padding_mode)
        padding: object = 0
    else:
        padding = c.padding
    return _F_CONV[c.rank](x, weight, bias, stride=c.stride, padding=padding, dilation=c.dilation, groups=c.groups)


def border_mask(c: ConvConfig) -> torch.Tensor:
    """Output positions whose window reaches past the input (padding or edge).

    Counts the kernel taps that land on real input at each output position,
    once for the actual input and once for the same input extended on every
    side; where the counts differ the output depends on the border. Works for
    transposed convs too, where stride makes interior counts vary by phase.
    Shape: the output's spatial shape.
    """
    # A margin wider than any window, and a multiple of the stride so that
    # output positions of the two problems line up.
    margin = [s * (((k - 1) * d) // s + 2) for k, d, s in zip(c.kernel, c.dilation, c.stride)]
    ones_w = torch.ones((1, 1, *c.kernel), dtype=torch.float64)
    plain = c.replace(
        in_channels=1,
        out_channels=1,
        groups=1,
        batch=1,
        padding_mode="zeros",
        bias=False,
        context="none",
        dynamic="none",
    )
    actual = conv_forward(plain, torch.ones((1, 1, *c.input_size), dtype=torch.float64), ones_w, None)
    wide_size = tuple(L + 2 * m for L, m in zip(c.input_size, margin))
    wide = conv_forward(plain, torch.ones((1, 1, *wide_size), dtype=torch.float64), ones_w, None)
    index = [slice(None), slice(None)]
    for i, m in enumerate(margin):
        # The same output positions in the widened problem.
        offset = m * c.stride[i] if c.transposed else m // c.stride[i]
        index.append(slice(offset, offset + actual.shape[2 + i]))
    return (actual < wide[tuple(index)])[0, 0]
