"""Structural classes of a conv: the facts the lowering branches on, per spatial axis.

A class is the rank, transposed or not, per axis the kernel, stride, padding,
dilation (and output padding of a transposed conv) and the padding remainder
kind, the group kind with its multiplier, and bias. The remainder kind is what
the backend does to make the strided windows fit (`ConvConfig.remainders`):
`none` (they fit), `trim1` / `trim>1` (RewriteConvPass trims 1 / more than 1 of
the trailing pad) or `slice` (SizeAdjustInputPass slices the input); `-` where
it does not apply (transposed, or padding given as 'same' / 'valid').
Channel counts, sizes, schemes and data do not make a class: they are what a
class is run with. `python -m harness list --classes` reports a tier's classes.
"""

from __future__ import annotations

import functools
from collections import Counter

from harness.config import ConvConfig

REMAINDER_KINDS = ("none", "trim1", "trim>1", "slice")


def remainder_kind(remainder: int, pad: int) -> str:
    if remainder == 0:
        return "none"
    if remainder <= pad:
        return "trim1" if remainder == 1 else "trim>1"
    return "slice"


def group_kind(c: ConvConfig) -> str:
    if c.groups == 1:
        return "g1"
    if c.is_depthwise:  # as RewriteConvPass decides: not transposed, rank 1 or 2, a whole multiplier
        return f"dw-m{c.depth_multiplier}"
    return f"grouped-m{c.out_channels // c.groups}"


@functools.cache
def axis_classes(c: ConvConfig) -> tuple[str, ...]:
    """Per spatial axis: k, s, p, d (and op for a transposed conv) and the remainder kind."""
    kinds = [remainder_kind(r, p) for r, p in c.remainders()] or ["-"] * c.rank
    out = []
    for i in range(c.rank):
        pad = c.padding if isinstance(c.padding, str) else c.padding[i]
        text = f"k{c.kernel[i]}s{c.stride[i]}p{pad}d{c.dilation[i]}"
        if c.transposed:
            text += f"op{c.output_padding[i]}"
        out.append(f"{text}:{kinds[i]}")
    return tuple(out)


@functools.cache
def structural_class(c: ConvConfig) -> str:
    return f"{'t' if c.transposed else ''}conv{c.rank}d {' '.join(axis_classes(c))} {group_kind(c)} b{int(c.bias)}"


def classes(configs: list[ConvConfig]) -> Counter:
    """Cases per structural class."""
    return Counter(structural_class(c) for c in configs)


def marginals(configs: list[ConvConfig]) -> dict[str, dict[str, list]]:
    """Per conv kind (e.g. 'conv2d', 'tconv1d'): the values each structural fact takes over the configs."""
    out: dict[str, dict[str, set]] = {}
    for c in configs:
        kind = out.setdefault(f"{'t' if c.transposed else ''}conv{c.rank}d", {})
        for axis in axis_classes(c):
            facts, remainder = axis.split(":")
            kind.setdefault("remainder", set()).add(remainder)
            kind.setdefault("axis (k,s,p,d)", set()).add(facts)
        kind.setdefault("kernel", set()).update(c.kernel)
        kind.setdefault("stride", set()).update(c.stride)
        kind.setdefault("dilation", set()).update(c.dilation)
        kind.setdefault("groups", set()).add(group_kind(c))
        kind.setdefault("bias", set()).add(int(c.bias))
    return {k: {f: sorted(v, key=str) for f, v in facts.items()} for k, facts in sorted(out.items())}
