"""Dynamic-shape cases: which dims are exported as `torch.export.Dim`, and the
sizes the lowered program then runs at.

A case with `dynamic != 'none'` is exported once with symbolic dims and run at
its nominal size plus bigger ones: the lowering must be right for every size
in the exported range, not just the example. The extra sizes are chosen to
land on other remainders of (input + padding - dilated kernel) mod stride,
which is what SizeAdjustInputPass and RewriteConvPass compute symbolically
(for `spatial-even`, the next even sizes: the sizes the model admits).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from harness.config import ConvConfig

MAX_BATCH = 4
NARROW_SPAN = 2  # spatial: sizes s .. s+2, few enough for the backend to enumerate
WIDE_SPAN = 512  # spatial-wide: s .. s+512, more than its 256-value exact-set analysis


def export_dims(c: ConvConfig, prefix: str = "") -> tuple[dict[int, torch.export.Dim], ...] | None:
    """`dynamic_shapes` for `torch.export.export` of the case's model (one input). `prefix` starts
    each dim's name: in a pack every case needs dims of its own (torch.export equates dims by name)."""
    if c.dynamic == "none":
        return None
    dims: dict[int, torch.export.Dim] = {}
    if c.dynamic_batch:
        dims[0] = torch.export.Dim(f"{prefix}batch", min=1, max=max(MAX_BATCH, c.batch + 1))
    if c.dynamic_spatial:
        span = WIDE_SPAN if c.dynamic == "spatial-wide" else NARROW_SPAN
        step = c.size_step
        for i, size in enumerate(c.input_size):
            if step == 1:
                dims[2 + i] = torch.export.Dim(f"{prefix}size{i}", min=size, max=size + span)
            else:  # a derived dim: only multiples of the step exist
                dims[2 + i] = step * torch.export.Dim(
                    f"{prefix}size{i}_over_{step}", min=size // step, max=size // step + span
                )
    return (dims,)


def run_configs(c: ConvConfig) -> tuple[ConvConfig, ...]:
    """The case at every size its program runs at, the nominal one first."""
    if c.dynamic == "none":
        return (c,)
    other_batch = c.batch + 1 if c.dynamic_batch else c.batch
    if not c.dynamic_spatial:
        return (c, replace(c, batch=other_batch))
    step = c.size_step
    return (  # harness.schedule.packing.run_count(c) is len() of this, without torch
        c,
        replace(c, batch=other_batch, input_size=tuple(s + step for s in c.input_size)),
        replace(c, input_size=tuple(s + 2 * step for s in c.input_size)),
    )
