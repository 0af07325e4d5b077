"""A case's output digest covers every size it ran: a dynamic case's second size is compared bit for bit too."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.lowering

CASE = "conv2d_n2_ic4_oc8_g1_i16x17_k3x3_s2x2_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone_dybatch"


def test_a_change_at_the_second_size_only_changes_the_digest(monkeypatch):
    from harness.config import parse_descriptor
    from harness.run import stages
    from harness.run.execute import run_case

    config = parse_descriptor(CASE)
    plain = run_case(config)
    assert plain.outcome.value == "pass" and plain.output_sha256
    real = stages.run

    def nudged(p, artifact, index, runner, timings=None):
        out = real(p, artifact, index, runner, timings)
        if index == 1:  # the second size: one element one ulp off, far inside the float rule
            out = out.clone()
            flat = out.view(-1)
            flat[0] = flat[0].nextafter(flat[0] + 1)
        return out

    monkeypatch.setattr(stages, "run", nudged)
    changed = run_case(config)
    assert changed.outcome.value == "pass" and changed.output_sha256 != plain.output_sha256
