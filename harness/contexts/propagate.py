"""How far a correct INT lowering may drift from the fake-quant model through the quantized elementwise ops
after a conv, read off the converted graph itself.

The grammar's tolerance (`ContextSpec.int_tolerance`) follows the ops it composes around a conv, each as the
release's quantizer usually leaves it: one quantized op per activation. A release may decompose an activation
before annotating it (ExecuTorch 1.4.1's quantizer turns leaky_relu into clamp(x, 0) + clamp(x, max=0) * slope,
each quantized): the same bound then follows from the graph, op by op. In real units, every requantization
(a quantize node) adds one step of its own scale (the fixed-point RESCALE and the float rounding differ by at
most one); a 1-Lipschitz op (clamp, relu, max, min, a pool, a concat, a view) passes on its input's drift; an add
or sub sums its inputs'; a mul of a and b gives |a| e_b + |b| e_a + e_a e_b with |a|, |b| the most their
quantization can hold. An op outside these raises: no bound is guessed.
"""

from __future__ import annotations

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  - defines torch.ops.quantized_decomposed

_Q = torch.ops.quantized_decomposed
_QUANTIZE = {_Q.quantize_per_tensor.default}
_DEQUANTIZE = {_Q.dequantize_per_tensor.default}
_PASS_ON = (
    "clamp",
    "relu",
    "hardtanh",
    "maximum",
    "minimum",
    "max_pool",
    "avg_pool",
    "adaptive_avg_pool",
    "mean",
    "cat",
    "view",
    "reshape",
    "permute",
    "squeeze",
    "unsqueeze",
    "flatten",
    "clone",
    "slice",
    "pad",
    "upsample_nearest",
    "getitem",
)
_SUM = ("add", "sub")


def _name(node: torch.fx.Node) -> str:
    return str(getattr(node.target, "__name__", node.target)).split(".")[0]


def _largest(node: torch.fx.Node) -> float:
    """The most |value| a dequantized tensor can hold, from its quantization."""
    if node.target not in _DEQUANTIZE:
        raise ValueError(f"no quantization to bound {node.name} ({_name(node)}) by")
    scale, zp, qmin, qmax = node.args[1:5]
    return scale * max(qmax - zp, zp - qmin)


def drift_to_output(gm: torch.fx.GraphModule, start: torch.fx.Node, drift: float) -> float:
    """The most the model's output may drift (real units) when the quantize node `start` may be `drift` off.
    ValueError for an op it has no rule for."""
    err: dict[torch.fx.Node, float] = {start: drift}
    seen_start = False
    for n in gm.graph.nodes:
        if n is start:
            seen_start = True
            continue
        if not seen_start or n.op != "call_function":
            continue
        inputs = [a for a in n.args if isinstance(a, torch.fx.Node)] + [
            a for arg in n.args if isinstance(arg, (list, tuple)) for a in arg if isinstance(a, torch.fx.Node)
        ]
        if not any(a in err for a in inputs):
            continue  # a constant, or another branch: exact
        e = [err.get(a, 0.0) for a in inputs]
        name = _name(n)
        if n.target in _QUANTIZE:
            err[n] = e[0] + n.args[1]
        elif n.target in _DEQUANTIZE or name in _PASS_ON:
            err[n] = max(e)
        elif name in _SUM:
            err[n] = sum(e)
        elif name == "mul" and len(inputs) == 2:
            a, b = inputs
            ea, eb = err.get(a, 0.0), err.get(b, 0.0)
            err[n] = _largest(a) * eb + _largest(b) * ea + ea * eb
        else:
            raise ValueError(f"no drift rule for {name} ({n.name}) after the conv")
    out = gm.graph.output_node().args[0]
    first = out[0] if isinstance(out, (tuple, list)) else out
    if first not in err:
        raise ValueError("the model's output does not follow the conv")
    return err[first]
