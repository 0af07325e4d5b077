"""Quantize, export and lower a case through the real Arm backend.

Only ExecuTorch's public entry points are used: TOSAQuantizer and its configs,
PT2E prepare/convert, torch.export, `to_edge_transform_and_lower` with the
TOSAPartitioner. Two products come out, kept apart on purpose:

* `QuantizedModel`: the PT2E-converted module and the quantization parameters
  the quantizer chose. The oracles use these; they never look at the lowered
  graph, so a scale the pass gets wrong cannot leak into the reference.
* `Artifact`: the lowered program, the TOSA flatbuffer(s), the operators they
  contain and whether the whole conv was delegated. The runners use this.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import dataclass, field
from functools import lru_cache

import torch

# Import-time warnings about optional CUDA kernels and deprecated pytree
# registrations say nothing about a case; keep them off every run's output.
for _name in ("torchao", "torch.utils._pytree"):
    logging.getLogger(_name).setLevel(logging.ERROR)

from executorch.backends.arm.quantizer import (  # noqa: E402
    TOSAQuantizer,
    get_symmetric_a16w8_quantization_config,
    get_symmetric_quantization_config,
)
from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
from executorch.backends.arm.tosa.partitioner import TOSAPartitioner
from executorch.exir import EdgeCompileConfig, EdgeProgramManager, to_edge_transform_and_lower
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from harness.tosa_graph import TosaSummary, read_tosa

TOSA_SPECS = {
    "fp32": "TOSA-1.0+FP",
    "fp16": "TOSA-1.0+FP",
    "bf16": "TOSA-1.0+FP+bf16",
    "a8w8": "TOSA-1.0+INT",
    "a8w8-pt": "TOSA-1.0+INT",
    "a16w8": "TOSA-1.0+INT+int16",
    "fp8e4m3": "TOSA-1.0+FP+fp8e4m3",
    "fp8e5m2": "TOSA-1.0+FP+fp8e5m2",
}


# -- quantization parameters --------------------------------------------------
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
            "bias": None if not isinstance(self.bias, torch.Tensor) else {"dtype": str(self.bias.dtype).replace("torch.", "")},
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


@dataclass
class Artifact:
    """The lowered program and the facts about it a test asserts on."""

    scheme: str
    tosa_spec: str
    program: EdgeProgramManager
    tosa: tuple[bytes, ...]  # one flatbuffer per delegate
    summaries: tuple[TosaSummary, ...]
    cpu_ops: tuple[str, ...]  # compute left outside the delegate(s)

    @property
    def delegated(self) -> bool:
        return bool(self.tosa) and not self.cpu_ops

    @property
    def tosa_ops(self) -> tuple[str, ...]:
        return tuple(op for s in self.summaries for op in s.ops)

    @property
    def conv_ops(self) -> tuple[str, ...]:
        return tuple(op for s in self.summaries for op in s.conv_ops)

    @property
    def conv_acc_types(self) -> tuple[str, ...]:
        return tuple(a for s in self.summaries for a in s.conv_acc_types)


# -- quantizer and compile spec ------------------------------------------------------
def tosa_spec(scheme: str, dynamic: bool = False, control_flow: bool = False) -> str:
    """The TOSA spec a case lowers to. Symbolic dims need the shape extension,
    which TOSA 1.1 introduced; a `torch.cond` needs the control-flow one."""
    spec = TOSA_SPECS[scheme]
    if dynamic:
        spec = spec.replace("TOSA-1.0", "TOSA-1.1") + "+shape"
    return spec + "+cf" if control_flow else spec


@lru_cache(maxsize=None)
def compile_spec(scheme: str, dynamic: bool = False, control_flow: bool = False) -> TosaCompileSpec:
    return TosaCompileSpec(tosa_spec(scheme, dynamic, control_flow))


def _quantization_config(scheme: str):
    if scheme == "a8w8":
        return get_symmetric_quantization_config(is_per_channel=True)
    if scheme == "a8w8-pt":
        return get_symmetric_quantization_config(is_per_channel=False)
    if scheme == "a16w8":
        return get_symmetric_a16w8_quantization_config(is_per_channel=True)
    raise ValueError(f"scheme {scheme!r} is not quantized")


def quantizer(scheme: str, control_flow: bool = False) -> TOSAQuantizer:
    """A fresh quantizer per case (50 us): it keeps the last graph it annotated,
    and no state may pass from one case to the next."""
    q = TOSAQuantizer(compile_spec(scheme, control_flow=control_flow))
    q.set_global(_quantization_config(scheme))
    return q


# -- stages -----------------------------------------------------------------------
_Q = torch.ops.quantized_decomposed
_DQ_TENSOR = (_Q.dequantize_per_tensor.default, _Q.dequantize_per_tensor.tensor)
_Q_TENSOR = (_Q.quantize_per_tensor.default, _Q.quantize_per_tensor.tensor)
_DQ_CHANNEL = (_Q.dequantize_per_channel.default,)
_CONV_TARGETS = {
    torch.ops.aten.convolution.default,
    torch.ops.aten.conv1d.default,
    torch.ops.aten.conv2d.default,
    torch.ops.aten.conv3d.default,
    torch.ops.aten.conv1d.padding,
    torch.ops.aten.conv2d.padding,
    torch.ops.aten.conv3d.padding,
    torch.ops.aten.conv_transpose1d.default,
    torch.ops.aten.conv_transpose2d.input,
    torch.ops.aten.conv_transpose3d.input,
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
    return TensorQParams(
        float(_value(gm, scale)), int(_value(gm, zp)), int(qmin), int(qmax), _dtype_name(dtype)
    )


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


_PASS_THROUGH = {  # ops a fused activation puts between a conv and its output quantization
    torch.ops.aten.relu.default,
    torch.ops.aten.relu_.default,
    torch.ops.aten.hardtanh.default,
    torch.ops.aten.hardtanh_.default,
    torch.ops.aten.clamp.default,
    torch.ops.aten.relu6.default,
}


def _conv_output_qparams(node: torch.fx.Node, gm) -> TensorQParams | None:
    """The quantize that follows a conv, looking through a fused activation."""
    while True:
        users = list(node.users)
        quantize = [u for u in users if u.target in _Q_TENSOR]
        if len(quantize) == 1:
            return _tensor_qparams(quantize[0], gm)
        if len(users) == 1 and users[0].target in _PASS_THROUGH:
            node = users[0]
            continue
        return None


def _conv_qparams(conv: torch.fx.Node, gm) -> ConvQParams | None:
    x_dq, w_dq = conv.args[0], conv.args[1]
    b_dq = conv.args[2] if len(conv.args) > 2 else None
    if not (isinstance(x_dq, torch.fx.Node) and x_dq.target in _DQ_TENSOR):
        return None
    if not (isinstance(w_dq, torch.fx.Node) and (w_dq.target in _DQ_CHANNEL or w_dq.target in _DQ_TENSOR)):
        return None
    bias = bias_scales = None
    if isinstance(b_dq, torch.fx.Node):
        if b_dq.target in _DQ_CHANNEL or b_dq.target in _DQ_TENSOR:
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
            out += [_conv_qparams(n, owner) for n in owner.graph.nodes if n.op == "call_function" and n.target in _CONV_TARGETS]
    return out


def output_qparams(gm: torch.fx.GraphModule) -> TensorQParams | None:
    """The quantization of the model's (first) output, from its final dequantize."""
    out = gm.graph.output_node().args[0]
    first = out[0] if isinstance(out, (tuple, list)) else out
    if isinstance(first, torch.fx.Node) and first.target in _DQ_TENSOR:
        return _tensor_qparams(first, gm)
    return None


def quantize(
    model: torch.nn.Module,
    inputs: tuple,
    scheme: str,
    calibration: tuple[tuple, ...] | None = None,
    conv_index: int = 0,
    dynamic_shapes=None,
) -> QuantizedModel:
    """PT2E post-training quantization, calibrated on each sample of `calibration`
    (default: the inputs). `conv_index`: which conv in graph order is under test.
    With `dynamic_shapes` the model is captured with those symbolic dims, so
    calibration samples may come in every size the program will run at."""
    # No guard function in the captured module: the Arm quantizer's
    # annotation passes cannot retrace a call_module node.
    captured = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes).module(check_guards=False)
    samples = calibration if calibration is not None else (inputs,)
    if _cond_branches(captured):
        converted = _quantize_with_branches(captured, quantizer(scheme, control_flow=True), samples)
    else:
        prepared = prepare_pt2e(captured, quantizer(scheme))
        for sample in samples:
            prepared(*sample)
        converted = convert_pt2e(prepared)
    return QuantizedModel(converted, conv_qparams(converted), output_qparams(converted), conv_index)


_COND = torch.ops.higher_order.cond


def _cond_branches(gm: torch.fx.GraphModule) -> list[str]:
    """Attribute names of the branch graphs of every torch.cond in `gm`."""
    return [arg.target for n in gm.graph.nodes if n.op == "call_function" and n.target is _COND
            for arg in n.args[1:3]]


class _EagerCond(torch.fx.Interpreter):
    """Runs a graph with each torch.cond replaced by a plain call of the branch
    its predicate picks. Called through torch.cond, a branch is traced with
    symbolic values and its observers fail on data-dependent checks
    (GuardOnDataDependentSymNode, torch 2.13); called directly, they calibrate."""

    def call_function(self, target, args, kwargs):
        if target is _COND:
            predicate, true_branch, false_branch, operands = args
            return (true_branch if bool(predicate) else false_branch)(*operands)
        return super().call_function(target, args, kwargs)


def _quantize_with_branches(captured: torch.fx.GraphModule, q: TOSAQuantizer, samples) -> torch.fx.GraphModule:
    """PT2E for a graph with torch.cond: prepare_pt2e does not descend into
    the branch graphs, so each branch is prepared and converted as a graph of
    its own (one level of nesting); the calibration samples must visit both branches."""
    prepared = prepare_pt2e(captured, q)
    branches = _cond_branches(prepared)
    for name in branches:
        prepared.set_submodule(name, prepare_pt2e(getattr(prepared, name), q))
    for sample in samples:
        _EagerCond(prepared).run(*sample)
    converted_branches = {name: convert_pt2e(getattr(prepared, name)) for name in branches}
    converted = convert_pt2e(prepared)
    for name, branch in converted_branches.items():
        converted.set_submodule(name, branch)
    return converted


_BOUNDARY_TARGETS = ("quantize_per_tensor", "dequantize_per_tensor", "executorch_call_delegate")


def _cpu_ops(program: EdgeProgramManager) -> tuple[str, ...]:
    """Compute nodes left outside the delegates (boundary Q/DQ excepted)."""
    left = []
    for node in program.exported_program().graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        name = getattr(node.target, "__name__", str(node.target))
        if not any(b in name for b in _BOUNDARY_TARGETS):
            left.append(name)
    return tuple(left)


def lower(
    module: torch.nn.Module,
    inputs: tuple,
    scheme: str,
    dynamic_shapes=None,
    control_flow: bool = False,
    shape_extension: bool | None = None,
) -> Artifact:
    """Export (with `dynamic_shapes`, if any) and lower through the TOSA
    partitioner; summarize the result. `shape_extension` (default: whether
    there are dynamic shapes) lowers for TOSA 1.1 with shape operators."""
    dynamic = dynamic_shapes is not None if shape_extension is None else shape_extension
    spec = compile_spec(scheme, dynamic, control_flow)
    exported = torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes)
    # As ExecuTorch's own Arm flows do (aot_arm_compiler, the Arm recipes, the
    # Arm tests): the edge IR verifier does not know the TOSA dialect's dtypes.
    program = to_edge_transform_and_lower(
        exported, partitioner=[TOSAPartitioner(spec)], compile_config=EdgeCompileConfig(_check_ir_validity=False)
    )
    gm = program.exported_program().graph_module
    delegates = [
        getattr(gm, n.target)
        for n in gm.graph.nodes
        if n.op == "get_attr" and hasattr(getattr(gm, n.target), "processed_bytes")
    ]
    tosa = tuple(bytes(d.processed_bytes) for d in delegates)
    return Artifact(
        scheme=scheme,
        tosa_spec=tosa_spec(scheme, dynamic, control_flow),
        program=program,
        tosa=tosa,
        summaries=tuple(read_tosa(t) for t in tosa),
        cpu_ops=_cpu_ops(program),
    )

