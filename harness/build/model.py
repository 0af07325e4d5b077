"""The nn.Module a case exports: the conv under test inside its graph context.

The conv is what a user writes (nn.ConvNd / nn.ConvTransposeNd), so the
exported graph takes the same path into the backend as real models do. The
graph around it, and every fact the judge needs about it, come from the
case's context (`harness.contexts.base`).
"""

from __future__ import annotations

import torch
from torch import nn

from harness.build.data import CaseTensors, generator
from harness.config import ConvConfig
from harness.contexts.base import Context
from harness.contexts.names import CONTEXTS
from harness.conv_ref import conv_forward

_CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
_TCONV = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}


def conv_module(c: ConvConfig) -> nn.Module:
    """The torch module of the conv under test (parameters uninitialized)."""
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


class CaseModule(nn.Module):
    """`conv` (the conv under test) and the context's parts, run by the context's forward."""

    def __init__(self, config: ConvConfig, context: Context, conv: nn.Module, parts: dict[str, nn.Module]):
        super().__init__()
        self.config = config
        self.context = context
        self.conv = conv
        for name, part in parts.items():
            setattr(self, name, part)

    def forward(self, x: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        """The context's forward on the model's inputs: the conv's input `x`, and
        the second input `z` of a context that takes one. (Named parameters, not
        *args: torch.export matches dynamic shapes and names inputs by them.)"""
        return self.context.forward(self, x) if z is None else self.context.forward(self, x, z)

    def bound(self, *xs: torch.Tensor) -> torch.Tensor:
        """The DOT_PRODUCT bound of the whole graph (call on an fp64 copy)."""
        return self.context.bound(self, *xs)

    def abs_conv(self, conv: nn.Module, x: torch.Tensor, bias: bool = True) -> torch.Tensor:
        """The bound of one conv of the graph: the same conv on |x| with |w|, |b|."""
        b = None if conv.bias is None or not bias else conv.bias.detach().abs()
        w = conv.weight.detach().abs()
        if conv is self.conv:  # any padding mode, transposed or not
            return conv_forward(self.config, x.abs(), w, b)
        return conv._conv_forward(x.abs(), w, b)  # a plain conv of the context (1x1)

    def has_bias(self, conv_bias: torch.Tensor | None) -> bool:
        return self.context.has_bias(conv_bias)

    def dot_product_length(self) -> int:
        return self.context.dot_product_length(self.config)

    def format_roundings(self) -> int:
        return self.context.format_roundings(self.config)


def build_model(c: ConvConfig, tensors: CaseTensors, seed: int = 0) -> CaseModule:
    """The eval-mode fp32 module for `c`: the conv holding the case's weights,
    inside its graph context (whose own parameters derive from the seed)."""
    with torch.no_grad():
        conv = conv_module(c)
        conv.weight.copy_(tensors.weight)
        if c.bias:
            conv.bias.copy_(tensors.bias)
    context = CONTEXTS[c.context]
    parts = context.parts(c, lambda purpose: generator(c.descriptor, seed, purpose))
    return CaseModule(c, context, conv, parts).eval()
