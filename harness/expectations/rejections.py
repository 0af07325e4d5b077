"""Configs the Arm backend documents as unsupported, and why.

Each rule mirrors a rejection the backend reports itself (its TOSA support
check for convolutions, `ConvolutionSupported`, with its Ethos-U55 rules for
the targets lowered to the U55 subset (U55 and U65), the U55 operator lists
`EthosU55NotSupported`, or an explicit error in `RewriteConvPass`). A rule
applies to every target unless it names the target families it is for. A
case matching a rule must be rejected cleanly: left on the CPU or refused
with an error. Then its outcome is `expected_rejection`; a crash elsewhere or
a wrong number is still a failure.

A refusal counts only if the backend gives the rule's reason: `error_pattern`
must match the error's message, or, for a conv left on the CPU, the
partitioner's message for the node the rule is about (`subjects`: the conv, or,
for a symbolic shape, whichever op meets it; `harness.lowering.partition_report`);
any other node left on the CPU must be a consequence of it or a registered
known issue's (`refuses`): a regression that leaves another node out is a new
failure even while the rule's line is there. Each rule
names the ExecuTorch releases it holds for (`executorch`, PEP 440:
`harness.expectations.applies`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from harness.config import ConvConfig
from harness.expectations.applies import Backend, Holds, holds, or_current
from harness.expectations.left_on_cpu import causes, cpu_nodes
from harness.policy.schemes import SCHEMES


@dataclass(frozen=True)
class Rejection:
    name: str
    reason: str  # the backend's own words
    applies: Callable[[ConvConfig], bool]
    # A refusal (an exception, or the partitioner's reason for leaving the conv on the CPU) counts as this
    # rejection only if its message matches this (case-insensitive) regex.
    error_pattern: str
    executorch: str = ">=1.4.0"  # the releases the backend documents it for (PEP 440)
    families: tuple[str, ...] = ()  # target families it is for ('ethos-u55', ...); () = every target
    introduced_by: str = ""  # the commits of main that start and end it, where the runnable history holds them
    fixed_by: str = ""
    # the nodes it refuses, when left on the CPU: the conv, or () for any op (a symbolic shape is refused wherever
    # it meets an op: the pool after a dynamic conv says the same words)
    subjects: tuple[str, ...] = ("convolution",)

    @property
    def holds(self) -> Holds:
        return holds(self.executorch, self.introduced_by, self.fixed_by, where=f"rejection {self.name}")

    def matches_error(self, message: str) -> bool:
        return re.search(self.error_pattern, message, re.IGNORECASE) is not None

    def refuses(self, reason: str, error: str, accounted: Callable[[str, str], bool] = lambda op, said: False) -> bool:
        """Whether a case left on the CPU with this `reason` (and the partitioner's joined `error`) is this
        rule's refusal: a node it is about (`subjects`) refused in the rule's words, and every other node refused
        for a reason of its own `accounted` for (by a known issue of the case). A placement by Vela has no nodes
        to read: its message is matched whole."""
        nodes = cpu_nodes(reason)
        if nodes is None:
            return self.matches_error(error)
        found = causes(nodes)
        ours = {
            op for op, said in found.items() if (not self.subjects or op in self.subjects) and self.matches_error(said)
        }
        return bool(ours) and all(accounted(op, said) for op, said in found.items() if op not in ours)


U55_SUBSET = ("ethos-u55", "ethos-u65")  # lowered for TOSA-1.0+INT+...+u55: ConvolutionSupported's U55 rules


def _u55_kernel(c: ConvConfig) -> bool:
    """kernel[3] <= 64 and kernel[2] * kernel[3] <= 4096, on the aten weight (O, I, *k): a 1D kernel has
    kernel[3] = 1 (the backend names them kernel_y and kernel_x, the other way round)."""
    if c.transposed:
        return False
    k2, k3 = c.kernel[0], c.kernel[1] if c.rank > 1 else 1
    return not 1 <= k3 <= 64 or k2 * k3 > 4096


def _u55_stride(c: ConvConfig) -> bool:
    """A stride above 3 needs no padding at all and dilation 1 on its axis; a conv3d needs strides[2] <= 1
    (the backend's `stride_z`, which is the last axis of (D, H, W): the width)."""
    if c.transposed:
        return False
    padded = any(before or after for before, after in c.explicit_padding())
    if c.rank == 3 and c.stride[2] > 1:
        return True
    return any(not 1 <= s <= 3 and (padded or d != 1) for s, d in zip(c.stride, c.dilation))


def _u55_tconv_stride(c: ConvConfig) -> bool:
    """TRANSPOSE_CONV2D on U55: stride (1, 1) or (2, 2); (1, 2) for an input and kernel of height 1,
    (2, 1) for width 1; a kernel of at most 64 rows and 4096 taps."""
    if not (c.transposed and c.rank == 2):
        return False
    kh, kw = c.kernel
    if kh > 64 or kh * kw > 4096:
        return True
    stride, (h, w) = tuple(c.stride), c.input_size
    allowed = (
        stride in ((1, 1), (2, 2))
        or (stride == (1, 2) and h == 1 and kh == 1)
        or (stride == (2, 1) and w == 1 and kw == 1)
    )
    return not allowed


def _tconv_pad_exceeds_kernel(c: ConvConfig) -> bool:
    # TOSA out_pad = (-pad, -pad + output_padding) per dim must stay > -kernel.
    pads = c.explicit_padding()
    return any(p >= k or p - op >= k for (p, _), op, k in zip(pads, c.output_padding, c.kernel))


REJECTIONS: tuple[Rejection, ...] = (
    Rejection(
        "tconv-dilation",
        "Transpose convolutions with dilation are not supported.",
        lambda c: c.transposed and any(d != 1 for d in c.dilation),
        error_pattern=r"Transpose convolutions with dilation are not supported",
    ),
    Rejection(
        "tconv-not-2d",
        "Only 2D transpose convolutions are supported.",
        lambda c: c.transposed and c.rank != 2,
        error_pattern=r"Only 2D transpose convolutions are supported",
    ),
    Rejection(
        "tconv-grouped-per-channel",
        "Grouped transpose convolutions with per-channel weight quantization are not supported.",
        lambda c: c.transposed and c.groups > 1 and c.is_quantized and SCHEMES[c.scheme].quantizer.per_channel,
        error_pattern=r"Grouped transpose convolutions with per-channel weight quantization are not supported",
    ),
    Rejection(
        "dynamic-padding-mode",
        "Pad mode '<mode>' does not support symbolic shape yet.",
        lambda c: c.dynamic_spatial and c.padding_mode != "zeros" and any(sum(p) for p in c.explicit_padding()),
        error_pattern="does not support symbolic shape",
        subjects=(),
    ),
    Rejection(
        "dynamic-needs-shape-extension-before-1.5.1",
        "Node has symbolic shape, has the TOSA spec shape extension support? (before 1.5.1 every op with a "
        "symbolic size, batch or spatial, is left on the CPU without the TOSA shape extension)",
        lambda c: c.dynamic != "none" and not c.shape_extension,
        error_pattern=r"Node has symbolic shape, has the TOSA spec shape extension support",
        executorch="<1.5.1",
        subjects=(),
    ),
    Rejection(
        "dynamic-needs-shape-extension",
        "Symbolic spatial dims unsupported (without the TOSA shape extension, a conv whose padding or "
        "input slice depends on a dynamic size is left on the CPU).",
        lambda c: (
            c.dynamic_spatial
            and not c.shape_extension
            and (c.runtime_trim or c.symbolic_slice or c.transposed or c.pool_slice)
        ),
        error_pattern=r"Symbolic spatial dims unsupported",
        executorch=">=1.5.1",
        subjects=(),
    ),
    Rejection(
        "tconv-out-pad-exceeds-kernel",
        "Transpose convolution out_pad exceeds kernel height/width.",
        lambda c: c.transposed and c.rank == 2 and _tconv_pad_exceeds_kernel(c),
        error_pattern=r"Transpose convolution out_pad exceeds kernel (height|width)",
    ),
    Rejection(
        "u55-conv3d-kernel-z",
        "Convolution3d needs to have kernel_z==1 (the backend reads kernel_z from the weight's last axis, "
        "the conv's width: kernel[4] of (O, I, D, H, W)).",
        lambda c: c.rank == 3 and not c.transposed and c.kernel[2] != 1,
        error_pattern=r"Convolution3d needs to have kernel_z==1",
        families=U55_SUBSET,
    ),
    Rejection(
        "u55-kernel",
        "Convolution needs to have kernel_y<=64, kernel_x*kernel_y<=4096.",
        _u55_kernel,
        error_pattern=r"Convolution needs to have kernel_y<=64, kernel_x\*kernel_y<=4096",
        families=U55_SUBSET,
    ),
    Rejection(
        "u55-stride",
        "Failed condition on stride, pad and dilation combination (a stride above 3 needs no padding and "
        "dilation 1; a conv3d stride_z <= 1).",
        _u55_stride,
        error_pattern=r"Failed condition on stride, pad and dilation combination",
        families=U55_SUBSET,
    ),
    Rejection(
        "u55-tconv-stride-kernel",
        "Unsupported stride or kernel of a transpose convolution for Ethos-U55 (stride (1,1) or (2,2), (1,2) "
        "or (2,1) only for a unit input and kernel height or width; kernel height <= 64, taps <= 4096).",
        _u55_tconv_stride,
        error_pattern=r"Unsupported stride of .* for Ethos-U55|Kernel Height \* Kernel Width must be in the range",
        families=U55_SUBSET,
    ),
    Rejection(
        "u55-avgpool-batch",
        "Avgpool2d needs N==1 (the pooling after the conv is left on the CPU for a batch above 1).",
        lambda c: "avgpool" in c.context and c.batch > 1,
        error_pattern=r"Avgpool2d needs N ?== ?1",
        families=U55_SUBSET,
    ),
)


def expected_rejection(c: ConvConfig, family: str = "tosa", backend: Backend | None = None) -> Rejection | None:
    """The first documented rejection that applies to `c` on a target of `family`, on `backend` (by default the
    ExecuTorch of this process; `applies.ANY` for any)."""
    backend = or_current(backend)
    for rule in REJECTIONS:
        if (not rule.families or family in rule.families) and rule.holds(backend) and rule.applies(c):
            return rule
    return None


def rejection(name: str) -> Rejection | None:
    """The documented rejection called `name`, if it is still documented."""
    return next((r for r in REJECTIONS if r.name == name), None)
