"""A conv inside a cond inside a cond: quantized branch by branch at every depth, lowered, and judged."""

from __future__ import annotations

import pytest

from harness.config import parse_descriptor


@pytest.mark.lowering
def test_a_nested_cond_lowers_and_its_rescale_chain_order_is_observable():
    """PT2E's prepare_pt2e does not descend into cond branches; the harness prepares each branch, at every
    depth, and calibrates with each cond replaced by the branch its predicate picks. The conv's bias then
    crosses two boundaries, each with its own RESCALE: RewriteConvPass's mutants that take the chain's zero
    point from the wrong end are caught where the two boundaries' zero points differ (seed 3: 15 and 14)."""
    from harness.mutate.catalog import mutant_name, mutants_of
    from harness.run.execute import run_case

    c = parse_descriptor("conv2d_ic8_oc8_i12x12_k3_p1_qa8w8_dsoffset_cxcond-nested")
    assert run_case(c, 0, "tosa").outcome.value == "pass"
    assert run_case(c, 3, "tosa").outcome.value == "pass"
    (m,) = [m for m in mutants_of("rewrite_conv_pass") if m.function.endswith("_rewrite_control_flow_bias")
            and m.operator == "const" and "rescale_chain[-1]" in m.diff]
    r = run_case(c, 3, "tosa", canary=mutant_name("rewrite_conv_pass", m.index))
    assert r.outcome.value == "mismatch", r.reason
