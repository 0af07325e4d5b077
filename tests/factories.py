"""What several test areas build the same way: a CaseResult as a run would record it."""

from __future__ import annotations

from harness.results.case_result import CaseResult, Outcome

DESCRIPTOR = "conv2d_n1_ic4_oc8_g1_i8x8_k3x3_s1x1_p0x0_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone"


def case_result(descriptor: str = DESCRIPTOR, outcome: Outcome = Outcome.PASS, seed: int = 0, **fields) -> CaseResult:
    """A result with only the fields a test names (the rest as CaseResult defaults them)."""
    return CaseResult(descriptor, seed, outcome, **fields)
