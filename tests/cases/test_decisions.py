"""Each operand of the passes' arithmetic decisions alone tips one in smoke (MC/DC), and the measure can fail."""

from __future__ import annotations

from harness.cases.decisions import DECISIONS, tips
from harness.cases.selection import select
from harness.config import parse_descriptor


def test_smoke_shows_every_operand_that_can_tip_a_decision_tipping_it():
    rows = tips(select("smoke"))
    assert {(r["decision"], r["operand"]) for r in rows} == {(d.name, o) for d in DECISIONS for o in d.operands}
    missing = [r for r in rows if not r["pair"] and not r["cannot"]]
    assert not missing, missing
    for r in rows:  # each pair takes the decision differently, on some axis
        if r["pair"]:
            a, b = (parse_descriptor(d) for d in r["pair"])
            take = next(d for d in DECISIONS if d.name == r["decision"]).take
            assert any(take(a, axis) != take(b, axis) for axis in range(a.rank)), r


def test_a_tier_without_the_pairs_shows_none_and_an_impossible_pair_says_why():
    """The measure can fail: the crossing's plain-axis cases never differ in the input size alone."""
    only = [parse_descriptor("conv2d_ic4_oc4_i12x12_k3x3_s3x1_p1x1_qfp32")]
    assert all(r["pair"] is None for r in tips(only))
    both = only + [parse_descriptor("conv2d_ic4_oc4_i13x12_k3x3_s3x1_p1x1_qfp32")]
    found = {(r["decision"], r["operand"]): r["pair"] for r in tips(both)}
    assert found[("remainder", "input size")] and found[("output", "input size")]
    assert found[("remainder", "stride")] is None
    assert next(r for r in tips(both) if r["operand"] == "out channels")["cannot"]
