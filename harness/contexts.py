"""Graph contexts: the conv under test inside the small graphs real networks put it in.

A context changes how the conv is quantized (fused activations, shared
quantization with a residual or concat, a requantized intermediate between
chained convs, folded BatchNorm) and how RewriteConvPass rewrites it (layout
permutes and views around it, INT32 consumers of an a16w8 accumulator,
pooling that SizeAdjustInputPass slices too).

Each context module also knows the two things its judge needs:
`bound(xs)` the DOT_PRODUCT bound tensor of the whole graph in fp64 (each
conv on |x|, |w|, |b|; clamps and layout ops pass the bound through; an add
adds the bound of its other operand), and the number of dot products on the
path to the output. Names and shape rules live in harness.config.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from harness.config import ConvConfig
from harness.data import generator


def _abs_conv(conv: nn.Module, x: torch.Tensor, bias: bool = True) -> torch.Tensor:
    """The bound of one conv: the same conv (any padding mode) on |x| with |w|, |b|."""
    from harness.model import conv_forward

    c = conv.harness_config
    b = None if conv.bias is None or not bias else conv.bias.detach().double().abs()
    return conv_forward(c, x.abs(), conv.weight.detach().double().abs(), b)


def _pointwise(c: ConvConfig, channels_in: int, channels_out: int, descriptor: str, seed: int, purpose: str) -> nn.Module:
    """A 1x1 conv of the same rank (the neighbour in chained contexts), deterministic weights."""
    from harness.config import ConvConfig as Config

    cfg = Config(rank=c.rank, in_channels=channels_in, out_channels=channels_out,
                 input_size=(1,) * c.rank, kernel=(1,) * c.rank)
    conv = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[c.rank](channels_in, channels_out, 1)
    g = generator(descriptor, seed, purpose)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=g) / channels_in**0.5)
        conv.bias.copy_(0.25 * torch.randn(conv.bias.shape, generator=g))
    conv.harness_config = cfg
    return conv


def _gain(q) -> float:
    """Output LSB per input LSB of a quantized conv: max_c sum|w_int[c]| s_w[c] s_in / s_out,
    the sum over everything but the weight's output-channel axis (1 for a transposed
    conv's (IC, OC/g, k...) weight when per channel, any axis sums all when per tensor)."""
    w = q.weight.values.double().abs()
    axis = q.weight.axis if q.weight.axis is not None else 0
    per_channel = w.movedim(axis, 0).reshape(w.shape[axis], -1).sum(dim=1)
    scales = torch.tensor(q.weight.scales, dtype=torch.float64)
    if q.weight.axis is None:
        per_channel = per_channel.sum(dim=0, keepdim=True) if axis != 0 else per_channel
    return float((per_channel * scales).max()) * q.input.scale / q.output.scale


class ContextModule(nn.Module):
    """Base: `conv` is the conv under test; subclasses add what surrounds it."""

    conv_index = 0  # position of the conv under test among the graph's convs
    # Integer data stays exact through the whole graph in fp32 (no non-integer
    # parameters, no division): the `exact` data set's bit-exact rule applies.
    exact_arithmetic = True
    control_flow = False  # a torch.cond in the graph: lowered with the TOSA cf extension

    def __init__(self, c: ConvConfig, conv: nn.Module, descriptor: str, seed: int):
        super().__init__()
        self.config = c
        self.conv = conv
        conv.harness_config = c

    def bound(self, *xs: torch.Tensor) -> torch.Tensor:
        return _abs_conv(self.conv, xs[0])

    def dot_product_length(self) -> int:
        """KS for the DOT_PRODUCT rule of the whole graph: the conv's own
        length plus one term per further product or add on the output path."""
        from harness.data import fan_in

        return fan_in(self.config)

    def has_bias(self, conv_bias: torch.Tensor | None) -> bool:
        """Whether the graph adds a non-zero bias (the +1 of ksb)."""
        return conv_bias is not None and bool(torch.any(conv_bias != 0))

    def int_tolerance(self, quantized) -> int:
        """Output LSB a correct INT lowering may differ from the fake-quant model.

        One requantization of the output: its fixed-point RESCALE and the
        fake-quant's float rounding differ by at most 1 LSB.
        """
        return 1


class Plain(ContextModule):
    def forward(self, x):
        return self.conv(x)


class Activation(ContextModule):
    """relu, relu6 or hardtanh after the conv: the bound passes through a clamp."""

    def __init__(self, c, conv, descriptor, seed, fn):
        super().__init__(c, conv, descriptor, seed)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.conv(x))


class Residual(ContextModule):
    """conv(x) + x, optionally with an activation first (needs matching shapes)."""

    def __init__(self, c, conv, descriptor, seed, fn=None):
        super().__init__(c, conv, descriptor, seed)
        self.fn = fn

    def forward(self, x):
        y = self.conv(x)
        return (self.fn(y) if self.fn else y) + x

    def bound(self, x):
        return _abs_conv(self.conv, x) + x.abs()

    def dot_product_length(self) -> int:
        return super().dot_product_length() + 1

    def int_tolerance(self, quantized) -> int:
        """The conv's requantized output may be 1 LSB off the fake-quant's;
        through the add that is s_conv/s_out output LSB, then 1 LSB of the add's own rounding."""
        conv_out = quantized.qparams.output
        return 1 + math.ceil(conv_out.scale / quantized.output.scale)


class Concat(ContextModule):
    """cat([conv(x), z], channels), z a second input shaped like the conv's output."""

    def __init__(self, c, conv, descriptor, seed, fn=None):
        super().__init__(c, conv, descriptor, seed)
        self.fn = fn

    def forward(self, x, z):
        y = self.conv(x)
        return torch.cat([self.fn(y) if self.fn else y, z], dim=1)

    def bound(self, x, z):
        return torch.cat([_abs_conv(self.conv, x), z.abs()], dim=1)


class Chain(ContextModule):
    """The conv followed by a 1x1 conv; with `before`, also preceded by one."""

    def __init__(self, c, conv, descriptor, seed, before=False):
        super().__init__(c, conv, descriptor, seed)
        self.after = _pointwise(c, c.out_channels, c.out_channels, descriptor, seed, "ctx-after")
        self.before = _pointwise(c, c.in_channels, c.in_channels, descriptor, seed, "ctx-before") if before else None
        self.conv_index = 1 if before else 0
        self.exact_arithmetic = False

    def dot_product_length(self) -> int:
        extra = self.config.out_channels + 1 + (self.config.in_channels + 1 if self.before is not None else 0)
        return super().dot_product_length() + extra

    def int_tolerance(self, quantized) -> int:
        """Each requantized intermediate may be 1 LSB off the fake-quant's; a
        conv turns d input LSB into at most gain*d output LSB, gain =
        max_c sum|w_int[c]| s_w[c] s_in / s_out. So after the k-th conv
        tol_k = 1 + gain_k * tol_(k-1), starting from 1 after the first."""
        tol = 1.0
        for q in quantized.convs[1:]:
            tol = 1 + _gain(q) * tol
        return math.ceil(tol)

    def forward(self, x):
        if self.before is not None:
            x = self.before(x)
        return self.after(self.conv(x))

    def bound(self, x):
        if self.before is not None:
            x = _abs_conv(self.before, x)
        return _abs_conv(self.after, _abs_conv(self.conv, x))


class BatchNorm(ContextModule):
    """conv + BatchNorm (eval), which the backend folds into the conv."""

    exact_arithmetic = False

    def dot_product_length(self) -> int:
        # The backend folds gamma/sqrt(var) into the weights and the rest into
        # the bias and rounds both to the format: each rounding is worth at most
        # half an ulp of the bound, one more term each.
        return super().dot_product_length() + 2

    def has_bias(self, conv_bias) -> bool:
        return True  # the folded bias is (b - mean) * k + beta

    def __init__(self, c, conv, descriptor, seed):
        super().__init__(c, conv, descriptor, seed)
        self.bn = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}[c.rank](c.out_channels).eval()
        g = generator(descriptor, seed, "ctx-bn")
        with torch.no_grad():
            self.bn.weight.copy_(0.5 + torch.rand(c.out_channels, generator=g))
            self.bn.bias.copy_(0.2 * torch.randn(c.out_channels, generator=g))
            self.bn.running_mean.copy_(0.2 * torch.randn(c.out_channels, generator=g))
            self.bn.running_var.copy_(0.5 + torch.rand(c.out_channels, generator=g))

    def forward(self, x):
        return self.bn(self.conv(x))

    def bound(self, x):
        # Folded: w' = w * k, b' = (b - mean) * k + beta with k = gamma / sqrt(var + eps).
        bn = self.bn
        k = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach().double()
        shape = (1, -1) + (1,) * self.config.rank
        b = torch.zeros_like(k) if self.conv.bias is None else self.conv.bias.detach().double()
        folded_b = ((b - bn.running_mean.double()) * k + bn.bias.double()).abs()
        return _abs_conv(self.conv, x, bias=False) * k.abs().reshape(shape) + folded_b.reshape(shape)


class PermuteIn(ContextModule):
    """The model takes channels-last input and permutes it to channels-first."""

    def forward(self, x):
        return self.conv(torch.movedim(x, -1, 1))

    def bound(self, x):
        return _abs_conv(self.conv, torch.movedim(x, -1, 1))


class PermuteOut(ContextModule):
    """The conv's output permuted to channels-last."""

    def forward(self, x):
        return torch.movedim(self.conv(x), 1, -1)

    def bound(self, x):
        return torch.movedim(_abs_conv(self.conv, x), 1, -1)


class PermuteAdd(ContextModule):
    """The conv's output permuted to channels-last, then added to a second input.

    An a16w8 conv feeding a permute whose consumer wants INT32 takes its own
    branch in RewriteConvPass (a widened rescale before the layout permute).
    """

    def forward(self, x, z):
        return torch.movedim(self.conv(x), 1, -1) + z

    def bound(self, x, z):
        return torch.movedim(_abs_conv(self.conv, x), 1, -1) + z.abs()

    def dot_product_length(self) -> int:
        return super().dot_product_length() + 1

    def int_tolerance(self, quantized) -> int:
        """As a residual add: 1 + ceil(s_conv / s_out)."""
        return 1 + math.ceil(quantized.qparams.output.scale / quantized.output.scale)


class Cond(ContextModule):
    """The conv inside both branches of a `torch.cond` on the input's sign.

    Its weight and bias are captured by the branch graphs, so RewriteConvPass
    must resolve them through the control-flow boundary. The false branch
    convolves -x: whichever branch runs, the output is the conv of +-x.
    """

    control_flow = True

    def forward(self, x):  # the bound is the base class's: conv(|x|) bounds both branches
        return torch.cond(x.sum() > 0, lambda a: self.conv(a), lambda a: self.conv(-a), (x,))


class ViewIn(ContextModule):
    """The model takes a flat (N, C*spatial) input and views it as (N, C, spatial)."""

    def forward(self, x):
        return self.conv(x.reshape(x.shape[0], self.config.in_channels, *self.config.input_size))

    def bound(self, x):
        return _abs_conv(self.conv, x.reshape(x.shape[0], self.config.in_channels, *self.config.input_size))


class ViewOut(ContextModule):
    """The conv's output flattened to (N, OC*spatial)."""

    def forward(self, x):
        return torch.flatten(self.conv(x), 1)

    def bound(self, x):
        return torch.flatten(_abs_conv(self.conv, x), 1)


class Pool(ContextModule):
    """Max- or average-pooling (kernel 3, stride 2) after the conv."""

    def __init__(self, c, conv, descriptor, seed, kind):
        super().__init__(c, conv, descriptor, seed)
        self.kind = kind
        self.exact_arithmetic = kind == "max"

    def _pool(self, y):
        if self.kind == "max":
            return F.max_pool2d(y, 3, 2)
        return F.avg_pool2d(y, 3, 2, count_include_pad=False)

    def forward(self, x):
        return self._pool(self.conv(x))

    def bound(self, x):
        # A max of elements is within the largest element's bound; an average
        # within the average bound. Either way: pool the bound with max.
        return F.max_pool2d(_abs_conv(self.conv, x), 3, 2)


def build_context(c: ConvConfig, conv: nn.Module, descriptor: str, seed: int) -> ContextModule:
    name = c.context
    simple = {
        "none": Plain,
        "bn": BatchNorm,
        "permute-in": PermuteIn,
        "permute-out": PermuteOut,
        "view-in": ViewIn,
        "view-out": ViewOut,
        "permute-add": PermuteAdd,
        "cond": Cond,
    }
    if name in simple:
        return simple[name](c, conv, descriptor, seed)
    activations = {"relu": torch.relu, "relu6": F.relu6, "hardtanh": F.hardtanh}
    if name in activations:
        return Activation(c, conv, descriptor, seed, activations[name])
    if name == "add":
        return Residual(c, conv, descriptor, seed)
    if name == "relu-add":
        return Residual(c, conv, descriptor, seed, torch.relu)
    if name == "cat":
        return Concat(c, conv, descriptor, seed)
    if name == "relu6-cat":
        return Concat(c, conv, descriptor, seed, F.relu6)
    if name in ("chain", "chain3"):
        return Chain(c, conv, descriptor, seed, before=name == "chain3")
    if name in ("maxpool", "avgpool"):
        return Pool(c, conv, descriptor, seed, name[:3])
    raise ValueError(f"unknown context {name!r}")  # config validation keeps this unreachable
