"""The named tiers (smoke, nightly, full): fixed, ordered lists of cases.

A tier is a pure function of its name: the same name always gives the same
descriptors in the same order, in every process, so pytest ids and results
match between `-n 0` and `-n auto` and between runs.
"""

from __future__ import annotations

import functools
from pathlib import Path

from harness.cases import compositions, cross_axis, crossed, network_convs, strategies, structural, tier_store
from harness.cases.smoke_picks import (
    SMOKE_A16W8_CONTEXTS,
    SMOKE_BASES,
    SMOKE_CROSSED,
    SMOKE_DATASET_BASES,
    SMOKE_DECISION_TIPS,
    SMOKE_DYNAMIC_BASES,
    SMOKE_EVEN_BASES,
    SMOKE_FORKS,
    SMOKE_FP8_BASES,
    SMOKE_GROUPED,
    SMOKE_NEIGHBOURS,
    SMOKE_NESTED_COND,
    SMOKE_OPERAND_TIPS,
    SMOKE_POOL_CASES,
    SMOKE_POOLS,
    SMOKE_REJECTIONS,
    SMOKE_SILENT,
    SMOKE_SLICE_CASES,
    SMOKE_STRUCTURAL_BASES,
    SMOKE_STRUCTURAL_SCHEMES,
    SMOKE_TOSA10_BASES,
    SMOKE_TRIM_AFTER_OP,
)
from harness.config import ConfigError, ConvConfig, parse_descriptor
from harness.contexts.names import CONTEXT_NAMES
from harness.policy.schemes import GRAPH_SCHEMES, SCHEMES
from harness.policy.targets import DEFAULT_TARGET, Target, check_case, get_target
from harness.validation import DATASETS

# Every graph context in every scheme, around a conv whose output shape
# equals its input shape (so residual adds and 3x3/2 pooling apply).
CONTEXT_BASES = ("conv2d_ic8_oc8_i12x12_k3_p1",)
# More bases for contexts in the nightly tier: depthwise, 1D, transposed, sliced.
NIGHTLY_CONTEXT_BASES = (
    "conv2d_ic4_oc4_g4_i10x10_k3_p1",
    "conv1d_ic4_oc4_i16_k3_p1",
    "tconv2d_ic8_oc4_i5x5_k3_s2",
    "conv2d_ic4_oc8_i16x17_k3_s2",
)


def _contexts(bases, schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    out = []
    for b in bases:
        for cx in CONTEXT_NAMES:
            for s in schemes:
                try:
                    out.append(parse_descriptor(f"{b}_q{s}_cx{cx}"))
                except ConfigError:  # e.g. a residual add where shapes differ
                    pass
    return out


def smoke() -> list[ConvConfig]:
    """CI tier: every TOSA conv op, scheme, data set and context."""
    cases = [parse_descriptor(f"{b}_q{s}") for b in SMOKE_BASES for s in GRAPH_SCHEMES]
    cases += [
        parse_descriptor(f"{b}_q{s}_ds{d}")
        for b in SMOKE_DATASET_BASES
        for d in DATASETS
        if d != "normal"
        for s in GRAPH_SCHEMES
    ]
    cases += [c for c in _contexts(CONTEXT_BASES) if c.context != "none"]
    cases += [parse_descriptor(d) for d in SMOKE_REJECTIONS]
    cases += strategies.fp8_cases(SMOKE_FP8_BASES, ("normal", "exact"))
    cases += strategies.dynamic_cases(bases=SMOKE_DYNAMIC_BASES, kinds=("spatial", "all"))
    cases += strategies.dynamic_cases(bases=SMOKE_TOSA10_BASES, kinds=("spatial-tosa10",))
    cases += strategies.dynamic_cases(bases=SMOKE_EVEN_BASES, kinds=("spatial-even-tosa10",))
    cases += [parse_descriptor(f"{b}_q{s}") for b in SMOKE_STRUCTURAL_BASES for s in SMOKE_STRUCTURAL_SCHEMES]
    cases += [parse_descriptor(f"{b}_q{s}") for b, s in SMOKE_CROSSED]
    cases += [parse_descriptor(d) for d in SMOKE_GROUPED + SMOKE_A16W8_CONTEXTS + SMOKE_NESTED_COND + SMOKE_SILENT]
    cases += [
        parse_descriptor(f"{b}_q{s}_cx{p}")
        for b in CONTEXT_BASES
        for p in SMOKE_POOLS + SMOKE_FORKS + SMOKE_NEIGHBOURS
        for s in SMOKE_STRUCTURAL_SCHEMES
    ]
    cases += [
        parse_descriptor(f"{b}_q{s}" + (f"_dy{k}" if k else ""))
        for b, k in SMOKE_POOL_CASES + SMOKE_SLICE_CASES
        for s in SMOKE_STRUCTURAL_SCHEMES
    ]
    cases += [parse_descriptor(f"{b}_q{s}") for b in SMOKE_TRIM_AFTER_OP for s in SMOKE_STRUCTURAL_SCHEMES]
    cases += [parse_descriptor(f"{b}_q{s}") for b in SMOKE_OPERAND_TIPS for s in SMOKE_STRUCTURAL_SCHEMES]
    cases += [parse_descriptor(f"{b}_q{s}") for b in SMOKE_DECISION_TIPS for s in SMOKE_STRUCTURAL_SCHEMES]
    cases += cross_axis.smoke_picks()  # one case per cross-axis family
    return cases


def nightly() -> list[ConvConfig]:
    """Smoke plus every strategy (`_nightly`, computed once a process: full extends it)."""
    return list(_nightly())


@functools.lru_cache(maxsize=1)
def _nightly() -> tuple[ConvConfig, ...]:
    """Smoke plus every strategy: edge cases and rejections in every scheme,
    the grid, the pairwise covering array, contexts on more bases, dynamic
    shapes on every dynamic base, 400 seeded random cases, even-size dynamic
    dims, the edge cases, data sets and rejections in fp8, one conv of real
    networks per structural class and each network's neighbourhoods of a
    conv the grammar spells around its smallest conv (harness.cases.network_convs), every class
    of a small 1D/2D forward and 2D transposed conv (harness.cases.structural),
    the context grammar: every activation x merge, pairwise over the
    rest (harness.cases.compositions), and every per-axis class crossed with
    every group kind and bias, on each axis alone and jointly, 1D, 2D,
    transposed 2D and 3D (harness.cases.crossed), and the axes of one conv in
    different classes at once: every pair of per-axis facts across two axes,
    a covering array (harness.cases.cross_axis)."""
    return tuple(
        smoke()
        + strategies.edge_cases()
        + strategies.rejection_cases()
        + strategies.grid()
        + strategies.pairwise()
        + _contexts(NIGHTLY_CONTEXT_BASES)
        + strategies.dynamic_cases()
        + strategies.dynamic_cases(bases=strategies.DYNAMIC_TOSA10_BASES, kinds=strategies.DYNAMIC_TOSA10_KINDS)
        + strategies.random_cases(400, seed=0)
        + strategies.dynamic_cases(bases=strategies.DYNAMIC_EVEN_BASES, kinds=strategies.DYNAMIC_EVEN_KINDS)
        + strategies.fp8_cases()
        + strategies.fp8_cases(SMOKE_DATASET_BASES, DATASETS)
        + strategies.fp8_cases(strategies.REJECTION_CASES)
        + network_convs.cases()
        + network_convs.in_context()
        + structural.structural()
        + structural.transposed()
        + compositions.compositions()
        + crossed.crossed()
        + cross_axis.cases()
    )


def full() -> list[ConvConfig]:
    """Everything: nightly, every context on every edge base, the grid in every
    scheme, 2,000 random cases, every distinct conv of the real networks."""
    return (
        nightly()
        + _contexts(strategies.EDGE_BASES)
        + strategies.grid(GRAPH_SCHEMES)
        + strategies.random_cases(2000, seed=1)
        + network_convs.cases(by="conv")
    )


BY_NAME = {"smoke": smoke, "nightly": nightly, "full": full}
# Tiers whose mirrored-scheme twins (a8w4 of each a8w8 case) are static only: the dynamic-shape path does
# not depend on the weights' bit width (smoke: 16 twins at 1-2.5 s each alone; nightly runs them all).
STATIC_TWINS_ONLY = ("smoke",)


def ethos_u(name: str, target: Target) -> list[ConvConfig]:
    """An Ethos-U target's tiers, in the INT schemes it runs, static (and without control flow where it has
    none). Smoke: one base per branch of the conv passes (what the canaries reach) and the target's
    documented limits, at each limit and one past it. Nightly: every edge case, rejection, data set, the
    contexts, every activation x merge of the context grammar on the 2D base (Vela compiles each fused
    chain its own way), the grid, 400 random cases. Full: every context on every edge base, the grid in
    every scheme."""
    schemes = tuple(s for s in target.schemes if not SCHEMES[s].mirrors)  # mirrors follow in cases_of()
    cases = [parse_descriptor(f"{b}_q{s}") for b in SMOKE_BASES for s in schemes]
    cases += strategies.ethos_u_limit_cases()
    if name in ("nightly", "full"):
        cases += strategies.edge_cases(schemes) + strategies.rejection_cases(schemes)
        cases += [parse_descriptor(f"{b}_q{s}_ds{d}") for b in SMOKE_DATASET_BASES for d in DATASETS for s in schemes]
        cases += _contexts(CONTEXT_BASES + NIGHTLY_CONTEXT_BASES, schemes)
        cases += compositions.products(compositions.PRODUCT_BASES[:1], schemes)
        cases += strategies.grid(("a8w8",)) + strategies.random_cases(400, seed=0)
    if name == "full":
        cases += _contexts(strategies.EDGE_BASES, schemes) + strategies.grid(schemes)
    return [c for c in cases if _is_case_of(target, c)]


def _is_case_of(target: Target, c: ConvConfig) -> bool:
    try:
        check_case(target, c)
    except ConfigError:
        return False
    return True


def listed(path: str) -> list[ConvConfig]:
    """The cases a batch file lists: one descriptor per line ('#' starts a comment); ConfigError names a bad line."""

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"invalid --tier @{path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    out = []
    for number, line in enumerate(lines, 1):
        text = line.split("#")[0].strip()
        if text:
            try:
                out.append(parse_descriptor(text))
            except ConfigError as e:
                raise ConfigError(f"invalid --tier @{path} line {number}: {e}") from None
    if not out:
        raise ConfigError(f"invalid --tier @{path}: it lists no case")
    return out


@functools.cache
def _stored(name: str, target: str) -> tuple[ConvConfig, ...]:
    """The tier's own cases and their mirrored twins, once a process (the configs are frozen), read back from
    the tier store when its sources are unchanged (`harness.cases.tier_store`)."""
    return tier_store.stored(name, target, lambda: _built(name, target))


def _built(name: str, target: str) -> tuple[ConvConfig, ...]:
    t = get_target(target)
    # the generic tiers for a TOSA-profile target (tosa, vgf), as far as the target takes each case
    cases = [c for c in BY_NAME[name]() if _is_case_of(t, c)] if t.backend != "ethos_u" else ethos_u(name, t)
    twins = [c for c in strategies.mirrored(cases) if _is_case_of(t, c)]  # after the tier: it stays as it was
    if name in STATIC_TWINS_ONLY:
        twins = [c for c in twins if c.dynamic == "none"]
    return tuple(cases + twins)


def cases_of(name: str, random: int = 0, seed: int = 0, target: str = DEFAULT_TARGET) -> list[ConvConfig]:
    """The cases of tier `name` for `target`, each once, in a fixed order; `random` more
    seeded random cases appended (those the target takes). `@FILE` names a batch file of descriptors
    instead of a tier. ConfigError for an unknown name."""
    if name.startswith("@"):
        t = get_target(target)
        return strategies.unique([c for c in listed(name[1:]) if _is_case_of(t, c)])
    if name not in BY_NAME:
        raise ConfigError(f"unknown tier {name!r}; known tiers: {', '.join(BY_NAME)}, or @FILE (a batch file)")
    if random < 0:
        raise ConfigError(f"invalid --random {random}: must be >= 0")
    t = get_target(target)
    cases = list(_stored(name, t.name))
    if random:
        cases += [c for c in strategies.random_cases(random, seed=1000 + seed) if _is_case_of(t, c)]
    return strategies.unique(cases)
