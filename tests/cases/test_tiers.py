"""Tiers and strategies: sizes, determinism, validity, coverage of the space."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import pytest

from harness.cases import strategies
from harness.cases.smoke_picks import SMOKE_FORKS, SMOKE_NEIGHBOURS, SMOKE_NESTED_COND, SMOKE_POOL_CASES, SMOKE_POOLS
from harness.cases.tiers import STATIC_TWINS_ONLY, cases_of
from harness.config import ConfigError, parse_descriptor
from harness.contexts.names import CONTEXT_NAMES
from harness.expectations.rejections import expected_rejection
from harness.policy.schemes import GRAPH_SCHEMES, MIRRORS, SCHEME_NAMES, SCHEMES, TIERED_SCHEMES
from harness.validation import DATASETS, NAMED_DATASETS


def test_tiers_are_nested_and_sized():
    smoke, nightly = cases_of("smoke"), cases_of("nightly")
    assert 300 <= len(smoke) <= 900  # its budget is time: <= 8 minutes with -n 2 (README: its time here)
    assert len(nightly) >= 1500
    assert {c.descriptor for c in smoke} <= {c.descriptor for c in nightly}
    assert len({c.descriptor for c in nightly}) == len(nightly)


def test_a_mirroring_scheme_runs_every_case_of_its_twin_and_changes_no_other():
    """a8w4 joined the tiers as a8w8's twin: the strategies draw what they drew before it, then the twins."""
    assert MIRRORS == {"a8w8": ("a8w4",), "a8w8-pt": ("a8w4-pt",)}
    for name in ("smoke", "nightly"):
        cases = cases_of(name)
        n = sum(1 for c in cases if not SCHEMES[c.scheme].mirrors)
        assert not any(SCHEMES[c.scheme].mirrors for c in cases[:n])
        assert [c.descriptor for c in cases[n:]] == [
            c.replace(scheme=m).descriptor
            for c in cases[:n]
            for m in MIRRORS.get(c.scheme, ())
            if name not in STATIC_TWINS_ONLY or c.dynamic == "none"
        ]


@pytest.mark.processes
def test_same_tier_same_list_in_another_process():
    """Built afresh there (no tier store), with another hash seed: the build, not a stored file, is deterministic."""
    code = (
        "from harness.cases.tiers import cases_of; print('\\n'.join(c.descriptor for c in cases_of('nightly', 5, 3)))"
    )
    env = {**os.environ, "HARNESS_NO_TIER_STORE": "1", "PYTHONHASHSEED": "12345"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    out = run.stdout.split()
    assert out == [c.descriptor for c in cases_of("nightly", 5, 3)]


def test_random_extension_depends_on_the_seed():
    base = len(cases_of("smoke"))
    a, b = cases_of("smoke", 20, 1), cases_of("smoke", 20, 2)
    assert len(a) == base + 20 and a[base:] != b[base:]
    with pytest.raises(ConfigError, match="--random -1"):
        cases_of("smoke", -1)


def test_smoke_touches_every_op_scheme_data_set_and_context():
    smoke = cases_of("smoke")
    assert {c.scheme for c in smoke} == set(TIERED_SCHEMES)
    assert {c.dataset for c in smoke} == set(DATASETS + NAMED_DATASETS)
    pool_cases = {parse_descriptor(b).context for b, _ in SMOKE_POOL_CASES}
    nested = {parse_descriptor(d).context for d in SMOKE_NESTED_COND}
    assert {c.context for c in smoke} == (
        set(CONTEXT_NAMES) | set(SMOKE_POOLS) | set(SMOKE_FORKS) | pool_cases | nested | set(SMOKE_NEIGHBOURS)
    )
    # and real networks' pools, SPPF, a nested cond, what networks put around a conv (each in fp32 and a8w8)
    for part in SMOKE_NEIGHBOURS:
        assert {c.scheme for c in smoke if c.context == part} >= {"fp32", "a8w8"}, part
    assert {(c.rank, c.transposed) for c in smoke} >= {(1, False), (2, False), (3, False), (2, True)}
    assert any(c.is_depthwise for c in smoke) and any(c.groups > 1 and not c.is_depthwise for c in smoke)


def test_every_descriptor_round_trips():
    """Every strategy's cases round-trip; of the crossing's 42k, which share one formatter, every 7th."""
    from harness.cases.crossed import crossed

    grid = {c.descriptor for c in crossed()}
    cases = [c for c in cases_of("nightly") if c.descriptor not in grid] + crossed()[::7]
    for c in cases:
        assert parse_descriptor(c.descriptor) == c


def test_pairwise_covers_every_achievable_pair():
    configs = strategies.pairwise()
    # Each context meets each scheme, and each shape family each context it can hold.
    pairs = {(c.context, c.scheme) for c in configs}
    assert pairs == {(cx, s) for cx in CONTEXT_NAMES for s in GRAPH_SCHEMES}  # fp8 takes no context
    assert {c.dataset for c in configs} == set(DATASETS)
    assert len(configs) < 400  # a covering array, not the product


def test_edge_cases_hit_both_size_adjust_paths_per_axis():
    edges = strategies.edge_cases(("fp32",))
    kinds = {c.size_adjustments() for c in edges if c.rank == 2 and c.size_adjustments()}
    for combo in (
        ("trim", "none"),
        ("none", "trim"),
        ("trim", "trim"),
        ("slice", "none"),
        ("none", "slice"),
        ("slice", "slice"),
    ):
        assert combo in kinds, combo


def test_rejection_cases_are_documented_rejections():
    # Each base is rejected in some scheme (a grouped tconv only with per-channel weights).
    for base in strategies.REJECTION_CASES:
        assert any(expected_rejection(parse_descriptor(f"{base}_q{s}")) for s in SCHEME_NAMES), base


def test_grid_is_valid_and_exhaustive_over_its_values():
    grid = strategies.grid(("fp32",))
    assert {(c.kernel[0], c.stride[0], c.padding[0], c.dilation[0]) for c in grid} >= {
        (k, s, p, 1) for k, s, p in itertools.product((1, 2, 3), (1, 2, 3), (0, 1, 2))
    }
