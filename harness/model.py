"""The nn.Module a case exports, and the same conv as a plain function.

The module is what a user writes (nn.ConvNd / nn.ConvTransposeNd), so the
exported graph takes the same path into the backend as real models do. The
function is the oracles' conv: any dtype, any weights, same semantics.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from harness.config import ConvConfig
from harness.data import CaseTensors

_CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
_TCONV = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}
_F_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_F_TCONV = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _conv_module(c: ConvConfig) -> nn.Module:
    if c.transposed:
        return _TCONV[c.rank](
            c.in_channels,
            c.out_channels,
            c.kernel,
            stride=c.stride,
            padding=c.padding,
            output_padding=c.output_padding,
            groups=c.groups,
            bias=c.bias,
            dilation=c.dilation,
            padding_mode=c.padding_mode,
        )
    return _CONV[c.rank](
        c.in_channels,
        c.out_channels,
        c.kernel,
        stride=c.stride,
        padding=c.padding,
        dilation=c.dilation,
        groups=c.groups,
        bias=c.bias,
        padding_mode=c.padding_mode,
    )


def build_model(c: ConvConfig, tensors: CaseTensors, seed: int = 0) -> nn.Module:
    """The eval-mode fp32 module for `c`: the conv holding the case's weights,
    inside its graph context (whose own parameters derive from the seed)."""
    from harness.contexts import build_context

    with torch.no_grad():
        conv = _conv_module(c)
        conv.weight.copy_(tensors.weight)
        if c.bias:
            conv.bias.copy_(tensors.bias)
    return build_context(c, conv, c.descriptor, seed).eval()


def conv_forward(
    c: ConvConfig, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
) -> torch.Tensor:
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
    return _F_CONV[c.rank](
        x, weight, bias, stride=c.stride, padding=padding, dilation=c.dilation, groups=c.groups
    )


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
    plain = c.replace(in_channels=1, out_channels=1, groups=1, batch=1, padding_mode="zeros", bias=False,
                      context="none", dynamic="none")
    actual = conv_forward(plain, torch.ones((1, 1, *c.input_size), dtype=torch.float64), ones_w, None)
    wide_size = tuple(L + 2 * m for L, m in zip(c.input_size, margin))
    wide = conv_forward(plain, torch.ones((1, 1, *wide_size), dtype=torch.float64), ones_w, None)
    index = [slice(None), slice(None)]
    for i, m in enumerate(margin):
        # The same output positions in the widened problem.
        offset = m * c.stride[i] if c.transposed else m // c.stride[i]
        index.append(slice(offset, offset + actual.shape[2 + i]))
    return (actual < wide[tuple(index)])[0, 0]
