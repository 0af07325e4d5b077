"""The conv passes' arithmetic decisions, and which cases show each operand alone tipping one (MC/DC).

A fault that drops or swaps one operand of a formula (`a * b` -> `b`) changes a
decision only on cases where that operand alone moves it; a tier whose cases
never differ in that operand alone cannot see it (the deletion campaign of
issue 42 found exactly that). For each decision below and each operand of its
formula, `tips` looks for two cases of a tier that are the same config but for
that operand (on one axis) and take the decision differently: the pair that
shows the operand matters (modified condition/decision coverage).

* `remainder` (SizeAdjustInputPass, RewriteConvPass._adjust_pad_if_needed): per
  axis, r = (L + 2p - d(k-1) - 1) mod s against the pad p: none (r = 0), trim
  (0 < r <= p: the trailing pad is cut) or slice (r > p: the input is cut);
  operands the input size L, pad p, dilation d, kernel k and stride s.
* `depthwise` (RewriteConvPass._is_depthwise_conv): groups == in channels and the
  out channels a multiple of them; operands groups, in and out channels.
* `output` (the conv's output size on an axis, (L + 2p - d(k-1) - 1) // s + 1,
  which every reshape and slice after the conv reads): operands L, p, d, k, s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from harness.cases.classes import remainder_kind
from harness.config import ConvConfig

AXIS_OPERANDS = {
    "input size": "input_size",
    "pad": "padding",
    "dilation": "dilation",
    "kernel": "kernel",
    "stride": "stride",
}
CHANNEL_OPERANDS = {"groups": "groups", "in channels": "in_channels", "out channels": "out_channels"}


def _forward(c: ConvConfig) -> bool:
    return not c.transposed and not isinstance(c.padding, str) and c.dynamic == "none"


def remainder(c: ConvConfig, axis: int) -> str:
    """The remainder kind (harness.cases.classes), a trim of one row or more being one decision: trim."""
    kind = remainder_kind(*c.remainders()[axis])
    return "trim" if kind.startswith("trim") else kind


def output(c: ConvConfig, axis: int) -> int:
    return c.output_size()[axis]


def depthwise(c: ConvConfig, axis: int = 0) -> bool:
    return c.is_depthwise


@dataclasses.dataclass(frozen=True)
class Decision:
    name: str
    where: str  # the code that takes it
    take: Callable[[ConvConfig, int], object]
    operands: dict[str, str]  # operand -> the config field it is
    per_axis: bool


DECISIONS = (
    Decision("remainder", "SizeAdjustInputPass, RewriteConvPass._adjust_pad_if_needed", remainder, AXIS_OPERANDS, True),
    Decision("output", "every reshape and slice after the conv", output, AXIS_OPERANDS, True),
    Decision("depthwise", "RewriteConvPass._is_depthwise_conv", depthwise, CHANNEL_OPERANDS, False),
)


# (decision, operand) pairs no valid config can show, and why
CANNOT_TIP = {
    ("depthwise", "out channels"): "a valid conv's out channels are a multiple of its groups, so once groups equal "
    "the in channels the multiple test holds: the out channels cannot alone tip it",
}


def _without(c: ConvConfig, field: str, axis: int | None) -> tuple:
    """The config with one operand blanked: on one axis for a per-axis field, whole for a channel count."""
    values = dataclasses.asdict(c)
    if axis is None:
        values[field] = None
    else:
        values[field] = tuple(None if i == axis else v for i, v in enumerate(values[field]))
    return tuple(sorted((k, repr(v)) for k, v in values.items()))


def tips(configs: list[ConvConfig]) -> list[dict]:
    """Per decision and operand: a pair of the configs that differ in that operand alone (one axis) and take the
    decision differently, or None when the configs hold no such pair."""
    rows = []
    forward = [c for c in configs if _forward(c) and c.dataset == "normal"]
    for d in DECISIONS:
        for operand, field in d.operands.items():
            found = None
            axes = range(3) if d.per_axis else (None,)
            for axis in axes:
                groups: dict[tuple, dict] = {}
                for c in forward:
                    if axis is not None and axis >= c.rank:
                        continue
                    outcome = d.take(c, axis if axis is not None else 0)
                    seen = groups.setdefault(_without(c, field, axis), {})
                    other = next((x for o, x in seen.items() if o != outcome), None)
                    if other is not None:
                        found = (other.descriptor, c.descriptor)
                        break
                    seen.setdefault(outcome, c)
                if found:
                    break
            rows.append(
                {
                    "decision": d.name,
                    "where": d.where,
                    "operand": operand,
                    "pair": found,
                    "cannot": CANNOT_TIP.get((d.name, operand), ""),
                }
            )
    return rows
