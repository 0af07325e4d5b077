"""Graph contexts: the conv under test inside the small graphs real networks put it in.

A context changes how the conv is quantized (fused activations, shared
quantization with a residual or concat, a requantized intermediate between
chained convs, folded BatchNorm) and how RewriteConvPass rewrites it (layout
permutes and views around it, INT32 consumers of an a16w8 accumulator,
pooling that SizeAdjustInputPass slices too, a torch.cond boundary).

A context is one object holding every fact about it: what the descriptor
admits (`check` of the shapes, dynamic dims, pooling); what the case feeds it
(`inputs`: layout and second inputs; `calibration`); its graph (`parts`,
`forward`, run inside `harness.build.model.CaseModule`); and what its judge
needs: whether the output keeps the conv's (N, C, spatial) layout
(`conv_layout`: mismatches are then split into border and interior), whether
integer data stays exact through it, the DOT_PRODUCT bound of the whole graph
in fp64 (`bound`: each conv on |x|, |w|, |b|; clamps and layout ops pass the
bound through; an add adds the bound of its other operand), its dot-product
length, whether it adds a non-zero bias, and the LSB an INT lowering may
differ from the fake-quant model (`int_tolerance`).

Most contexts are compositions of a grammar (`harness.contexts.grammar`); the
ones here are the base and the contexts outside it (chains, layout ops after
the conv, torch.cond). `harness.contexts.names` looks any of them up by name.

The config validator and the descriptor read this module, and they must not
load torch (3 s and 220 MB in every process that only lists or parses
cases): torch is reached through lazy references, imported on first use.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass


class _LazyModule:
    """A module imported on first attribute access."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


torch = _LazyModule("torch")
nn = _LazyModule("torch.nn")
F = _LazyModule("torch.nn.functional")


@dataclass(frozen=True, kw_only=True)
class Context:
    """The conv alone; the base of every context (see the module docstring)."""

    name: str
    conv_layout: bool  # the output keeps the conv's (N, C, spatial) layout and size
    dynamic: bool  # takes dynamic dims: its only input is the conv's own (N, C, spatial) input
    exact_arithmetic: bool  # integer data stays exact in fp32 through the graph (the `exact` rule applies)
    control_flow: bool = False  # a torch.cond in the graph: lowered with the TOSA cf extension
    pools: bool = False  # a 3x3/2 pool after the conv
    conv_index: int = 0  # position of the conv under test among the graph's convs

    def check(self, c) -> str:
        """Why config `c` cannot sit in this context ('' when it can)."""
        return ""

    def inputs(self, c, x, g) -> tuple:
        """The model inputs for conv input `x` (`g`: a generator for second inputs)."""
        return (x,)

    def calibration(self, samples: tuple) -> tuple:
        """The calibration samples for PT2E, from the input samples."""
        return samples

    def parts(self, c, rng) -> dict:
        """Modules besides the conv, by attribute name; `rng(purpose)` gives a seeded generator."""
        return {}

    def forward(self, m, x):
        return m.conv(x)

    def bound(self, m, x):
        return m.abs_conv(m.conv, x)

    def dot_product_length(self, c) -> int:
        """KS: the products summed at the accumulator's precision (the conv's own, and a further conv's)."""
        return c.fan_in

    def format_roundings(self, c) -> int:
        """Units of the DOT_PRODUCT rule (bnd * 2^(-1-nf)) that ops after the conv's accumulator add, each
        computed in the output's own format: one for each further rounded result (an add, a mul, a sigmoid,
        a further conv's output). Unlike KS, they do not shrink by 2^((nf_acc - nf)/2): an fp16 or bf16
        graph rounds them in fp16 or bf16."""
        return 0

    def has_bias(self, conv_bias) -> bool:
        """Whether the graph adds a non-zero bias (the +1 of ksb)."""
        return conv_bias is not None and bool(torch.any(conv_bias != 0))

    def int_tolerance(self, quantized, drift=None) -> int:
        """Output LSB a correct INT lowering may differ from the fake-quant model.

        One requantization of the output: its fixed-point RESCALE and the
        fake-quant's float rounding differ by at most 1 LSB. `drift(k)`, where the judge can give it, is
        the most LSB conv k's output may differ by on the case's own data (`harness.judging.requant`).
        """
        return 1


def same_shape(c) -> str:
    if c.out_channels != c.in_channels or c.output_size() != c.input_size:
        return "a residual add needs the conv's output shape to equal its input shape"
    return ""


def _requantized_add_tolerance(quantized) -> int:
    """The conv's requantized output may be 1 LSB off the fake-quant's; through
    an add that is s_conv/s_out output LSB, then 1 LSB of the add's own rounding."""
    return 1 + math.ceil(quantized.qparams.output.scale / quantized.output.scale)


def _channels_last_input(c, g):
    """A second model input shaped like the conv's output permuted to channels-last (N, spatial, C)."""
    return torch.randn((c.batch, *c.output_size(), c.out_channels), generator=g)


def pointwise(rank: int, channels_in: int, channels_out: int, g):
    """A 1x1 conv of the same rank (the neighbour in chained contexts), deterministic weights."""
    conv = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[rank](channels_in, channels_out, 1)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=g) / channels_in**0.5)
        conv.bias.copy_(0.25 * torch.randn(conv.bias.shape, generator=g))
    return conv


def gain(q) -> float:
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


@dataclass(frozen=True, kw_only=True)
class Chain(Context):
    """The conv followed by a 1x1 conv; with `before`, also preceded by one."""

    before: bool = False

    def parts(self, c, rng) -> dict:
        parts = {"after": pointwise(c.rank, c.out_channels, c.out_channels, rng("ctx-after"))}
        if self.before:
            parts["before"] = pointwise(c.rank, c.in_channels, c.in_channels, rng("ctx-before"))
        return parts

    def forward(self, m, x):
        if self.before:
            x = m.before(x)
        return m.after(m.conv(x))

    def bound(self, m, x):
        if self.before:
            x = m.abs_conv(m.before, x)
        return m.abs_conv(m.after, m.abs_conv(m.conv, x))

    def dot_product_length(self, c) -> int:
        return c.fan_in + c.out_channels + (c.in_channels if self.before else 0)

    def format_roundings(self, c) -> int:
        return 2 if self.before else 1  # the further convs' outputs

    def int_tolerance(self, quantized, drift=None) -> int:
        """Each requantized intermediate may be 1 LSB off the fake-quant's; a
        conv turns d input LSB into at most gain*d output LSB, gain =
        max_c sum|w_int[c]| s_w[c] s_in / s_out. So after the k-th conv
        tol_k = 1 + gain_k * tol_(k-1), starting from 1 after the first.
        With `drift`, the same propagation element by element on the case's data."""
        if drift is not None:
            return math.ceil(drift(len(quantized.convs) - 1))
        tol = 1.0
        for q in quantized.convs[1:]:
            tol = 1 + gain(q) * tol
        return math.ceil(tol)


@dataclass(frozen=True, kw_only=True)
class PermuteOut(Context):
    """The conv's output permuted to channels-last."""

    def forward(self, m, x):
        return torch.movedim(m.conv(x), 1, -1)

    def bound(self, m, x):
        return torch.movedim(m.abs_conv(m.conv, x), 1, -1)


@dataclass(frozen=True, kw_only=True)
class PermuteAdd(Context):
    """The conv's output permuted to channels-last, then added to a second input.

    An a16w8 conv feeding a permute whose consumer wants INT32 takes its own
    branch in RewriteConvPass (a widened rescale before the layout permute).
    """

    def inputs(self, c, x, g) -> tuple:
        return (x, _channels_last_input(c, g))

    def forward(self, m, x, z):
        return torch.movedim(m.conv(x), 1, -1) + z

    def bound(self, m, x, z):
        return torch.movedim(m.abs_conv(m.conv, x), 1, -1) + z.abs()

    def format_roundings(self, c) -> int:
        return 1  # the add

    def int_tolerance(self, quantized, drift=None) -> int:
        return _requantized_add_tolerance(quantized)


@dataclass(frozen=True, kw_only=True)
class Cond(Context):
    """The conv inside both branches of a `torch.cond` on the input's sign.

    Its weight and bias are captured by the branch graphs, so RewriteConvPass
    must resolve them through the control-flow boundary. The false branch
    convolves -x: whichever branch runs, the output is the conv of +-x, in
    the conv's layout, and conv(|x|) bounds both branches. `nested`: the true
    branch is itself a cond on mean(x) > 1 (conv of x, or of -x), so the
    conv's constants cross two boundaries, each with its own rescale.
    """

    nested: bool = False

    def calibration(self, samples: tuple) -> tuple:
        """x and -x: the predicate is the input's sign, and each branch must see data (|x| + 1 where the
        input is all zero). Nested: |x| + 1 for the inner true branch (mean above 1), |x| scaled to mean
        1/2 for the inner false one, and -(2|x| + 1) for the outer false branch alone. Each boundary's
        observer is shared by the cond's operands (the input, the captured weight and bias) and its output,
        so with data only the outer boundary sees, the two boundaries settle on different qparams, as a
        network's branches do, and a constant that crosses both is rescaled between them (RewriteConvPass's
        control-flow bias chain)."""
        mirrored = samples + tuple((-sample[0], *sample[1:]) for sample in samples)
        if not self.nested and any(sample[0].sum() > 0 for sample in mirrored):
            return mirrored
        more = []
        for x, *rest in samples:
            more.append((x.abs() + 1, *rest))
            if self.nested:
                mean = x.abs().mean()
                half = x.abs() / (2 * mean) if mean > 0 else torch.full_like(x, 0.5)
                more += [(half, *rest), (-(2 * x.abs() + 1), *rest)]
        return mirrored + tuple(more)

    def forward(self, m, x):
        if self.nested:  # sum > numel: a mean inside a nested branch fails DecomposeMeanDimPass on 1.5.1
            cond = importlib.import_module("torch").cond  # Dynamo traces the outer branch: no lazy module in it

            def inner(t):
                return cond(t.sum() > t.numel(), lambda u: m.conv(u), lambda u: m.conv(-u), (t,))

            return cond(x.sum() > 0, inner, lambda a: m.conv(-a), (x,))
        return torch.cond(x.sum() > 0, lambda a: m.conv(a), lambda a: m.conv(-a), (x,))


@dataclass(frozen=True, kw_only=True)
class ViewOut(Context):
    """The conv's output flattened to (N, OC*spatial)."""

    def forward(self, m, x):
        return torch.flatten(m.conv(x), 1)

    def bound(self, m, x):
        return torch.flatten(m.abs_conv(m.conv, x), 1)
