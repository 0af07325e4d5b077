"""The `network_convs` strategy: the convs real networks run, as the networks define them.

harness/cases/network_convs.json lists every conv of 13 networks of the class of
hardware the Arm backend targets (ImageNet mobile nets, the video ResNets,
the MLPerf Tiny models, a raw-audio keyword spotter) with the input size it
sees, extracted from the definitions in `harness.networks`
(`python -m harness.networks.convs --write`; tests/cases/test_network_convs.py keeps the
file true). The nightly tier takes the first conv of each structural class
(`harness.cases.classes`), the full tier every distinct conv; both in every
scheme the tiers put in graphs (their a8w4 twins follow with the tier's).
Torch-free: it only reads the file.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from functools import lru_cache
from pathlib import Path

from harness.cases.classes import structural_class
from harness.config import ConfigError, ConvConfig, parse_descriptor
from harness.policy.schemes import GRAPH_SCHEMES

DATA = Path(__file__).with_name("network_convs.json")


@lru_cache(maxsize=1)
def entries() -> tuple[dict, ...]:
    """Every conv of every network: {"network", "layer", "base"} (base: the descriptor without its scheme)."""
    return tuple(json.loads(DATA.read_text()))


def distinct(by: str = "class") -> list[dict]:
    """The first entry of each structural class (`by="class"`) or of each distinct conv (`"conv"`)."""
    if by not in ("class", "conv"):
        raise ValueError(f"invalid distinct-by {by!r}: 'class' or 'conv'")
    seen: set[str] = set()
    out = []
    for e in entries():
        key = e["base"] if by == "conv" else structural_class(parse_descriptor(f"{e['base']}_qfp32"))
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def cases(schemes=GRAPH_SCHEMES, by: str = "class") -> list[ConvConfig]:
    """The networks' convs, one per structural class (or every distinct one), in each scheme."""
    return [parse_descriptor(f"{e['base']}_q{s}") for e in distinct(by) for s in schemes]


def neighbourhoods() -> dict[str, dict]:
    """Each distinct neighbourhood the networks put around a conv that the grammar spells -> the smallest conv
    that has it (input elements, then order)."""

    out: dict[str, dict] = {}
    for e in entries():
        cx = e.get("context", "none")
        if cx == "none":
            continue
        c = parse_descriptor(f"{e['base']}_qfp32")
        size = c.in_channels * math.prod(c.input_size)
        if cx not in out or size < out[cx]["_size"]:
            out[cx] = {**e, "_size": size}
    return out


def unspelled() -> dict[str, int]:
    """What the grammar cannot spell after a network's conv, and why -> how many convs it stops."""

    return dict(Counter(e["unspelled"] for e in entries() if e.get("unspelled")))


def in_context(schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    """The networks' own neighbourhoods: each spelled one around its smallest conv, in each scheme."""
    out = []
    for cx, e in neighbourhoods().items():
        for s in schemes:
            try:
                out.append(parse_descriptor(f"{e['base']}_q{s}_cx{cx}"))
            except ConfigError as err:  # a shape the context refuses: say so, never drop it quietly
                raise ConfigError(f"{e['network']} {e['layer']}: {err}") from None
    return out
