"""The crossed strategy: every per-axis class meets every group kind and bias, at every position, in nightly."""

from __future__ import annotations

import functools
import itertools

import pytest

from harness.cases import crossed, structural
from harness.cases.crossed import GROUP_KINDS, coverage, group_label
from harness.cases.selection import select
from harness.config import parse_descriptor
from harness.policy.schemes import GRAPH_SCHEMES


def _missing(configs) -> int:
    return sum(r["expected"] - r["covered"] for r in coverage(configs))


def test_nightly_covers_the_whole_crossing_at_every_position():
    rows = coverage(select("nightly"))
    assert {(r["kind"], r["position"]) for r in rows} == {
        ("conv1d", "axis"),
        ("conv2d", "H"),
        ("conv2d", "W"),
        ("conv2d", "both"),
        ("tconv2d", "H"),
        ("tconv2d", "W"),
        ("tconv2d", "both"),
        ("conv3d", "D"),
        ("conv3d", "H"),
        ("conv3d", "W"),
        ("conv3d", "all"),
    }
    assert all(r["covered"] == r["expected"] > 1000 for r in rows), [r for r in rows if r["covered"] != r["expected"]]


def test_the_structural_strategy_alone_leaves_most_of_the_crossing_out():
    """The measure can fail: the axis-by-axis strategy (groups and bias taking turns) covers a small part."""
    before = structural.structural() + structural.transposed()
    total = sum(r["expected"] for r in coverage([]))
    assert _missing(before) > 0.8 * total and _missing(crossed.crossed()) == 0


@pytest.mark.parametrize(
    "descriptor",
    [
        "conv1d_ic4_oc4_i8_k2_b0",  # a conv1d with kernel 2 and no bias
        "conv2d_ic4_oc4_g4_i8x8_k2_p0",  # a 2x2 depthwise conv with bias
        "conv2d_ic4_oc4_i8x8_k3_p3",  # a 2D conv whose padding equals its kernel
        "conv3d_ic4_oc4_i5x5x5_k1_b0",  # 1x1x1
        "conv3d_ic4_oc4_i5x5x5_k2",  # 2x2x2
        "conv3d_ic4_oc4_g2_i5x5x5_k3_b0",  # grouped 3x3x3 without bias
    ],
)
def test_the_configs_a_user_found_missing_are_in_nightly_by_class(descriptor):
    from harness.cases.classes import structural_class

    c = parse_descriptor(f"{descriptor}_qfp32")
    assert structural_class(c) in _classes("nightly")
    assert structural_class(c) not in _classes("structural") or c.rank == 2 and c.groups == 1  # (dense: by turns)


@functools.cache
def _classes(of: str) -> frozenset:
    from harness.cases.classes import structural_class

    configs = select("nightly") if of == "nightly" else structural.structural() + structural.transposed()
    return frozenset(structural_class(n) for n in configs)


def test_every_group_kind_and_bias_meets_every_scheme_in_each_conv_kind():
    seen = {
        (f"{'t' if c.transposed else ''}conv{c.rank}d", group_label(c), int(c.bias), c.scheme)
        for c in crossed.crossed()
    }
    for kind, label, bias, scheme in itertools.product(
        ("conv1d", "conv2d", "tconv2d", "conv3d"),
        ("dense", "depthwise-m1", "depthwise-m2", "grouped"),
        (0, 1),
        GRAPH_SCHEMES,
    ):
        assert (kind, label, bias, scheme) in seen, (kind, label, bias, scheme)
    assert [
        group_label(parse_descriptor(f"conv2d_ic{i}_oc{o}_g{g}_i8_k3")) for i, o, g in GROUP_KINDS.values()
    ] == list(GROUP_KINDS), "the crossing's column names are the labels its configs get"


def test_smoke_keeps_one_case_of_every_family_of_the_crossing():
    families = {
        (f"{'t' if c.transposed else ''}conv{c.rank}d", group_label(c), int(c.bias))
        for c in select("smoke")
        if c.padding_mode == "zeros"
    }
    for kind, label, bias in itertools.product(
        ("conv1d", "conv2d", "tconv2d", "conv3d"), ("dense", "depthwise-m1", "depthwise-m2", "grouped"), (0, 1)
    ):
        assert (kind, label, bias) in families, (kind, label, bias)
    smoke = select("smoke")
    assert any(not isinstance(c.padding, str) and any(p == k for p, k in zip(c.padding, c.kernel)) for c in smoke)
    assert any(
        not isinstance(c.padding, str)
        and any(p == d * (k - 1) + 1 and d > 1 for p, k, d in zip(c.padding, c.kernel, c.dilation))
        for c in smoke
    )


def test_what_the_crossing_leaves_out_is_what_it_says():
    settings = crossed.axis_settings()
    assert not any(k == 1 and d > 1 for k, s, p, d, n in settings), "a 1-tap kernel is not dilated"
    assert max(p - (d * (k - 1) + 1) for k, s, p, d, n in settings) == 0, "no pad past the dilated extent"
    assert all(p < k for k, s, p, op in crossed.transposed_settings())
    assert max(p for k, s, p, op in crossed.transposed_settings()) == max(crossed.KERNELS) - 1
    assert all(c.dilation == (1, 1) for c in crossed.transposed())
