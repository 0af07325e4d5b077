"""PT2E post-training quantization of a case's model, with its target's quantizer.

The quantizer and its configuration are the target's and the scheme's: the
same `prepare_pt2e` / calibrate / `convert_pt2e` a user runs. The converted
model and the parameters read from it (`harness.qparams`) are what the
oracles use.
"""

from __future__ import annotations

import logging

import torch

# Import-time warnings about optional CUDA kernels and deprecated pytree
# registrations say nothing about a case; keep them off every run's output.
for _name in ("torchao", "torch.utils._pytree"):
    logging.getLogger(_name).setLevel(logging.ERROR)

from executorch.backends.arm.quantizer import (  # noqa: E402
    get_symmetric_a16w8_quantization_config,
    get_symmetric_quantization_config,
)
from executorch.backends.arm.quantizer.arm_quantizer import get_symmetric_a8w4_quantization_config  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402

from harness.policy.schemes import SCHEMES  # noqa: E402
from harness.policy.targets import Target  # noqa: E402
from harness.qparams import QuantizedModel, read_quantized  # noqa: E402
from harness.speedups import lazy_compile  # noqa: E402
from harness.targets import backend  # noqa: E402

# a8w4's maker defaults to QAT (moving-average fake quantizers); this is post-training quantization like the rest.
_CONFIGS = {
    "a8w8": get_symmetric_quantization_config,
    "a16w8": get_symmetric_a16w8_quantization_config,
    "a8w4": lambda is_per_channel: get_symmetric_a8w4_quantization_config(is_per_channel, is_qat=False),
}


def quantizer(target: Target, scheme: str, control_flow: bool = False):
    """A fresh quantizer per case (50 us): it keeps the last graph it annotated,
    and no state may pass from one case to the next."""
    config = SCHEMES[scheme].quantizer
    if config is None:
        raise ValueError(f"scheme {scheme!r} is not quantized")
    side = backend(target)
    q = side.quantizer(side.compile_spec(target, scheme, control_flow=control_flow))
    q.set_global(_CONFIGS[config.kind](is_per_channel=config.per_channel))
    return q


def quantize(
    model: torch.nn.Module,
    inputs: tuple,
    scheme: str,
    target: Target,
    calibration: tuple[tuple, ...] | None = None,
    conv_index: int = 0,
    dynamic_shapes=None,
) -> QuantizedModel:
    """PT2E post-training quantization, calibrated on each sample of `calibration`
    (default: the inputs). `conv_index`: which conv in graph order is under test.
    With `dynamic_shapes` the model is captured with those symbolic dims, so
    calibration samples may come in every size the program will run at."""
    with lazy_compile.during_quantization():
        # No guard function in the captured module: the Arm quantizer's
        # annotation passes cannot retrace a call_module node.
        captured = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes).module(check_guards=False)
        samples = calibration if calibration is not None else (inputs,)
        if _cond_branches(captured):
            converted = _quantize_with_branches(captured, quantizer(target, scheme, control_flow=True), samples)
        else:
            prepared = prepare_pt2e(captured, quantizer(target, scheme))
            for sample in samples:
                prepared(*sample)
            converted = convert_pt2e(prepared)
        lazy_compile.compile_now(converted)
    return read_quantized(converted, conv_index)


_COND = torch.ops.higher_order.cond


def _cond_branches(gm: torch.fx.GraphModule) -> list[str]:
    """Attribute names of the branch graphs of every torch.cond in `gm`."""
    return [arg.target for n in gm.graph.nodes if n.op == "call_function" and n.target is _COND for arg in n.args[1:3]]


class _EagerCond(torch.fx.Interpreter):
    """Runs a graph with each torch.cond replaced by a plain call of the branch
    its predicate picks, the branch run the same way (a nested cond). Called
    through torch.cond, a branch is traced with symbolic values and its
    observers fail on data-dependent checks (GuardOnDataDependentSymNode,
    torch 2.13); called directly, they calibrate."""

    def call_function(self, target, args, kwargs):
        if target is _COND:
            predicate, true_branch, false_branch, operands = args
            return _EagerCond(true_branch if bool(predicate) else false_branch).run(*operands)
        return super().call_function(target, args, kwargs)


def _prepare_branches(gm: torch.fx.GraphModule, q) -> None:
    """prepare_pt2e does not descend into cond branches: prepare each branch graph (and its own branches)."""
    for name in _cond_branches(gm):
        branch = prepare_pt2e(getattr(gm, name), q)
        _prepare_branches(branch, q)
        gm.set_submodule(name, branch)


def _convert(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """convert_pt2e of a prepared graph and, first, of its branch graphs, at every depth."""
    branches = {name: _convert(getattr(gm, name)) for name in _cond_branches(gm)}
    converted = convert_pt2e(gm)
    for name, branch in branches.items():
        converted.set_submodule(name, branch)
    return converted


def _quantize_with_branches(captured: torch.fx.GraphModule, q, samples) -> torch.fx.GraphModule:
    """PT2E for a graph with torch.cond: prepare_pt2e does not descend into
    the branch graphs, so each branch (a nested cond's too) is prepared and
    converted as a graph of its own; the calibration samples must visit every branch."""
    prepared = prepare_pt2e(captured, q)
    _prepare_branches(prepared, q)
    for sample in samples:
        _EagerCond(prepared).run(*sample)
    return _convert(prepared)
