"""Group a sweep's cases into packs (harness/policy/packing.py says which and how many).

Runs in the sweep's parent, which never imports torch: decisions are made from
the config alone. Packs are formed in sweep order, per `pack_key`, so the same
selection always gives the same packs.
"""

from __future__ import annotations

from harness.config import CAPTURED, ConfigError, ConvConfig, elements
from harness.expectations.known_issues import known_issues
from harness.expectations.rejections import expected_rejection
from harness.policy.packing import PACK_ELEMENTS, PACKABLE_FAMILIES, PACKABLE_OUTCOMES, UNPACKABLE_CONTEXTS
from harness.policy.targets import get_target


def run_count(c: ConvConfig) -> int:
    """How many sizes the case's program runs at (`harness.build.dynamic.run_configs`, which imports torch)."""
    return 1 if c.dynamic == "none" else 3 if c.dynamic_spatial else 2


def pack_key(c: ConvConfig) -> tuple:
    """Cases that may share a pack: one scheme, one TOSA spec (shape extension or not), one number of sizes."""
    return c.scheme, c.dynamic != "none", c.shape_extension, run_count(c)


def alone_reason(c: ConvConfig, family: str) -> str:
    """Why `c` runs alone on a target of `family`; '' if it may be packed."""
    if family not in PACKABLE_FAMILIES:
        return f"target family {family} reports its compile for the whole program"
    if c.context in UNPACKABLE_CONTEXTS:
        return f"context {c.context}: control flow"
    if c.dataset == CAPTURED:
        return "captured data"
    if expected_rejection(c, family) is not None:
        return "a documented rejection"
    if any(set(k.outcomes) - PACKABLE_OUTCOMES for k in known_issues(c.descriptor, family)):
        return "a registered known issue that may stop its program"
    return ""


def check_pack_size(size: int) -> int:
    if size < 1:
        raise ConfigError(f"invalid --pack {size}: must be >= 1 (1 runs every case alone)")
    return size


def form_packs(configs: list[ConvConfig], target: str, size: int) -> list[tuple[ConvConfig, ...]]:
    """The sweep's tasks: packs of up to `size` packable cases of one `pack_key`, and every other case alone.

    Tasks come in the order of their first case, so a sweep's first results
    still arrive first. A pack also stops before its moved elements pass PACK_ELEMENTS.
    """
    family = get_target(target).family
    tasks: list[list[ConvConfig]] = []
    open_pack: dict[tuple, list[ConvConfig]] = {}
    for c in configs:
        if size == 1 or alone_reason(c, family):
            tasks.append([c])
            continue
        pack = open_pack.get(pack_key(c))
        if pack is None or len(pack) >= size or sum(map(elements, pack)) + elements(c) > PACK_ELEMENTS:
            pack = open_pack[pack_key(c)] = []
            tasks.append(pack)
        pack.append(c)
    return [tuple(t) for t in tasks]
