"""Quantization parameters, read from a PT2E-converted graph.

Neutral ground between the lowering and the judging: the quantizer decides
these parameters, the oracles rebuild the reference from them. They are read
from the converted torch.fx graph (its quantize/dequantize nodes and their
constant arguments) with torch.fx alone, never from the lowered artifact: a
scale the backend gets wrong cannot leak into the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  - defines torch.ops.quantized_decomposed


@dataclass(frozen=True)
class TensorQParams:
    """Affine per-tensor parameters: real = (q - zero_point) * scale."""

    scale: float
    zero_point: int
    qmin: int
    qmax: int
    dtype: str


@dataclass(frozen=True)
class WeightQParams:
    """Symmetric weights, per channel (axis) or per tensor (axis None)."""

    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None
    qmin: int
    qmax: int
    dtype: str
    values: torch.Tensor = field(repr=False, compare=False)  # the integer weight


@dataclass(frozen=True)
class ConvQParams:
    """What the quantizer decided for one conv (read from the PT2E graph)."""

    input: TensorQParams
    weight: WeightQParams
    bias: torch.Tensor | None = field(repr=False, compare=False)  # int32, or None
    bias_scales: tuple[float, ...] | None = None
    output: TensorQParams | None = None

    def summary(self) -> dict:
        return {
            "input": {"scale": self.input.scale, "zero_point": self.input.zero_point, "dtype": self.input.dtype},
            "output": None
            if self.output is None
            else {"scale": self.output.scale, "zero_point": self.output.zero_point, "dtype": self.output.dtype},
            "weight": {
                "axis": self.weight.axis,
                "n_scales": len(self.weight.scales),
                "scale_min": min(self.weight.scales),
                "scale_max": max(self.weight.scales),
                "dtype": self.weight.dtype,
            },
            "bias": None
            if not isinstance(self.bias, torch.Tensor)
            else {"dtype": str(self.bias.dtype).replace("torch.", "")},
        }


@dataclass
class QuantizedModel:
    module: torch.fx.GraphModule  # PT2E-converted: the fake-quant oracle
    convs: list[ConvQParams | None]  # every conv in graph order; None: left in float
    output: TensorQParams | None  # the model output's quantization
    conv_index: int = 0  # the conv under test among `convs`

    @property
    def qparams(self) -> ConvQParams | None:
        """The conv under test's parameters (None if the quantizer left it in float)."""
        return self.convs[self.conv_index] if self.conv_index < len(self.convs) else None


_Q = torch.ops.quantized_decomposed
DQ_TENSOR = (_Q.dequantize_per_tensor.default, _Q.dequantize_per_tensor.tensor)
Q_TENSOR = (_Q.quantize_per_tensor.default, _Q.quantize_per_tensor.tensor)
_DQ_CHANNEL = (_Q.dequantize_per_channel.default,)
_ATEN = torch.ops.aten
CONV_TARGETS = {  # every aten conv overload a converted graph may hold
    *(getattr(_ATEN, op).default for op in ("convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d")),
    *(getattr(_ATEN, op).padding for op in ("conv1d", "conv2d", "conv3d")),
    *(getattr(_ATEN, op).input for op in ("conv_transpose2d", "conv_transpose3d")),
}


def _value(gm: torch.fx.GraphModule, arg):
    """A constant argument's value; None for a graph input (a parameter a
    control-flow branch receives from its parent is a placeholder there)."""
    if isinstance(arg, torch.fx.Node):
        if arg.op != "get_attr":
            return None
        obj = gm
        for part in arg.target.split("."):
            obj = getattr(obj, part)
        return obj
    return arg


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _tensor_qparams(node: torch.fx.Node, gm) -> TensorQParams:
    _, scale, zp, qmin, qmax, dtype = node.args[:6]
    return TensorQParams(float(_value(gm, scale)), int(_value(gm, zp)), int(qmin), int(qmax), _dtype_name(dtype))


def _weight_qparams(node: torch.fx.Node, gm) -> WeightQParams:
    values = _value(gm, node.args[0])
    if node.target in _DQ_CHANNEL:
        _, scales, zps, axis, qmin, qmax, dtype = node.args[:7]
        return WeightQParams(
            tuple(float(s) for s in _value(gm, scales).tolist()),
            tuple(int(z) for z in _value(gm, zps).tolist()),
            int(axis),
            int(qmin),
            int(qmax),
            _dtype_name(dtype),
            values,
        )
    tq = _tensor_qparams(node, gm)
    return WeightQParams((tq.scale,), (tq.zero_point,), None, tq.qmin, tq.qmax, tq.dtype, values)


# ops a fused activation puts between a conv and its output quantization
_PASS_THROUGH = {getattr(_ATEN, op).default for op in ("relu", "relu_", "hardtanh", "hardtanh_", "clamp", "relu6")}


def _conv_output_qparams(node: torch.fx.Node, gm) -> TensorQParams | None:
    """The quantize that follows a conv, looking through a fused activation."""
    while True:
        users = list(node.users)
        quantize = [u for u in users if u.target in Q_TENSOR]
        if len(quantize) == 1:
            return _tensor_qparams(quantize[0], gm)
        if len(users) == 1 and users[0].target in _PASS_THROUGH:
            node = users[0]
            continue
        return None


def _conv_qparams(conv: torch.fx.Node, gm) -> ConvQParams | None:
    x_dq, w_dq = conv.args[0], conv.args[1]
    b_dq = conv.args[2] if len(conv.args) > 2 else None
    if not (isinstance(x_dq, torch.fx.Node) and x_dq.target in DQ_TENSOR):
        return None
    if not (isinstance(w_dq, torch.fx.Node) and (w_dq.target in _DQ_CHANNEL or w_dq.target in DQ_TENSOR)):
        return None
    bias = bias_scales = None
    if isinstance(b_dq, torch.fx.Node):
        if b_dq.target in _DQ_CHANNEL or b_dq.target in DQ_TENSOR:
            bq = _weight_qparams(b_dq, gm)
            bias, bias_scales = bq.values, bq.scales
        else:
            raise RuntimeError("the quantizer left the conv bias unquantized")
    return ConvQParams(
        _tensor_qparams(x_dq, gm), _weight_qparams(w_dq, gm), bias, bias_scales, _conv_output_qparams(conv, gm)
    )


def conv_qparams(gm: torch.fx.GraphModule) -> list[ConvQParams | None]:
    """The quantizer's parameters around every conv of a converted model, in
    graph order (control-flow branches included). An entry is None when the
    quantizer did not annotate that conv: the backend will leave it on the CPU.
    """
    out = []
    for _, owner in gm.named_modules():
        if isinstance(owner, torch.fx.GraphModule):
            out += [
                _conv_qparams(n, owner)
                for n in owner.graph.nodes
                if n.op == "call_function" and n.target in CONV_TARGETS
            ]
    return out


def conv_output_quantize(quantized: QuantizedModel) -> torch.fx.Node:
    """The quantize node of the conv under test's output, in the converted model's top-level graph."""
    convs = [n for n in quantized.module.graph.nodes if n.op == "call_function" and n.target in CONV_TARGETS]
    conv = convs[quantized.conv_index]
    return next(u for u in conv.users if u.target in (_Q.quantize_per_tensor.default,))


def op_qparams(gm: torch.fx.GraphModule, op: str) -> tuple[list[TensorQParams | None], TensorQParams | None]:
    """The quantization around the first `aten.<op>` of a converted model: of each argument (None where it
    is not dequantized) and of its output (through a fused clamp). ValueError when the graph has no such op."""
    for n in gm.graph.nodes:
        if n.op == "call_function" and getattr(n.target, "__name__", "").split(".")[0] == op:
            inputs = [
                _tensor_qparams(a, gm) if isinstance(a, torch.fx.Node) and a.target in DQ_TENSOR else None
                for a in n.args
            ]
            return inputs, _conv_output_qparams(n, gm)
    raise ValueError(f"no aten.{op} in the converted model")


def output_qparams(gm: torch.fx.GraphModule) -> TensorQParams | None:
    """The quantization of the model's (first) output, from its final dequantize."""
    out = gm.graph.output_node().args[0]
    first = out[0] if isinstance(out, (tuple, list)) else out
    if isinstance(first, torch.fx.Node) and first.target in DQ_TENSOR:
        return _tensor_qparams(first, gm)
    return None


def read_quantized(converted: torch.fx.GraphModule, conv_index: int = 0) -> QuantizedModel:
    """What the quantizer decided for a converted model; `conv_index`: the conv under test, in graph order."""
    return QuantizedModel(converted, conv_qparams(converted), output_qparams(converted), conv_index)
