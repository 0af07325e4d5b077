"""Pass bisection names the pass each canary patches, and nothing on a clean case.

Each canary's case is the first smoke case that catches it (measured with
the smoke tier; tests/test_canaries.py proves the tier catches every canary).
The expected culprit is the class named first in the canary's `branch`, so a
canary moved to another pass moves its expectation with it.
"""

from __future__ import annotations

import re

import pytest

from harness.bisect.passes import bisect_passes
from harness.cases.canaries import CANARIES
from harness.config import parse_descriptor

pytestmark = pytest.mark.lowering

FIRST_CATCHING_SMOKE_CASE = {
    "pad-off-by-one": "conv1d_n1_ic4_oc8_g1_i20_k3_s2_p1_d1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "depthwise-weight-layout": "conv2d_n1_ic4_oc8_g4_i12x12_k3x3_s2x2_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "per-channel-rescale": "conv1d_n1_ic4_oc8_g1_i20_k3_s2_p1_d1_b1_pmzeros_qa8w8_dsnormal_cxnone",
    "tconv-output-padding": "tconv2d_n1_ic8_oc4_g1_i8x8_k3x3_s2x2_p1x1_d1x1_op1x1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "conv1d-stride": "conv1d_n1_ic4_oc8_g1_i20_k3_s2_p1_d1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "int48-bias": "conv1d_n1_ic4_oc8_g1_i20_k3_s2_p1_d1_b1_pmzeros_qa16w8_dsnormal_cxnone",
    "inserted-bias": "conv2d_n1_ic8_oc8_g1_i10x10_k1x1_s1x1_p0x0_d1x1_b0_pmzeros_qfp32_dsnormal_cxnone",
    "grouped-slices": "conv2d_n1_ic8_oc12_g4_i10x10_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "slice-from-start": "conv2d_n1_ic8_oc8_g1_i16x16_k3x3_s2x2_p0x0_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "conv3d-weight-layout": "conv3d_n1_ic4_oc4_g1_i6x6x6_k3x3x3_s1x1x1_p1x1x1_d1x1x1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "fp8-bias": "conv1d_n1_ic4_oc8_g1_i20_k3_s2_p1_d1_b1_pmzeros_qfp8e4m3_dsnormal_cxnone",
}


def patched_pass(canary: str) -> str:
    return re.match(r"\w+", CANARIES[canary].branch).group(0)


def test_every_canary_has_its_case():
    assert set(FIRST_CATCHING_SMOKE_CASE) == set(CANARIES)


@pytest.mark.parametrize("name", list(CANARIES))
def test_pass_bisection_names_the_pass_each_canary_patches(name):
    b = bisect_passes(parse_descriptor(FIRST_CATCHING_SMOKE_CASE[name]), canary=name)
    assert b.final.ok is False, f"{name} no longer makes {b.descriptor} fail: {b.final.reason}"
    assert b.culprit == patched_pass(name), [(s.name, s.ok, s.reason) for s in b.stages]
    if b.after.index == -1:  # the lowering raised inside the culprit: nothing after it to judge
        assert not b.after.runnable and f"raised in {b.culprit}" in b.after.reason
        return
    # the stage before the culprit is within tolerance, the culprit's is not, and the diff shows what it changed
    assert b.before is not None and b.before.ok and b.after.ok is False
    if b.after.error is None:  # a wrong shape or a TOSA typing rule broken: said in words
        assert b.after.reason
    else:
        assert b.after.error > b.after.limit
    assert b.change["added"] or b.change["removed"] or b.change["changed"]

@pytest.mark.parametrize("name", ["depthwise-weight-layout", "conv1d-stride", "fp8-bias"])
def test_a_clean_case_runs_every_stage_eagerly_within_tolerance(name):
    b = bisect_passes(parse_descriptor(FIRST_CATCHING_SMOKE_CASE[name]))
    assert b.culprit == "" and b.final.ok
    assert len(b.stages) >= 7 and all(s.runnable and s.ok for s in b.stages), [(s.name, s.reason) for s in b.stages]


def test_a_real_dynamic_shape_bug_is_bisected_to_the_pass_that_pads_at_runtime():
    """The known issue int-dynamic-pad-zero-point: InsertDynamicPaddingPass pads the INT input with 0, not its zero point."""
    b = bisect_passes(parse_descriptor("conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dyspatial_qa8w8"))
    assert b.culprit == "InsertDynamicPaddingPass"
    assert b.change["added"], b.change

