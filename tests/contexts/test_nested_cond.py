"""Constants that cross cond boundaries: a conv inside a cond inside a cond (quantized branch by branch at every
depth), and a silent conv in a cond, whose bias RewriteConvPass rebuilds at the int32 limit."""

from __future__ import annotations

import pytest

from harness.config import parse_descriptor

NESTED = "conv2d_ic8_oc8_i12x12_k3_p1_qa8w8_dsoffset_cxcond-nested"
SILENT = "conv2d_ic8_oc8_i12x12_k3_p1_qa8w8_dssilent_cxcond"


def _bias_mutants(pick) -> list[str]:
    from harness.faults.catalog import mutant_name, mutants_of

    found = [
        mutant_name("rewrite_conv_pass", m.index)
        for m in mutants_of("rewrite_conv_pass")
        if m.function.endswith("_rewrite_control_flow_bias") and pick(m)
    ]
    assert found, "the mutant catalog no longer has this control-flow bias mutant"
    return found


@pytest.mark.lowering
def test_a_nested_cond_takes_its_bias_zero_point_from_the_innermost_rescale():
    """PT2E's prepare_pt2e does not descend into cond branches; the harness prepares each branch, at every
    depth, and calibrates with each cond replaced by the branch its predicate picks. The outer false branch
    alone sees -(2|x| + 1), so the two boundaries' shared observers differ and the bias crosses them through
    two RESCALEs: RewriteConvPass's mutants that take the chain's zero point from its outer end, or reverse the
    chain, are caught on smoke's own seed."""
    from harness.run.execute import run_case

    c = parse_descriptor(NESTED)
    clean = run_case(c, 0, "tosa")
    assert clean.outcome.value == "known_issue" and clean.issue == "int-cond-constants-share-activation-observer"
    assert clean.reason.startswith("SQNR"), clean.reason  # the numbers match the fake-quant model
    mutants = _bias_mutants(
        lambda m: (
            (m.operator == "const" and "rescale_chain[-1]" in m.diff)
            or "+    rescale_chain = [bias_node, *reversed" in m.diff
        )
    )
    for name in mutants:
        r = run_case(c, 0, "tosa", canary=name)
        assert r.outcome.value == "mismatch" and "vs fake-quant" in r.reason, (name, r.reason)


@pytest.mark.lowering
def test_a_silent_conv_in_a_cond_saturates_its_int32_bias():
    """Zero input and weights: the bias scale is 2^-32 and the largest bias is 2^-10 past the int32 limit.
    RewriteConvPass clamps the rebuilt bias (within 1 LSB of the fake-quant model); without the upper clamp
    the bias wraps to the most negative int32."""
    from harness.run.execute import run_case

    c = parse_descriptor(SILENT)
    clean = run_case(c, 0, "tosa")
    assert clean.outcome.value == "known_issue" and clean.issue == "int-cond-constants-share-activation-observer"
    assert clean.reason.startswith("the conv's weight is quantized"), clean.reason  # the numbers passed
    (name,) = _bias_mutants(
        lambda m: (
            m.operator == "drop-arg"
            and "+    rewritten_bias = rewritten_bias.clamp(torch.iinfo(torch.int32).min)" in m.diff
        )
    )
    r = run_case(c, 0, "tosa", canary=name)
    assert r.outcome.value == "mismatch" and "vs fake-quant" in r.reason, r.reason
