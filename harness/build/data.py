"""Deterministic weights and inputs for a case, from (descriptor, seed) alone.

Every tensor comes from its own torch CPU generator seeded by a SHA-256 of the
descriptor, the seed and the tensor's purpose, so it is identical in every
process (pytest -n 0 or -n auto, the CLI, a repro next month) and independent
of the order in which cases run.

Data sets (the config's `dataset` field), each aimed at a class of bug that
normal data hides:

* normal: x ~ N(0, 1), w ~ N(0, 1/KS), b ~ N(0, 1/4).
* full-range: non-negative weights, calibrated on U(-1, 1), run on U(-1, 1)
  with a quarter of each plane at +1 and a quarter at -1: every input code is in
  the calibrated range, but where the extremes line up under a window the
  output far exceeds anything calibration saw and saturates the clamp.
* exact: small integers (x in [-4, 4], w in [-3, 3], b in [-8, 8]); every
  partial sum is exact in fp32, so float results are checked to the bit.
* channel-skew: per-output-channel weight magnitudes spread over 100x
  (0.1x to 10x), so each channel gets a very different scale.
* offset: x ~ 3 + N(0, 1/4): activations far from zero, non-zero zero points.
* special: zeros, a constant and +-extremes in the input; an all-zero output
  channel (with zero bias: its output must be exactly zero), a constant
  channel and a single-spike channel in the weights.
* silent (named cases only): input and weights all zero, a pruned conv fed by
  a dead activation, so the output is the bias. The observers floor both scales
  at eps (2^-16), so the int32 bias, at s_x * s_w = 2^-32, holds |b| <= 0.5
  only; the biases run from -(0.5 + 2^-10) to 0.5 + 2^-10, just past both ends.
* captured: a model's real weights and the activations that reached the conv
  (`harness.build.captured`), read from the file the case names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch

from harness.build.captured import CAPTURED
from harness.build.captured import load as load_captured
from harness.config import ConfigError, ConvConfig
from harness.contexts.names import CONTEXTS
from harness.policy.schemes import SCHEMES

# `silent` biases run linearly to 2^-10 past the int32 bias limit of 0.5 (2^31 steps of 2^-32): past it by a
# quarter of the output's step (1/255 of the bias range), so a lowering that saturates there stays within 1 LSB
# and one that wraps to the other end is ~255 LSB off.
SILENT_BIAS_EPS = 2**-10


def scheme_dtype(scheme: str) -> torch.dtype | None:
    """The torch dtype of a float scheme's model and tensors; None for an INT scheme (fp32 in, Q/DQ inside)."""
    name = SCHEMES[scheme].dtype
    return None if name is None else getattr(torch, name)


@dataclass(frozen=True)
class CaseTensors:
    """Model parameters, the model's inputs, the calibration samples (fp32).

    `conv_input` is what reaches the conv; `inputs` are the model's inputs in
    the layout its graph context takes (plus any second input it needs);
    `calibration` is one or more input tuples for PT2E calibration. For
    fp16/bf16/fp8 schemes every value is representable in that type, so the
    fp32/fp64 references see exactly what the lowered model sees.
    """

    inputs: tuple[torch.Tensor, ...]
    weight: torch.Tensor
    bias: torch.Tensor | None
    calibration: tuple[tuple[torch.Tensor, ...], ...]
    conv_input: torch.Tensor


def generator(descriptor: str, seed: int, purpose: str) -> torch.Generator:
    digest = hashlib.sha256(f"{descriptor}|{seed}|{purpose}".encode()).digest()
    g = torch.Generator(device="cpu")
    g.manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))
    return g


def weight_shape(c: ConvConfig) -> tuple[int, ...]:
    if c.transposed:
        return (c.in_channels, c.out_channels // c.groups, *c.kernel)
    return (c.out_channels, c.in_channels // c.groups, *c.kernel)


def input_shape(c: ConvConfig) -> tuple[int, ...]:
    return (c.batch, c.in_channels, *c.input_size)


def _out_channel_view(c: ConvConfig, w: torch.Tensor) -> torch.Tensor:
    """`w` viewed as (out_channel, ...) whatever the layout (tconv: (IC, OC/g, ...))."""
    if not c.transposed:
        return w
    g = c.groups
    per = w.reshape(g, c.in_channels // g, c.out_channels // g, *c.kernel)
    return per.transpose(1, 2).reshape(c.out_channels, c.in_channels // g, *c.kernel)


def _from_out_channel_view(c: ConvConfig, v: torch.Tensor) -> torch.Tensor:
    if not c.transposed:
        return v
    g = c.groups
    per = v.reshape(g, c.out_channels // g, c.in_channels // g, *c.kernel)
    return per.transpose(1, 2).reshape(weight_shape(c)).contiguous()


def _uniform(shape, lo: float, hi: float, g: torch.Generator) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(shape, generator=g)


def _ints(shape, lo: int, hi: int, g: torch.Generator) -> torch.Tensor:
    return torch.randint(lo, hi + 1, shape, generator=g).float()


def _extreme_blocks(x: torch.Tensor) -> torch.Tensor:
    """First quarter of each (n, c) plane set to +1, the next quarter to -1."""
    flat = x.reshape(x.shape[0] * x.shape[1], -1)
    quarter = max(1, flat.shape[1] // 4)
    flat[:, :quarter] = 1.0
    flat[:, quarter : 2 * quarter] = -1.0
    return flat.reshape(x.shape)


def _special_input(shape, g: torch.Generator) -> torch.Tensor:
    """Quarter by quarter of each (n, c) plane: zeros, 0.75, +-4 checkerboard, N(0, 1)."""
    x = torch.randn(shape, generator=g)
    flat = x.reshape(shape[0] * shape[1], -1)
    size = flat.shape[1]
    q = max(1, size // 4)
    flat[:, :q] = 0.0
    flat[:, q : 2 * q] = 0.75
    idx = torch.arange(2 * q, min(3 * q, size))
    flat[:, 2 * q : 3 * q] = torch.where(idx % 2 == 0, 4.0, -4.0)
    return flat.reshape(shape)


def _special_weight(c: ConvConfig, g: torch.Generator) -> torch.Tensor:
    v = _out_channel_view(c, torch.randn(weight_shape(c), generator=g) / c.fan_in**0.5).clone()
    v[0] = 0.0  # an all-zero output channel
    if c.out_channels > 2:
        v[1] = 0.5 / c.fan_in**0.5  # a constant channel
        spike = torch.zeros_like(v[-1]).flatten()
        spike[len(spike) // 2] = 3.0
        v[-1] = 0.01 * v[-1] + spike.reshape(v[-1].shape)  # one dominant tap
    return _from_out_channel_view(c, v)


def make_tensors(c: ConvConfig, seed: int, data_file: str = "") -> CaseTensors:
    """Tensors for data set `c.dataset` (see the module docstring); `captured` reads them from `data_file`."""
    if c.dataset == CAPTURED:
        return _captured_tensors(c, data_file)
    d = c.descriptor
    gx, gw, gb, gc = (generator(d, seed, p) for p in ("input", "weight", "bias", "calibration"))
    shape_x, shape_w, ks = input_shape(c), weight_shape(c), c.fan_in
    calibration = None
    if c.dataset == "exact":
        x = _ints(shape_x, -4, 4, gx)
        w = _ints(shape_w, -3, 3, gw)
        b = _ints((c.out_channels,), -8, 8, gb)
    else:
        w = torch.randn(shape_w, generator=gw) / ks**0.5
        b = 0.5 * torch.randn((c.out_channels,), generator=gb)
        if c.dataset == "normal":
            x = torch.randn(shape_x, generator=gx)
        elif c.dataset == "full-range":
            w = w.abs()
            x = _extreme_blocks(_uniform(shape_x, -1.0, 1.0, gx))
            calibration = _uniform(shape_x, -1.0, 1.0, gc)
        elif c.dataset == "channel-skew":
            x = torch.randn(shape_x, generator=gx)
            skew = torch.logspace(-1, 1, c.out_channels) if c.out_channels > 1 else torch.ones(1)
            v = _out_channel_view(c, w)
            w = _from_out_channel_view(c, v * skew.reshape(-1, *[1] * (v.dim() - 1)))
        elif c.dataset == "offset":
            x = 3.0 + 0.5 * torch.randn(shape_x, generator=gx)
        elif c.dataset == "silent":
            x, w = torch.zeros(shape_x), torch.zeros(shape_w)
            edge = 0.5 + SILENT_BIAS_EPS
            b = torch.linspace(-edge, edge, c.out_channels) if c.out_channels > 1 else torch.full((1,), edge)
        elif c.dataset == "special":
            x = _special_input(shape_x, gx)
            w = _special_weight(c, gw)
            b[0] = 0.0
        else:  # config validation keeps this unreachable
            raise ValueError(f"unknown data set {c.dataset!r}")
    dtype = scheme_dtype(c.scheme)
    rounded = (lambda t: t.to(dtype).float()) if dtype not in (None, torch.float32) else (lambda t: t)
    x, w, b = (rounded(t) for t in (x, w, b))  # representable in the scheme's type
    context = CONTEXTS[c.context]
    inputs = tuple(rounded(t) for t in context.inputs(c, x, generator(d, seed, "context")))
    if calibration is not None:
        samples = (context.inputs(c, calibration, generator(d, seed, "context")),)
    else:
        samples = (inputs,)
    return CaseTensors(
        inputs=inputs, weight=w, bias=b if c.bias else None, calibration=context.calibration(samples), conv_input=x
    )


def _captured_tensors(c: ConvConfig, data_file: str) -> CaseTensors:
    activations, w, b = load_captured(data_file, c)
    if tuple(w.shape) != weight_shape(c) or any(tuple(a.shape) != input_shape(c) for a in activations):
        raise ConfigError(f"invalid --captured={data_file}: its tensors do not have the shapes of {c.descriptor}")
    dtype = scheme_dtype(c.scheme)
    rounded = (lambda t: t.to(dtype).float()) if dtype not in (None, torch.float32) else (lambda t: t.float())
    x, w = rounded(activations[0]), rounded(w)
    bias = rounded(b) if c.bias and b is not None else None
    if c.bias and bias is None:
        bias = torch.zeros(c.out_channels)
    samples = tuple((rounded(a),) for a in activations)
    return CaseTensors(inputs=(x,), weight=w, bias=bias, calibration=samples, conv_input=x)


def program_inputs(c: ConvConfig, tensors: CaseTensors) -> tuple[torch.Tensor, ...]:
    """The inputs the lowered program takes: a float scheme's program takes its own type."""
    dtype = scheme_dtype(c.scheme)
    if dtype not in (None, torch.float32):
        return tuple(x.to(dtype) for x in tensors.inputs)
    return tensors.inputs
