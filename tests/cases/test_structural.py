"""The `structural` strategy: every class of a small 1D/2D forward conv, each axis alone and jointly."""

from __future__ import annotations

from harness.cases import structural
from harness.cases.classes import REMAINDER_KINDS, axis_classes, classes, remainder_kind
from harness.cases.tiers import cases_of
from harness.policy.schemes import GRAPH_SCHEMES


def test_every_setting_gets_every_remainder_kind_it_can_have():
    assert len(structural.settings()) == sum(k for k in range(1, 6)) * 4 * 3  # k 1-5, p 0..k-1, s 1-4, d 1-3
    for k, s, p, d in structural.settings():
        got = structural.sizes(k, s, p, d)
        possible = {remainder_kind(r, p) for r in range(s)}
        assert set(got) == possible and set(got) <= set(REMAINDER_KINDS)
        for kind, n in got.items():
            assert remainder_kind((n + 2 * p - d * (k - 1) - 1) % s, p) == kind and n + 2 * p >= d * (k - 1) + 1


def test_1d_and_each_2d_axis_alone_and_jointly():
    cases = structural.structural()
    one = {axis_classes(c)[0] for c in cases if c.rank == 1}
    plain = "k3s1p1d1:none"
    h_alone = {axis_classes(c)[0] for c in cases if c.rank == 2 and axis_classes(c)[1] == plain}
    w_alone = {axis_classes(c)[1] for c in cases if c.rank == 2 and axis_classes(c)[0] == plain}
    joint = {axis_classes(c)[0] for c in cases if c.rank == 2 and axis_classes(c)[0] == axis_classes(c)[1]}
    every = {
        f"k{k}s{s}p{p}d{d}:{kind}" for k, s, p, d in structural.settings() for kind in structural.sizes(k, s, p, d)
    }
    assert one == h_alone == w_alone == joint == every
    assert {c.scheme for c in cases} == set(GRAPH_SCHEMES)
    assert len(classes(cases)) >= len(cases) - 2  # one case per class (H/W alone meet at the plain setting)


def test_nightly_covers_every_structural_class():
    nightly = cases_of("nightly")
    assert set(classes(structural.structural())) <= set(classes(nightly))


def test_transposed_convs_are_as_diverse_each_axis_alone_and_jointly():
    cases = structural.transposed()
    every = {f"k{k}s{s}p{p}d1op{op}:-" for k, s, p, op in structural.transposed_settings()}
    assert len(every) == 150  # k 1-5, s 1-4, p 0..k-1, output padding 0..s-1
    plain = "k3s1p1d1op0:-"
    h_alone = {axis_classes(c)[0] for c in cases if axis_classes(c)[1] == plain}
    w_alone = {axis_classes(c)[1] for c in cases if axis_classes(c)[0] == plain}
    joint = {axis_classes(c)[0] for c in cases if axis_classes(c)[0] == axis_classes(c)[1]}
    assert h_alone == w_alone == joint == every
    turns = {(c.scheme, c.groups, c.bias) for c in cases}
    assert turns == {(s, g, b) for s in GRAPH_SCHEMES for g, b in ((1, True), (2, True), (1, False))}
    assert set(classes(cases)) <= set(classes(cases_of("nightly")))
