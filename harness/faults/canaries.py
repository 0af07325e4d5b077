"""Canary faults: real-looking bugs injected into the installed conv passes.

Each canary monkeypatches one branch of RewriteConvPass, SizeAdjustInputPass
or DecomposeGroupedConvPass in this process only (nothing is written to
site-packages) and is undone on exit. A sweep run with a canary must turn
some case red: that is how we know the harness can fail. `relevant` names
the configs that reach the faulty branch, so a search for the first catching
case can try those first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the catalog is read (names, relevance) where torch is not loaded: a sweep's parent
    import torch

from harness.config import ConvConfig
from harness.policy.schemes import FP8_SCHEMES


@dataclass(frozen=True)
class Canary:
    name: str
    branch: str
    fault: str
    relevant: Callable[[ConvConfig], bool]
    patch: Callable[[], Callable[[], None]]  # installs the fault, returns its undo


def _trims(c: ConvConfig) -> bool:
    return "trim" in c.size_adjustments()


def _slices(c: ConvConfig) -> bool:
    return "slice" in c.size_adjustments()


def _set(obj, attr: str, value) -> Callable[[], None]:
    old = getattr(obj, attr)
    setattr(obj, attr, value)
    return lambda: setattr(obj, attr, old)


def _rewrite():
    from executorch.backends.arm._passes import rewrite_conv_pass

    return rewrite_conv_pass


def _tosa_op(name: str):
    from executorch.exir.dialects._ops import ops as exir_ops

    return getattr(exir_ops.backend.tosa, name).default


def _patch_constants(suffix: str, change: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[], None]:
    """Alter the data of the constants RewriteConvPass creates with this name suffix."""
    module = _rewrite()
    original = module.create_constant_placeholder

    def create_constant_placeholder(exported_program, graph, name, kind, data, *args, **kwargs):
        if name.endswith(suffix):
            data = change(data)
        return original(exported_program, graph, name, kind, data, *args, **kwargs)

    return _set(module, "create_constant_placeholder", create_constant_placeholder)


def _patch_created_nodes(target: str, change: Callable[[tuple], tuple]) -> Callable[[], None]:
    """Alter the arguments of the TOSA ops of one kind RewriteConvPass creates."""
    module = _rewrite()
    original = module.create_node
    op = _tosa_op(target)

    def create_node(graph, op_target, args=(), *rest, **kwargs):
        if op_target == op:
            args = change(tuple(args))
        return original(graph, op_target, args, *rest, **kwargs)

    return _set(module, "create_node", create_node)


def _pad_off_by_one() -> Callable[[], None]:
    cls = _rewrite().RewriteConvPass
    original = cls._adjust_pad_if_needed

    def adjust(self, input_len, input_weight, stride, pad, dilation):
        adjusted = original(self, input_len, input_weight, stride, pad, dilation)
        return adjusted - 1 if adjusted != pad else adjusted  # trims one row too many

    return _set(cls, "_adjust_pad_if_needed", adjust)


def _depthwise_layout(w: torch.Tensor) -> torch.Tensor:
    kh, kw, ic, m = w.shape  # the channel multiplier taken as the major index
    return w.reshape(kh, kw, m, ic).permute(0, 1, 3, 2).contiguous()


def _per_channel_rescale() -> Callable[[], None]:
    cls = _rewrite().RewriteConvPass
    original = cls.insert_output_rescale

    def insert_output_rescale(self, graph_module, source_node, conv_node, conv_fake_tensor):
        node, fake = original(self, graph_module, source_node, conv_node, conv_fake_tensor)
        scales = list(node.args[2])
        if len(scales) > 1:  # per-channel scales applied to the wrong channels
            node.args = (node.args[0], node.args[1], scales[::-1], *node.args[3:])
        return node, fake

    return _set(cls, "insert_output_rescale", insert_output_rescale)


def _tconv_out_pad(args: tuple) -> tuple:
    x, w, b, out_pad, *rest = args
    top, _, left, _ = out_pad
    return (x, w, b, [top, top, left, left], *rest)  # output padding dropped


def _conv1d_stride(args: tuple) -> tuple:
    x, w, b, stride, *rest = args
    if isinstance(stride, (tuple, list)) and stride[0] == 1 and stride[1] > 1 and x.meta["val"].shape[1] == 1:
        stride = (stride[1], 1)  # stride placed on the unit H axis
    return (x, w, b, stride, *rest)


def _grouped_slices() -> Callable[[], None]:
    from executorch.backends.arm._passes.decompose_grouped_conv_pass import DecomposeGroupedConvPass

    original = DecomposeGroupedConvPass._slice_weights

    def slice_weights(self, *args, **kwargs):
        slices = original(self, *args, **kwargs)
        return slices[1:] + slices[:1]  # each group gets the next group's weights

    return _set(DecomposeGroupedConvPass, "_slice_weights", slice_weights)


def _slice_from_start() -> Callable[[], None]:
    from executorch.backends.arm._passes import size_adjust_input_pass as module

    original = module.get_slices_convolution

    def get_slices_convolution(conv_node):
        slices = original(conv_node)
        shape = conv_node.args[0].meta["val"].shape
        return [(dim, shape[dim] - end, shape[dim]) for dim, _, end in slices]  # drops the first rows

    return _set(module, "get_slices_convolution", get_slices_convolution)


def _no_int48_bias() -> Callable[[], None]:
    return _set(_rewrite().RewriteConvPass, "_mark_bias_as_int48_if_needed", lambda self, node, bias: None)


def _ones(t: torch.Tensor) -> torch.Tensor:
    return t.new_ones(t.shape)


def _zeros(t: torch.Tensor) -> torch.Tensor:
    return t.new_zeros(t.shape)


def _swap_depth_height(w: torch.Tensor) -> torch.Tensor:
    return w.transpose(1, 2).contiguous()  # ODHWI read as OHDWI


CANARIES: dict[str, Canary] = {
    c.name: c
    for c in (
        Canary(
            "pad-off-by-one",
            "RewriteConvPass._adjust_pad_if_needed",
            "the trailing pad is trimmed one row too far",
            _trims,
            _pad_off_by_one,
        ),
        Canary(
            "depthwise-weight-layout",
            "RewriteConvPass depthwise branch (HWCM weight)",
            "the channel multiplier is taken as the major index of the output channels",
            lambda c: c.is_depthwise and c.depth_multiplier > 1,
            lambda: _patch_constants("_weight_hwicm", _depthwise_layout),
        ),
        Canary(
            "per-channel-rescale",
            "RewriteConvPass.insert_output_rescale",
            "per-channel output scales applied in reverse channel order",
            lambda c: c.scheme in ("a8w8", "a16w8"),
            _per_channel_rescale,
        ),
        Canary(
            "tconv-output-padding",
            "RewriteConvPass transposed branch (out_pad)",
            "output padding dropped from TRANSPOSE_CONV2D",
            lambda c: c.transposed and any(c.output_padding),
            lambda: _patch_created_nodes("TRANSPOSE_CONV2D", _tconv_out_pad),
        ),
        Canary(
            "conv1d-stride",
            "RewriteConvPass rank-1 branch (stride placement)",
            "a conv1d's stride put on the unit height axis",
            lambda c: c.rank == 1 and c.stride[0] > 1,
            lambda: _patch_created_nodes("CONV2D", _conv1d_stride),
        ),
        Canary(
            "int48-bias",
            "RewriteConvPass._mark_bias_as_int48_if_needed",
            "an a16w8 bias not marked INT48",
            lambda c: c.scheme == "a16w8" and c.bias,
            _no_int48_bias,
        ),
        Canary(
            "inserted-bias",
            "RewriteConvPass._add_bias (no bias)",
            "the bias inserted for a bias-free conv is ones, not zeros",
            lambda c: not c.bias,
            lambda: _patch_constants("_bias", _ones),
        ),
        Canary(
            "grouped-slices",
            "DecomposeGroupedConvPass._slice_weights",
            "each group convolved with the next group's weights",
            lambda c: c.groups > 1 and not c.is_depthwise,
            _grouped_slices,
        ),
        Canary(
            "slice-from-start",
            "SizeAdjustInputPass.get_slices_convolution",
            "the unused input rows are sliced off the start instead of the end",
            _slices,
            _slice_from_start,
        ),
        Canary(
            "conv3d-weight-layout",
            "RewriteConvPass conv3d branch (ODHWI weight)",
            "depth and height axes of a 3D weight swapped",
            lambda c: c.rank == 3 and not c.transposed,
            lambda: _patch_constants("_weight_odhwi", _swap_depth_height),
        ),
        Canary(
            "fp8-bias",
            "RewriteConvPass._rewrite_fp8_bias",
            "the FP16 bias rebuilt for an fp8 conv is zeros",
            lambda c: c.scheme in FP8_SCHEMES and c.bias,
            lambda: _patch_constants("_bias_fp16", _zeros),
        ),
    )
}


def _mutant(name: str) -> Canary:
    """A mutant of the installed lowering (harness.faults), as a fault like any canary's."""
    from harness.faults.catalog import parse_name
    from harness.policy.mutation import module_name

    target, index = parse_name(name)

    def patch() -> Callable[[], None]:
        from harness.faults.load import install

        return install(module_name(target), index)

    return Canary(name, f"{target} mutant {index}", "a mutant (python -m harness mutate)", lambda c: True, patch)


def get(name: str) -> Canary:
    """Canary `name`, or the mutant it names (`mutant:TARGET:INDEX`); ConfigError for an unknown one."""
    if name.startswith("mutant:"):
        return _mutant(name)
    if name not in CANARIES:
        from harness.config import ConfigError

        raise ConfigError(f"unknown canary {name!r}; canaries: {', '.join(CANARIES)}")
    return CANARIES[name]


@contextlib.contextmanager
def injected(name: str) -> Iterator[Canary]:
    """Install canary `name` for the duration of the block."""
    canary = get(name)
    undo = canary.patch()
    try:
        yield canary
    finally:
        undo()
