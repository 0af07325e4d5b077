"""How far a chain of requantized convs may drift from the fake-quant model, read from the case's own data.

A correct INT lowering computes each conv exactly (integer accumulator) and requantizes it with TOSA's
RESCALE; the fake-quant model computes it in fp32 and rounds x / s half to even. The two codes differ only
where the fake-quant value sits within `slack` of a rounding boundary (a half-integer in LSB): its fp32
error ((KS + 2) * 2^-24 of the conv on |x|, |w|, |b|), RESCALE's multiplier (2^-31 relative, 2^-15 for an
INT48 accumulator's 16-bit one) and the tie rule. Such an element is "ambiguous": off by at most one.
A following conv turns its input's per-element drift E into at most P = conv(E * s_in, |w|) / s_out LSB
before rounding, so its codes are off by at most floor(P + slack) + 1 where P > 0, and where P is 0 by one
only if ambiguous itself. The worst-case rule (`harness.contexts.base.gain`) assumes every input element
off by one in the worst direction: 16-38 LSB on the composed cases, where the data show 0-2. This bound
is as sound and follows the elements that can actually drift.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from harness.contexts.base import gain
from harness.qparams import CONV_TARGETS, DQ_TENSOR, Q_TENSOR, ConvQParams

_ULP32 = 2.0**-24
_ATEN = torch.ops.aten
_CLAMPS = {
    _ATEN.relu.default,
    _ATEN.relu_.default,
    _ATEN.hardtanh.default,
    _ATEN.hardtanh_.default,
    _ATEN.clamp.default,
}  # 1-Lipschitz and elementwise: they pass a drift map through


@dataclass(frozen=True)
class ConvStage:
    """One conv of the fake-quant model as it ran on the case's input."""

    y: torch.Tensor  # its fp32 output, before its quantize
    bound: torch.Tensor  # the same conv on |x|, |w|, |b|, in float64
    w_abs: torch.Tensor  # |w| dequantized, float64
    ks: int  # its weight's element count: at least its dot-product length
    apply: object  # (x, w) -> the conv with the node's own stride, padding, groups, ..., without bias
    direct: bool  # its input is the previous conv's requantized output (through a clamp at most)


def conv_stages(module: torch.fx.GraphModule, inputs: tuple[torch.Tensor, ...]) -> list[ConvStage]:
    """Each conv of the converted model's main graph, in graph order, on `inputs`."""
    stages: list[ConvStage] = []
    convs: list[torch.fx.Node] = []

    def fed_by_previous(n: torch.fx.Node) -> bool:
        x = n.args[0]
        if not (convs and isinstance(x, torch.fx.Node) and x.target in DQ_TENSOR):
            return False
        q = x.args[0]
        if not (isinstance(q, torch.fx.Node) and q.target in Q_TENSOR):
            return False
        source = q.args[0]
        while isinstance(source, torch.fx.Node) and source.target in _CLAMPS:
            source = source.args[0]
        return source is convs[-1]

    class Capture(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if n.op == "call_function" and n.target in CONV_TARGETS:
                args, kwargs = self.fetch_args_kwargs_from_env(n)
                x, w, b, rest = args[0], args[1], args[2] if len(args) > 2 else None, args[3:]

                def apply(xx, ww, target=n.target, rest=rest, kwargs=kwargs):
                    return target(xx, ww, None, *rest, **kwargs)

                bound = n.target(
                    x.double().abs(), w.double().abs(), None if b is None else b.double().abs(), *rest, **kwargs
                )
                stages.append(ConvStage(out.detach(), bound, w.double().abs(), w.numel(), apply, fed_by_previous(n)))
                convs.append(n)
            return out

    with torch.no_grad():
        Capture(module).run(*inputs)
    return stages


def _slack(stage: ConvStage, q: ConvQParams) -> torch.Tensor:
    bits = 16 if q.output.dtype == "int16" else 32  # TOSA RESCALE's multiplier width for the accumulator
    return ((stage.ks + 2) * _ULP32 * stage.bound + stage.y.double().abs() * 2.0 ** -(bits - 1)) / q.output.scale


def _ambiguous(stage: ConvStage, q: ConvQParams, slack: torch.Tensor) -> torch.Tensor:
    v = stage.y.double() / q.output.scale
    return ((v - torch.floor(v) - 0.5).abs() <= slack).double()


def chain_drift(stages: list[ConvStage], convs: list[ConvQParams | None], last: int) -> float:
    """The most LSB by which conv `last`'s requantized output may differ from the fake-quant model's, each
    conv up to it feeding the next directly (as in a chain or a 1x1 conv before the conv under test)."""
    if len(stages) <= last or any(q is None or q.output is None for q in convs[: last + 1]):
        raise ValueError("a drift bound needs every conv up to the last one quantized and captured")
    drift = None
    for stage, q in zip(stages[: last + 1], convs[: last + 1]):
        slack = _slack(stage, q)
        ambiguous = _ambiguous(stage, q, slack)
        if drift is None:
            drift = ambiguous
            continue
        if stage.direct:
            with torch.no_grad():
                pushed = stage.apply(drift * q.input.scale, stage.w_abs) / q.output.scale
        else:  # a pad or another op between: every element may take the worst drift
            pushed = torch.full_like(slack, gain(q) * float(drift.max()))
        drift = torch.where(pushed > 0, torch.floor(pushed + slack) + 1, ambiguous)
    return float(drift.max())
