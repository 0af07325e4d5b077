"""Did the conv become the TOSA operator its shape calls for? A check on the lowered graph's operators.

Numbers can be right while the lowering is wrong: a depthwise conv decomposed
into one 1-channel conv per channel (eight DEPTHWISE_CONV2Ds for one) computes
the same values, at many times the cost
on an NPU, and goes unseen by any numeric judge. RewriteConvPass and
DecomposeGroupedConvPass choose by shape alone, so the choice is checked from
the config and the TOSA graph's conv operators (`harness.tosa.graph`): pure,
no ExecuTorch.
"""

from __future__ import annotations

from harness.config import ConvConfig
from harness.policy.targets import CONTROL_FLOW_CONTEXTS

DEPTHWISE, TRANSPOSE = "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D"


def expected_op(c: ConvConfig) -> str:
    """The TOSA op the conv under test lowers to (a grouped conv: one per group)."""
    if c.transposed:
        return TRANSPOSE
    if c.rank == 3:
        return "CONV3D"
    return DEPTHWISE if c.is_depthwise else "CONV2D"


def wrong_op(c: ConvConfig, conv_ops: list[str] | tuple[str, ...]) -> str:
    """'' if the lowered conv operators fit the config; else one line saying what came out and why it is
    wrong. A context may add convs of its own (1x1 ones: CONV2D, or CONV3D around a conv3d), never a
    depthwise or a transposed one, and a cond holds the conv once per branch. So a depthwise or
    transposed conv must come out exactly once per group and branch, the others at least that often."""
    if not conv_ops:
        return ""
    expected = expected_op(c)
    need = (c.groups if c.groups > 1 and not c.is_depthwise else 1) * CONTROL_FLOW_CONTEXTS.get(c.context, 1)
    got = ", ".join(f"{op} x{conv_ops.count(op)}" for op in sorted(set(conv_ops)))
    n = conv_ops.count(expected)
    if n < need or (n > need and expected in (DEPTHWISE, TRANSPOSE)):
        per = " (one per group)" if c.groups > 1 and not c.is_depthwise else ""
        return f"the conv lowered to {got}; its shape calls for {expected} x{need}{per}"
    if DEPTHWISE in conv_ops and not c.is_depthwise:
        return f"the conv lowered to {got}; a DEPTHWISE_CONV2D where the conv is not depthwise"
    return ""


def wrong_weight_type(c: ConvConfig, weight_types: list[str] | tuple[str, ...], expected: str) -> str:
    """'' if every conv's weight tensor has the scheme's element type `expected` (a context's own convs are
    quantized alike); else one line naming what came out. int4 weights stored as int8 give the very same
    numbers, so no numeric judge sees them, yet they double the weights' memory on an NPU and drop the
    +int4 extension the scheme asked for."""
    if not expected or not weight_types:
        return ""
    other = sorted(set(weight_types) - {expected})
    if not other:
        return ""
    got = ", ".join(f"{t} x{weight_types.count(t)}" for t in sorted(set(weight_types)))
    return f"the conv weights are {got}; scheme {c.scheme} calls for {expected} weights"


def wrong_weight_quantization(
    c: ConvConfig, per_channel: bool, axis: int | None, zero_points: tuple[int, ...], qmin: int, qmax: int
) -> str:
    """'' if the conv's weight is quantized as the scheme declares: symmetric (zero points 0 over a range
    -qmax..qmax) and, for a per-channel scheme, per channel; else one line naming what the quantizer did.
    A weight quantized like an activation (asymmetric, per tensor) still matches the fake-quant model bit
    for bit, and often clears the SQNR floor, so only this check sees it."""
    got = []
    if per_channel and axis is None:
        got.append("per tensor")
    if any(zero_points) or qmin != -qmax:
        zp = sorted(set(zero_points))
        got.append(f"asymmetric (zero point {zp[0] if len(zp) == 1 else zp}, range {qmin}..{qmax})")
    if not got:
        return ""
    return (
        f"the conv's weight is quantized {' and '.join(got)}; scheme {c.scheme} calls for symmetric "
        f"{'per-channel' if per_channel else 'per-tensor'} weights"
    )


# RewriteConvPass narrows a conv1d's accumulator before its INT32 consumers by design: the lifted conv's
# rank-changing view sits between, and a widened fork would give Vela a second full transpose of the output.
NARROWING_RANKS = (1,)


def narrowed_accumulator(c: ConvConfig, narrowed: int) -> str:
    """'' unless an INT32 consumer reads a conv's INT48 accumulator through an INT16 rescale (an a16w8 conv
    followed by an add, say). RewriteConvPass forks the accumulator to such consumers with one rescale; read
    through INT16 instead, it is rounded twice and clamped to the INT16 range, and the numbers move by an LSB
    at most on calibrated data, which the judge's tolerance must allow for the fake-quantized model's own
    rounding. So the graph is checked: one line naming how many conv ops it narrows."""
    if not narrowed or c.rank in NARROWING_RANKS:
        return ""
    return (
        f"{narrowed} conv accumulator(s) narrowed to INT16 and widened to INT32 again before their INT32 "
        "consumer; an a16w8 conv's INT32 consumers read the INT48 accumulator through one RESCALE"
    )
