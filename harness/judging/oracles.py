"""References a lowered output is judged against.

None of them reads the lowered artifact: they are built from the case's
tensors and, for quantized schemes, from the PT2E-converted model and the
parameters the quantizer chose.

* eager fp32: the user's module as torch runs it (for SQNR of quantization).
* fake-quant: the PT2E-converted module (quantize/dequantize around an fp32
  conv) with the quantizer's own scales; its output, re-quantized with the
  output parameters, is the integer the target should produce, to within the
  rounding of a fixed-point rescale (1 LSB).
* fp64 and its bound: the conv in float64, and the same conv on |x|, |w|, |b|,
  the `bnd` tensor of the TOSA DOT_PRODUCT compliance rule.
* integer-exact: the INT-profile conv from the quantized tensors with int64
  accumulation and the specification's RESCALE; a conforming lowering
  matches it bit for bit.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from harness.build.data import CaseTensors
from harness.config import ConvConfig
from harness.conv_ref import conv_forward
from harness.judging.spec_math import multiplier_shifts, rescale
from harness.qparams import ConvQParams


def eager_fp32(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    with torch.no_grad():
        return model(*inputs)


def fake_quant(converted: torch.fx.GraphModule, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    with torch.no_grad():
        out = converted(*inputs)
    return out[0] if isinstance(out, (tuple, list)) else out


def fp64(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The case's whole graph in float64: the float model a quantized scheme approximates."""
    model64 = copy.deepcopy(model).double()
    with torch.no_grad():
        return model64(*(x.double() for x in inputs))


def fp64_with_bound(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """(reference, bound) in float64 for the case's whole graph.

    The bound is the model's `bound` forward: every conv on |x|, |w|, |b|,
    clamps and layout ops passing it through, adds adding the other operand.
    """
    model64 = copy.deepcopy(model).double()
    xs = tuple(x.double() for x in inputs)
    with torch.no_grad():
        ref = model64(*xs)
        bnd = model64.bound(*xs)
    return ref, bnd


@dataclass(frozen=True)
class IntReference:
    """The integer-exact result: output codes, the accumulator, the RESCALE used.

    Where a channel's scale lies exactly halfway between two multipliers (`spec_math.multiplier_shifts`), both
    are conforming: `tie_codes` holds the codes with the lower one for those channels (`tied`: their indices;
    empty for a per-tensor scale, whose one multiplier every channel shares), and `for_output` takes, channel by
    channel (for the whole tensor with one scale), the one an output is nearer to."""

    codes: np.ndarray
    accumulator: np.ndarray
    multipliers: tuple[int, ...]
    shifts: tuple[int, ...]
    bits: int
    tie_codes: np.ndarray | None = None
    tied: tuple[int, ...] = ()

    def for_output(self, out: np.ndarray) -> np.ndarray:
        """The codes `out` is to be judged against: on each tied channel, the conforming multiplier it is nearer
        to (the upper one on equal distance); elsewhere the one reference there is."""
        if self.tie_codes is None or np.shape(out) != self.codes.shape:
            return self.codes
        got = np.asarray(out, dtype=np.int64)
        codes = self.codes.copy()
        for part in [(slice(None), c) for c in self.tied] or [...]:
            up, down = self.codes[part], self.tie_codes[part]
            if np.abs(got[part] - down).max(initial=0) < np.abs(got[part] - up).max(initial=0):
                codes[part] = down
        return codes


_TORCH_INT = {"int8": torch.int8, "int16": torch.int16, "int32": torch.int32}


def no_integer_form(c: ConvConfig, qp: ConvQParams) -> str:
    """Why the conv has no integer-exact form ('' if it has one): a weight quantized per channel on an axis
    that is not the conv's output channels (ExecuTorch 1.5.1 does this for int4 weights of a transposed conv)
    has no integer RESCALE per output channel; only the fake-quant model then says what the numbers mean."""
    w = qp.weight
    if w.axis is None:
        return ""
    expected = 1 if c.transposed else 0
    if w.axis != expected or (c.transposed and c.groups != 1):
        return (
            f"weight quantized per channel on axis {w.axis}: not the output channels of this conv, "
            "so no integer rescale per output channel exists"
        )
    return ""


def _output_channel_axis(c: ConvConfig, qp: ConvQParams) -> None:
    why = no_integer_form(c, qp)
    if why:
        raise ValueError(why)


def integer_exact(c: ConvConfig, tensors: CaseTensors, qp: ConvQParams) -> IntReference:
    """The conv as a TOSA INT profile must compute it, from the quantizer's parameters.

    x is quantized with the conv's input parameters (the quantizer's own
    quantize op), centred on its zero point; the conv of the centred codes with
    the integer weights (less their zero points) plus the int32 bias is computed
    in float64, exact because every partial sum is an integer below 2**53; the
    accumulator is then RESCALEd per output channel by s_in * s_w[c] / s_out
    (32-bit multiplier; 16-bit for the INT48 accumulator of a16w8, as the
    specification requires), rounded once, offset by the output zero point and
    clamped to the output type.
    """
    qi, qo, qw = qp.input, qp.output, qp.weight
    if qo is None:
        raise ValueError("the quantizer chose no output parameters for the conv")
    _output_channel_axis(c, qp)
    qx = torch.ops.quantized_decomposed.quantize_per_tensor(
        tensors.conv_input, qi.scale, qi.zero_point, qi.qmin, qi.qmax, _TORCH_INT[qi.dtype]
    )
    x = qx.double() - qi.zero_point
    w = qw.values.double()
    if any(qw.zero_points):
        shape = [1] * w.dim()
        if qw.axis is not None:
            shape[qw.axis] = -1
        w = w - torch.tensor(qw.zero_points, dtype=torch.float64).reshape(shape)
    with torch.no_grad():
        acc = conv_forward(c, x, w, None)
    if qp.bias is not None:
        acc = acc + qp.bias.double().reshape(1, -1, *[1] * c.rank)
    accumulator = acc.round().to(torch.int64).numpy()
    scales = [qi.scale * s / qo.scale for s in qw.scales]
    bits = 16 if qi.dtype == "int16" else 32
    codes, mult, shift = rescale(accumulator, scales, 0, qo.zero_point, qo.qmin, qo.qmax, bits)
    tied = tuple(k for k, scale in enumerate(scales) if len(multiplier_shifts(scale, bits)) > 1)
    if not tied:
        return IntReference(codes, accumulator, tuple(mult), tuple(shift), bits)
    down, _, _ = rescale(accumulator, scales, 0, qo.zero_point, qo.qmin, qo.qmax, bits, tie_down=True)
    return IntReference(codes, accumulator, tuple(mult), tuple(shift), bits, down, tied if len(scales) > 1 else ())
