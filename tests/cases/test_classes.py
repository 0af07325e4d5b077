"""Structural classes: what a conv is to the lowering, and what a tier covers."""

from __future__ import annotations

from harness.cases.classes import classes, group_kind, marginals, remainder_kind, structural_class
from harness.cases.tiers import cases_of
from harness.cli.main import main
from harness.config import parse_descriptor


def test_remainder_kinds_follow_the_backend_rule():
    assert [remainder_kind(r, p) for r, p in ((0, 0), (1, 1), (2, 2), (2, 1), (1, 0))] == [
        "none",
        "trim1",
        "trim>1",
        "slice",
        "slice",
    ]
    # (L + 2p - d(k-1) - 1) % s: 16 + 2 - 2 - 1 = 15, % 2 = 1 <= p=1 -> trim1 on both axes
    c = parse_descriptor("conv2d_ic8_oc8_i16x16_k3_s2_p1")
    assert structural_class(c) == "conv2d k3s2p1d1:trim1 k3s2p1d1:trim1 g1 b1"
    assert structural_class(parse_descriptor("conv2d_ic8_oc8_i16x15_k3_s2_p0")).startswith(
        "conv2d k3s2p0d1:slice k3s2p0d1:none"
    )


def test_group_kinds_and_transposed_axes():
    assert group_kind(parse_descriptor("conv2d_ic4_oc8_g4_i8x8_k3")) == "dw-m2"
    assert group_kind(parse_descriptor("conv2d_ic8_oc12_g4_i8x8_k3")) == "grouped-m3"
    t = parse_descriptor("tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1_b0")
    assert structural_class(t) == "tconv2d k3s2p1d1op1:- k3s2p1d1op1:- g1 b0"


def test_a_tier_reports_its_classes_and_nightly_covers_more_than_smoke(capsys):
    smoke, nightly = cases_of("smoke"), cases_of("nightly")
    assert len(classes(smoke)) < len(classes(nightly))
    assert set(classes(smoke)) <= set(classes(nightly))  # nightly contains smoke
    assert {"none", "trim1", "trim>1", "slice"} <= set(marginals(nightly)["conv2d"]["remainder"])
    assert main(["list", "--classes", "--tier", "smoke"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[len(classes(smoke))] == f"{len(classes(smoke))} structural classes over {len(smoke)} cases"
