"""The cases a run proves its environment with before it blames anything on the backend.

One plain conv per scheme family, right on every supported release and on main's trees (measured: smoke on
1.4.0 to 1.5.1 and on cff6f4dd32, its own core beside 1.4.1 and 1.5.1), and one canary that must be caught:
the trailing pad trimmed one row too far on a conv whose stride leaves a remainder, which every target's
checker refuses or gets wrong. A control that does not pass, or a canary that passes, means the harness or
this machine is broken (a reference model that returns zeros, a judge that accepts anything, an overlay that
did not take): the run stops with its own exit code, nothing blamed on the backend.
"""

from __future__ import annotations

CONTROL_SCHEMES = ("fp32", "fp16", "bf16", "a8w8", "a8w4", "a16w8")


def control(scheme: str) -> str:
    return f"conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_q{scheme}_dsnormal_cxnone"


CONTROLS = tuple(control(s) for s in CONTROL_SCHEMES)
PROOF_CANARY = "pad-off-by-one"
# (16 + 2 - 3) mod 2 = 1: RewriteConvPass trims the trailing pad; the canary trims one row more.
CANARY_CASES = {
    "int": "conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s2x2_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxnone",
    "float": "conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s2x2_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone",
}
