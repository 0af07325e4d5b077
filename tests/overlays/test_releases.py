"""Another release, for real: a fixed set under the ExecuTorch 1.4.1 overlay gives the outcomes measured there.

One case per TOSA conv op and scheme family, a context, control flow and dynamic shapes. On 1.4.1 the plain
cases pass with the speed-ups that apply there (skip_retrace cannot: 1.4.1 lacks the ExecuTorch helper it
calls); the others fail or are refused exactly as the per-release registry and rejections say, signature
included. Run as a user would: `sweep --executorch 1.4.1` on a batch file, recorded in a history.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.lowering

N1, N2 = "n1", "n2"
EXPECTED = {  # descriptor -> (outcome, the registry entry or rejection that explains it)
    "conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone": ("pass", ""),
    "conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxnone": ("pass", ""),
    "conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa16w8_dsnormal_cxnone": ("pass", ""),
    "conv1d_n1_ic6_oc6_g6_i16_k3_s1_p1_d1_b1_pmzeros_qa8w8_dsnormal_cxnone": ("pass", ""),  # DEPTHWISE_CONV2D
    "tconv2d_n1_ic8_oc4_g1_i8x8_k3x3_s2x2_p1x1_d1x1_op1x1_b1_pmzeros_qa8w8-pt_dsnormal_cxnone": ("pass", ""),
    "tconv2d_n1_ic8_oc4_g1_i8x8_k3x3_s2x2_p1x1_d1x1_op1x1_b1_pmzeros_qfp8e4m3_dsnormal_cxnone": ("pass", ""),
    "conv3d_n1_ic4_oc4_g1_i6x6x6_k3x3x3_s1x1x1_p1x1x1_d1x1x1_b1_pmzeros_qfp16_dsnormal_cxnone": ("pass", ""),
    "conv3d_n1_ic4_oc4_g1_i6x6x6_k3x3x3_s1x1x1_p1x1x1_d1x1x1_b1_pmzeros_qa8w4_dsnormal_cxnone": ("pass", ""),
    "tconv2d_n1_ic8_oc4_g1_i8x8_k3x3_s2x2_p1x1_d1x1_op1x1_b1_pmzeros_qbf16_dsnormal_cxnone": (
        "known_issue",
        "bf16-tconv-acc-type",
    ),
    "conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa16w8_dsnormal_cxadd": (
        "known_issue",
        "a16w8-add-rescale-beyond-shift-range",
    ),
    "conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxcond": (
        "known_issue",
        "int-cond-conv-weight-not-a-param",
    ),
    "conv2d_n2_ic4_oc8_g1_i16x17_k3x3_s2x2_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone_dyspatial": (
        "known_issue",
        "dynamic-symbolic-shape-operands-unmaterialized",
    ),
    "conv1d_n2_ic4_oc8_g1_i17_k3_s1_p1_d1_b1_pmzeros_qfp32_dsnormal_cxnone_dyspatial-tosa10": (
        "expected_rejection",
        "dynamic-needs-shape-extension-before-1.5.1",
    ),
}
SIGNATURES = {  # what each failure must say (its actual outcome and message), not only that it failed
    "a16w8-add-rescale-beyond-shift-range": ("runner_error", "OpRescale failure: apply_scale_32"),
    "int-cond-conv-weight-not-a-param": ("lowering_error", "unsupported param type"),
    "dynamic-symbolic-shape-operands-unmaterialized": ("lowering_error", "object has no attribute 'name'"),
    "bf16-tconv-acc-type": ("runner_error", "could not allocate op TRANSPOSE_CONV2D"),
    "dynamic-needs-shape-extension-before-1.5.1": ("not_delegated", "Node has symbolic shape"),
}


def test_a_fixed_set_on_executorch_1_4_1_gives_its_measured_outcomes(tmp_path):
    batch = tmp_path / "release-set.txt"
    batch.write_text("\n".join(EXPECTED) + "\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "sweep",
            "--tier",
            f"@{batch}",
            "--executorch",
            "1.4.1",
            "--results",
            str(tmp_path / "r.jsonl"),
            "--db",
            str(tmp_path / "h.sqlite"),
            "--no-progress",
            "-j",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "harness: executorch 1.4.1 (release" in done.stderr
    assert done.stderr.count("speed-ups off: skip_retrace in the workers") == 1
    results = {r["descriptor"]: r for r in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    assert set(results) == set(EXPECTED)
    for d, (outcome, why) in EXPECTED.items():
        r = results[d]
        assert r["versions"]["executorch"] == "1.4.1" and r["versions"]["harness-speedups"] == "off: skip_retrace"
        assert (r["outcome"], r["issue"] or r["rejection"]) == (outcome, why), (d, r["reason"])
        if why:
            actual, message = SIGNATURES[why]
            assert r["actual_outcome"] == actual and message in r["reason"], (d, r["reason"])
