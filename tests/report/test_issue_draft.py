"""`python -m harness issue`: a bug report draft for a registered finding, and the draft's sections from facts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.report.issue_draft import IssueFacts, render, title

RESULT = {
    "descriptor": "conv1d_n1_ic4_oc4_g2_i9_k2_s2_p1_d1_b1_pmzeros_qa8w8_dsnormal_cxnone",
    "seed": 3,
    "target": "tosa",
    "actual_outcome": "mismatch",
    "stage": "",
    "reason": "vs int-exact: 7 element(s) off by more than 0 LSB (max 12) [a new failure: outside the signature of x]",
    "metrics": {"max_lsb": 12, "n_diff": 7, "n_total": 40, "sqnr_db": 9.5, "where": {"border_only": True}},
    "tosa_ops": ["CONV2D", "RESCALE"],
    "versions": {"torch": "2.13.0", "executorch": "1.5.1", "executorch-tree": "/src/et@0123456789ab"},
}


def test_the_draft_has_every_section_a_maintainer_reads_first():
    facts = IssueFacts(
        RESULT,
        minimal="conv1d_n1_ic4_oc2_g2_i1_k1_qa8w8",
        shrink_note="in 5 runs",
        culprit_pass="RewriteConvPass",
        script="print('repro')\n",
        script_files=("c.pt2", "c.data.pt"),
        entry={"id": "e", "reason": "because", "link": "x.py", "introduced_by": "a" * 40},
    )
    text = render(facts)
    assert title(facts) == "[Arm] conv1d a8w8: wrong output: vs int-exact: 7 element(s) off by more than 0 LSB (max 12)"
    for expected in (
        "## What happens",
        "**mismatch**",
        "12 LSB; 7 of 40",
        "9.5 dB",
        "| executorch-tree | /src/et@",
        "`conv1d_n1_ic4_oc2_g2_i1_k1_qa8w8` (in 5 runs)",
        "`RewriteConvPass`",
        f"[aaaaaaaaaaaa](https://github.com/pytorch/executorch/commit/{'a' * 40})",
        "entry `e`",
        "```python\nprint('repro')\n```",
        "--seed 3 --target tosa --executorch /src/et@0123456789ab",
    ):
        assert expected in text, expected
    assert "a new failure" not in text  # the harness's own bookkeeping is not the tracker's business


@pytest.mark.lowering
def test_issue_on_a_registered_finding_writes_its_mechanism_and_a_standalone_repro(tmp_path):
    out = tmp_path / "report" / "bf16.md"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "issue",
            "tconv2d_ic4_oc4_i6x6_k3_s2_p1_qbf16",
            "--out",
            str(out),
            "--max-runs",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    assert text.startswith("# [Arm] transposed conv2d bf16: ")
    assert "registry entry `bf16-tconv-acc-type`" in text and "op_tosa_transpose_conv2d.py" in text
    assert "not shrunk (--max-runs 0)" in text and "```python" in text
    assert (tmp_path / "report" / "bf16.py").exists() and (tmp_path / "report" / "bf16.pt2").exists()


@pytest.mark.processes
def test_a_bad_descriptor_is_refused_in_one_line(tmp_path):
    """Refused before any lowering, with exit 2, as every verb refuses bad input."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", "issue", "conv2d_nope", "--out", str(tmp_path / "x.md")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
