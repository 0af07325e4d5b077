"""Pass bisection names the pass each canary patches, and nothing on a clean case.

Each canary's case is the first smoke case that catches it (tests/canary_cases.py;
tests/faults/test_canaries.py proves the tier catches every canary).
The expected culprit is the class named first in the canary's `branch`, so a
canary moved to another pass moves its expectation with it.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

from harness.config import parse_descriptor
from harness.faults.canaries import CANARIES
from tests.canary_cases import FIRST_CATCHING_SMOKE_CASE

pytestmark = pytest.mark.lowering


def bisect_passes(*args, **kwargs):
    """harness.bisect.passes.bisect_passes, imported when a test runs (it imports ExecuTorch's TOSA dialect)."""
    from harness.bisect.passes import bisect_passes as bisect

    return bisect(*args, **kwargs)


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
    """The known issue int-dynamic-pad-zero-point: InsertDynamicPaddingPass pads the INT input with 0, not its zero
    point."""
    b = bisect_passes(parse_descriptor("conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dyspatial_qa8w8"))
    assert b.culprit == "InsertDynamicPaddingPass"
    assert b.change["added"], b.change


def test_the_cli_prints_the_bisection_as_json_and_exits_1_on_a_culprit(capsys):
    from harness.cli.main import main

    code = main(["bisect", "passes", FIRST_CATCHING_SMOKE_CASE["inserted-bias"], "--canary", "inserted-bias", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["culprit"] == "RewriteConvPass" and out["canary"] == "inserted-bias"


def test_an_error_the_quantizer_added_is_not_blamed_on_a_pass(monkeypatch):
    """A quantizer fault (every activation observer's scale 32x too coarse: 3 levels where 8 bits had 256): the
    fake-quantized model is already below the SQNR floor against fp64 and the lowering follows it to the LSB.
    Every stage departs alike, so the pipeline's start would be named; the attribution names the quantizer."""
    from torchao.quantization.pt2e import observer

    from harness.run.execute import run_case

    fine = observer.HistogramObserver.calculate_qparams

    def coarse(self):
        scale, zero_point = fine(self)
        return scale * 32, torch.zeros_like(zero_point)

    monkeypatch.setattr(observer.HistogramObserver, "calculate_qparams", coarse)
    config = parse_descriptor("conv2d_ic4_oc8_i8x8_k3_qa8w8")
    r = run_case(config, 0)
    assert r.outcome.value == "mismatch" and "below the 14 dB floor" in r.reason, r.reason
    assert r.added_by == "quantization" and r.metrics["attribution"]["lowering"]["worst"] == 0
    assert r.next_step.startswith("the quantizer")
    b = bisect_passes(config)
    assert b.culprit == "quantization" and b.attribution["added_by"] == "quantization"
    assert not b.final.ok and b.stages[0].name == "<start>" and b.stages[0].ok is False
