"""Measured facts about each canary on the smoke tier, shared by the bisection and shrinking tests.

FIRST_CATCHING_SMOKE_CASE: the first smoke case that fails with the canary
injected, in the order of tests/faults/test_canaries.py (cases reaching the faulty
branch first; for every canary it is also the first in plain smoke order).
SMALLEST_FAILING_SMOKE_SIZE: the smallest, by `harness.bisect.shrink.size`
(elements of input, weight and output), of all smoke cases that fail with the
canary. Both were measured with one smoke sweep per canary
(`python -m harness sweep --tier smoke --canary NAME`); benchmarks/bench_shrink.py
recomputes them (README, "Bisecting a wrong number").
"""

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

SMALLEST_FAILING_SMOKE_SIZE = {
    "pad-off-by-one": 256,
    "depthwise-weight-layout": 936,
    "per-channel-rescale": 210,
    "tconv-output-padding": 1824,
    "conv1d-stride": 256,
    "int48-bias": 210,
    "inserted-bias": 1664,
    "grouped-slices": 2216,
    "slice-from-start": 692,
    "conv3d-weight-layout": 692,
    "fp8-bias": 256,
}
