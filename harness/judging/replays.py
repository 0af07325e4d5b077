"""Registered mechanisms, replayed: what the output is if a known bug happens exactly as its entry says.

A mismatch entry's bounds (how far, how many elements, where) admit any error of that size, so a second bug of
the same size in the same cases would hide behind the first. A replay states the bug's model as an edit of the
fake-quant model (the PT2E-converted module, the reference of every INT case) and runs it: the entry that
names it explains a case only where the target's output lies within the case's own fake-quant tolerance of the
replay's output. The mechanism itself is then the signature.

A replay is an edit of the converted graph and a run of it in torch: it never reads the lowering or ExecuTorch.
It applies only where its edit finds what it edits (None otherwise: the mechanism cannot be at work there).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  - defines torch.ops.quantized_decomposed

from harness.config import ConvConfig
from harness.judging import compare, oracles
from harness.qparams import QuantizedModel

_Q = torch.ops.quantized_decomposed
_CONV_TARGETS = ("convolution", "conv1d", "conv2d", "conv3d", "conv_transpose")


def _is_conv(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and any(t in str(node.target) for t in _CONV_TARGETS)


def weight_scales_by_output_channel(c: ConvConfig, graph: torch.fx.Graph) -> bool:
    """a8w4-tconv-per-channel-input-axis: a transposed conv's int4 weight is quantized per input channel (axis
    0 of its IOHW weight) and the lowering's RESCALE applies those scales by output channel index. As a graph:
    the weight's dequantize reads its scales along axis 1 (the output channels) instead of 0. Needs IC == OC
    (otherwise the lowering refuses, and nothing is wrong silently)."""
    if not c.transposed or c.groups != 1:
        return False
    edited = False
    for n in graph.nodes:
        if (
            n.target is _Q.dequantize_per_channel.default
            and n.args[3] == 0
            and any(_is_conv(u) and u.args[1] is n for u in n.users)
        ):
            weight_scales = n.args[1]
            if c.in_channels != c.out_channels:
                return False
            n.args = (*n.args[:3], 1, *n.args[4:])
            edited = edited or weight_scales is not None
    return edited


def relu_clamp_lost_under_shared_zero_point(c: ConvConfig, graph: torch.fx.Graph) -> bool:
    """int-fused-relu-shared-qparams: a ReLU whose output is quantized with a zero point above qmin (a concat
    made it share another input's observer) is fused away and its clamp lost. As a graph: that ReLU removed,
    its input fed to what it fed. A ReLU whose output zero point is qmin is clamped by the int8 range itself
    and stays."""
    edited = False
    for n in list(graph.nodes):
        if n.op != "call_function" or "relu" not in str(n.target):
            continue
        quants = [u for u in n.users if u.target is _Q.quantize_per_tensor.default]
        if quants and all(q.args[2] != q.args[3] for q in quants):  # zero point != qmin
            n.replace_all_uses_with(n.args[0])
            graph.erase_node(n)
            edited = True
    return edited


_LAYOUT = ("movedim", "permute", "view", "reshape", "transpose", "squeeze", "unsqueeze", "flatten")


def layout_requantize_dropped(c: ConvConfig, graph: torch.fx.Graph) -> bool:
    """int-layout-op-requantize-dropped: a layout op (movedim, view) between two quantizations that differ
    (its input's observer and the one its output shares with a pad or a concat) is lowered as a TRANSPOSE or
    RESHAPE of the codes without a RESCALE: codes quantized with the first parameters are read with the second.
    As a graph: the layout op's input dequantized with its output's parameters."""
    edited = False
    for n in list(graph.nodes):
        if n.op != "call_function" or _op_name(n) not in _LAYOUT or not isinstance(n.args[0], torch.fx.Node):
            continue
        dq = n.args[0]
        quants = [u for u in n.users if u.target is _Q.quantize_per_tensor.default]
        if dq.target is not _Q.dequantize_per_tensor.default or not quants or len(quants) != len(n.users):
            continue
        read_as = {tuple(q.args[1:3]) for q in quants}
        if len(read_as) != 1 or next(iter(read_as)) == tuple(dq.args[1:3]):
            continue
        scale, zero_point = next(iter(read_as))
        with graph.inserting_after(dq):
            misread = graph.call_function(dq.target, (dq.args[0], scale, zero_point, *dq.args[3:]))
        n.replace_input_with(dq, misread)
        edited = True
    return edited


def _op_name(node: torch.fx.Node) -> str:
    return str(getattr(node.target, "__name__", node.target)).split(".")[0]


@dataclass(frozen=True)
class Replay:
    name: str  # the registry entry's `replay`
    edit: Callable[[ConvConfig, torch.fx.Graph], bool]  # the mechanism as a graph edit; False: not at work here


REPLAYS: dict[str, Replay] = {
    r.name: r
    for r in (
        Replay("weight-scales-by-output-channel", weight_scales_by_output_channel),
        Replay("relu-clamp-lost-under-shared-zero-point", relu_clamp_lost_under_shared_zero_point),
        Replay("layout-requantize-dropped", layout_requantize_dropped),
    )
}


def replay(name: str, c: ConvConfig, quantized: QuantizedModel, inputs: tuple[torch.Tensor, ...]) -> np.ndarray | None:
    """The output codes of the fake-quant model with the mechanism `name` applied; None where it does not apply."""
    if not isinstance(quantized.module, torch.fx.GraphModule):  # no graph to edit: nothing is replayed
        return None
    module = copy.deepcopy(quantized.module)
    if not REPLAYS[name].edit(c, module.graph):
        return None
    module.graph.lint()
    module.recompile()
    oq = quantized.output
    return compare.quantize_output(oracles.fake_quant(module, inputs), oq.scale, oq.zero_point, oq.qmin, oq.qmax)


# -- float schemes: the mechanism as a function the fp64 reference computes differently ---------------------------


def _expm1_as_decomposed(y: torch.Tensor) -> torch.Tensor:
    """DecomposeExpm1Pass's expm1: the 4-term Taylor polynomial on [-0.35, 0.35], exp(y) - 1 elsewhere."""
    taylor = y + y**2 / 2 + y**3 / 6 + y**4 / 24
    return torch.where((y >= -0.35) & (y <= 0.35), taylor, torch.exp(y) - 1)


class _EluAsDecomposed(torch.overrides.TorchFunctionMode):
    """fp32-elu-expm1-taylor-truncation: elu(y) = where(y > 0, y, alpha * expm1(y)) with the decomposed expm1."""

    def __init__(self):
        super().__init__()
        self.seen = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.elu:
            self.seen = True
            y = args[0]
            alpha = kwargs.get("alpha", args[1] if len(args) > 1 else 1.0)
            return torch.where(y > 0, y, alpha * _expm1_as_decomposed(y))
        return func(*args, **kwargs)


FLOAT_REPLAYS: dict[str, Callable[[], torch.overrides.TorchFunctionMode]] = {
    "elu-expm1-taylor-branch": _EluAsDecomposed,
}


def float_fits(
    model: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    passes: Callable[[torch.Tensor], tuple[bool, float | None]],
) -> dict[str, dict]:
    """Each float replay whose function the model calls: its fp64 reference with the mechanism's arithmetic, and
    whether the output passes the scheme's rule against it (`passes(reference)`: passed, the largest error)."""
    found = {}
    model64 = copy.deepcopy(model).double()
    xs = tuple(x.double() for x in inputs)
    for name, mode_of in FLOAT_REPLAYS.items():
        mode = mode_of()
        with torch.no_grad(), mode:
            reference = model64(*xs)
        if not mode.seen:
            continue
        ok, worst = passes(reference)
        found[name] = {"max_err": worst, "fits": ok}
    return found


def fits(
    c: ConvConfig, quantized: QuantizedModel, inputs: tuple[torch.Tensor, ...], out_codes: np.ndarray, tolerance: int
) -> dict[str, dict]:
    """Each replay that applies to the case: the most LSB the output lies from it, and whether that is within
    `tolerance` (the case's own, against the fake-quant model)."""
    found = {}
    for name in REPLAYS:
        predicted = replay(name, c, quantized, inputs)
        if predicted is None or predicted.shape != out_codes.shape:
            continue
        off = int(np.max(np.abs(out_codes.astype(np.int64) - predicted.astype(np.int64)))) if out_codes.size else 0
        found[name] = {"max_lsb": off, "fits": off <= tolerance}
    return found
