"""The cross-axis array: every pair of per-axis facts across two axes, in nightly; one case per family in smoke."""

from __future__ import annotations

import itertools

from harness.cases import cross_axis, crossed
from harness.cases.selection import select
from harness.config import parse_descriptor
from harness.policy.schemes import GRAPH_SCHEMES

KINDS = ((2, False), (3, False), (2, True))


def test_nightly_holds_every_pair_of_facts_across_every_two_axes():
    """Nightly holds the arrays, and the arrays alone hold every pair (`list --classes` counts it over the tier)."""
    assert set(cross_axis.cases()) <= set(select("nightly"))
    rows = cross_axis.coverage(cross_axis.cases())
    assert {(r["kind"], r["axes"]) for r in rows} == {
        ("conv2d", "HxW"),
        ("conv3d", "DxH"),
        ("conv3d", "DxW"),
        ("conv3d", "HxW"),
        ("tconv2d", "HxW"),
    }
    assert all(r["covered"] == r["expected"] > 300 for r in rows), [r for r in rows if r["covered"] != r["expected"]]


def test_every_wanted_pair_is_held_by_a_row_built_for_it_and_the_array_is_small():
    """No pair was given up (no valid row could hold it); the array is a small fraction of the product of the
    axes' settings, and its extras (group kind, bias, scheme) meet every value of every axis fact too."""
    for rank, transposed in KINDS:
        rows = cross_axis.array(rank, transposed)
        assert not cross_axis._UNHELD[(rank, transposed, GRAPH_SCHEMES)]
        settings = cross_axis.transposed_axes() if transposed else cross_axis.forward_axes(rank)
        assert len(rows) < 150 < len(settings) ** 2
        names = cross_axis.AXES[rank]
        held = set()
        for c in rows:
            axes = [dict(f) for f in cross_axis.axis_facts(c)]
            extras = {"group": crossed.group_label(c), "bias": int(c.bias), "scheme": c.scheme}
            for (i, a), (j, b) in itertools.combinations(enumerate(axes), 2):
                held |= {((names[i], f, u), (names[j], g, v)) for f, u in a.items() for g, v in b.items()}
            held |= {
                ((e, x), (names[i], f, u)) for e, x in extras.items() for i, a in enumerate(axes) for f, u in a.items()
            }
        assert cross_axis.wanted(rank, transposed, GRAPH_SCHEMES) <= held


def test_the_crossing_never_lets_two_axes_differ_and_the_array_does():
    """The measure can fail: the crossing (one axis plain, or all alike) holds no pair of two different remainder
    kinds on H and W that are both adjusted; the array holds them all."""

    def remainder_pairs(configs) -> set:
        return {
            tuple(dict(f)["remainder"] for f in cross_axis.axis_facts(c))
            for c in configs
            if c.rank == 2 and not c.transposed and not isinstance(c.padding, str)
        }

    adjusted = ("trim1", "trim>1", "slice")
    differing = {(a, b) for a in adjusted for b in adjusted if a != b}
    assert not differing & remainder_pairs(crossed.crossed())
    assert differing <= remainder_pairs(cross_axis.array(2, False))


def test_smoke_holds_one_case_per_cross_axis_family():
    """Every pair of remainder kinds on every two axes (conv2d, conv3d), every pair of output-padding classes."""
    smoke = set(select("smoke"))
    picks = cross_axis.smoke_picks()
    assert set(picks) <= smoke
    for rank, transposed in KINDS:
        mine = [c for c in picks if (c.rank, c.transposed) == (rank, transposed)]
        every = {
            (i, j, cross_axis.family(c, i, j))
            for c in cross_axis.array(rank, transposed)
            for i, j in itertools.combinations(range(rank), 2)
        }
        held = {(i, j, cross_axis.family(c, i, j)) for c in mine for i, j in itertools.combinations(range(rank), 2)}
        assert held == every
        assert len(every) == (4 if transposed else 16 * len(list(itertools.combinations(range(rank), 2))))


def test_the_facts_are_read_back_from_any_config():
    c = parse_descriptor("conv2d_ic4_oc12_g4_i8x8_k3x3_s3x2_p0x1_qbf16")
    assert cross_axis.axis_facts(c) == (  # H: (8 - 3) % 3 = 2 rows past a pad of 0; W: (8 + 2 - 3) % 2 = 1 <= 1
        (("kernel", 3), ("stride", 3), ("dilation", 1), ("pad", "0"), ("remainder", "slice")),
        (("kernel", 3), ("stride", 2), ("dilation", 1), ("pad", "inside"), ("remainder", "trim1")),
    )
    assert crossed.group_label(c) == "depthwise-m3"
    t = parse_descriptor("tconv2d_ic4_oc4_g2_i5x5_k6x6_s3x2_p5x2_op2x1_qfp32")
    assert [dict(f)["output_padding"] for f in cross_axis.axis_facts(t)] == ["s-1", "s-1"]
