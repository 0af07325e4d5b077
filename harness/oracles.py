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
"""

from __future__ import annotations

import torch

from harness.config import ConvConfig
from harness.data import CaseTensors
from harness.model import conv_forward


def eager_fp32(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    with torch.no_grad():
        return model(*inputs)


def fake_quant(converted: torch.fx.GraphModule, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    with torch.no_grad():
        out = converted(*inputs)
    return out[0] if isinstance(out, (tuple, list)) else out


def fp64_with_bound(c: ConvConfig, tensors: CaseTensors) -> tuple[torch.Tensor, torch.Tensor]:
    """(reference, bound) in float64 for the standalone conv of `c`."""
    x = tensors.inputs[0].double()
    w = tensors.weight.double()
    b = None if tensors.bias is None else tensors.bias.double()
    with torch.no_grad():
        ref = conv_forward(c, x, w, b)
        bnd = conv_forward(c, x.abs(), w.abs(), None if b is None else b.abs())
    return ref, bnd
