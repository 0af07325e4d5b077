"""The `compositions` strategy: the context grammar (`harness.contexts.grammar`) in the nightly tier.

* `products`: every activation x every merge x (relu after the merge or not),
  the conv fed by its input, on a few bases (a 2D conv whose output matches
  its input, so every merge applies, and a 1D one), in every graph scheme.
* `pairwise`: every pair of values of every two slots of the grammar, and
  of each slot with the scheme and the base, in well-formed compositions
  that the base admits (covertable, as `strategies.pairwise`; a pair only
  ill-formed rows hold stays uncovered); the array of the grammar as it was
  before the neighbours of real networks joined it, then one of the whole.
"""

from __future__ import annotations

import random

from harness.cases.strategies import unique
from harness.config import ConfigError, ConvConfig, parse_descriptor
from harness.contexts.grammar import POOLS, SLOTS, GrammarError, parse, spell
from harness.policy.schemes import GRAPH_SCHEMES

PRODUCT_BASES = ("conv2d_ic8_oc8_i12x12_k3_p1", "conv1d_ic4_oc4_i16_k3_p1")
PAIRWISE_BASES = (
    "conv2d_ic8_oc8_i12x12_k3_p1",
    "conv2d_ic4_oc4_g4_i10x10_k3_p1",  # depthwise
    "conv1d_ic4_oc4_i16_k3_p1",
    "tconv2d_ic8_oc4_i5x5_k3_s2",
    "conv2d_ic4_oc8_i16x17_k3_s2",  # SizeAdjustInputPass slices it
    "conv2d_ic8_oc8_i16x16_k3_s2_p1",  # a trimmed pad
)
NONE = "-"  # a slot left empty


def _case(base: str, context: str, scheme: str) -> ConvConfig | None:
    try:
        return parse_descriptor(f"{base}_q{scheme}_cx{context}")
    except ConfigError:  # the base does not admit it (a residual add where shapes differ, a 1D pool)
        return None


def products(bases=PRODUCT_BASES, schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    """A merge that needs a pool before it (catpre) gets the first pool that keeps the size."""
    keeping = next(name for name, pool in POOLS.items() if pool.keeps_size)
    contexts = [
        spell(
            {
                k: v
                for k, v in (("act", a), ("pool", keeping if m == "catpre" else None), ("merge", m), ("after", r))
                if v
            }
        )
        for a in (None, *SLOTS["act"])
        for m in (None, *SLOTS["merge"])
        for r in ((None, *SLOTS["after"]) if m else (None,))
    ]
    cases = [_case(b, cx, s) for b in bases for cx in contexts for s in schemes]
    return unique(c for c in cases if c is not None)


def _row_context(row: dict) -> str:
    return spell({slot: row[slot] for slot in SLOTS if row.get(slot, NONE) != NONE})


def _valid(row: dict) -> bool:
    if any(slot not in row for slot in SLOTS):
        return True  # covertable also asks about partial rows
    try:
        parse(_row_context(row))
    except GrammarError:
        return False
    return "base" not in row or "scheme" not in row or _case(row["base"], _row_context(row), row["scheme"]) is not None


# The grammar's tokens before the neighbours of real networks joined it (silu, hardswish, ..., gap, pad-in, up-in,
# fpn): the array drawn over them stays as it was, so a nightly baseline keeps its cases and a registered issue
# the array reproduces keeps its case; a second array over the whole grammar covers the pairs the new tokens make.
SLOTS_BEFORE_NEIGHBOURS: dict[str, tuple[str, ...]] = {
    "feed": ("view-in", "permute-in", "conv-in"),
    "norm": ("bn",),
    "act": ("relu", "relu6", "hardtanh", "clamp", "sigmoid"),
    "pool": (
        "maxpool",
        "avgpool",
        "maxpool3p1",
        "maxpool3ceil",
        "avgpool2",
        "maxpool5p2",
        "avgpool2ceil",
        "avgpool5s3",
        "maxpool3s3p1",
        "maxpool2",
        "avgpool3s1p1",
    ),
    "merge": ("add", "addz", "cat", "catx", "mul", "catpre"),
    "after": ("relu",),
}


def pairwise(
    bases=PAIRWISE_BASES,
    schemes=GRAPH_SCHEMES,
    seed: int = 0,
    attempts: int = 400,
    slots: dict[str, tuple[str, ...]] = SLOTS,
) -> list[ConvConfig]:
    from covertable import make

    dims = {slot: [NONE, *tokens] for slot, tokens in slots.items()} | {"scheme": list(schemes), "base": list(bases)}
    rows = [r for r in make(dims, pre_filter=_valid) if len(r) == len(dims) and _valid(r)]
    names = list(dims)

    def pairs(row: dict) -> set[tuple]:
        return {(a, row[a], b, row[b]) for i, a in enumerate(names) for b in names[i + 1 :]}

    covered = set().union(*(pairs(r) for r in rows))
    rng = random.Random(seed)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for va in dims[a]:
                for vb in dims[b]:
                    if (a, va, b, vb) in covered:
                        continue
                    for _ in range(attempts):
                        row = {n: rng.choice(v) for n, v in dims.items()} | {a: va, b: vb}
                        if _valid(row):
                            rows.append(row)
                            covered |= pairs(row)
                            break
    return unique(c for c in (_case(r["base"], _row_context(r), r["scheme"]) for r in rows) if c is not None)


def compositions() -> list[ConvConfig]:
    return unique(products() + pairwise(slots=SLOTS_BEFORE_NEIGHBOURS) + pairwise())
