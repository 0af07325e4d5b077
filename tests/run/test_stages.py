"""The stages on their own: classification of what happened, one verdict from
several sizes, stage errors; and, lowering, the stages composed as a sweep
composes them."""

from __future__ import annotations

import numpy as np
import pytest

from harness.config import parse_descriptor
from harness.expectations.classify import Observation, classify
from harness.policy.targets import get_target
from harness.results.case_result import Outcome
from harness.run import stages
from harness.run.process import setup_process
from harness.runners.registry import get_runner

TCONV_DILATED = parse_descriptor("tconv2d_ic4_oc4_i6x6_k3_d2_qa8w8")
DYNAMIC_PAD = parse_descriptor("conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dyspatial_qa8w8")
RELU6 = parse_descriptor("conv2d_ic8_oc8_i12x12_k3_p1_qa8w8_cxrelu6")


def test_a_documented_refusal_is_an_expected_rejection():
    said = "convolution: Transpose convolutions with dilation are not supported."
    left = classify(
        TCONV_DILATED,
        Observation(
            Outcome.NOT_DELEGATED, f"left on CPU: aten.convolution.default; the partitioner: {said}", error=said
        ),
    )
    assert (left.outcome, left.rejection, left.actual_outcome) == (
        Outcome.EXPECTED_REJECTION,
        "tconv-dilation",
        "not_delegated",
    )
    silent = classify(TCONV_DILATED, Observation(Outcome.NOT_DELEGATED, "left on CPU: aten.convolution.default"))
    assert silent.outcome is Outcome.NOT_DELEGATED  # left on the CPU without the rule's reason: not that rejection
    error = "lower: ValueError: Transpose convolutions with dilation are not supported."
    raised = classify(TCONV_DILATED, Observation(Outcome.LOWERING_ERROR, error, stage="lower", error=error))
    assert (raised.outcome, raised.actual_outcome) == (Outcome.EXPECTED_REJECTION, "lowering_error")


def test_an_unclean_refusal_stays_a_failure():
    crash = classify(
        TCONV_DILATED,
        Observation(Outcome.LOWERING_ERROR, "lower: KeyError: 'x'", stage="lower", error="lower: KeyError: 'x'"),
    )
    assert crash.outcome is Outcome.LOWERING_ERROR and not crash.rejection
    runner = classify(
        TCONV_DILATED, Observation(Outcome.RUNNER_ERROR, "not supported", stage="run", error="not supported")
    )
    assert runner.outcome is Outcome.RUNNER_ERROR


def test_a_rejected_config_that_passes_is_stale():
    done = classify(TCONV_DILATED, Observation(Outcome.PASS, rule="int-exact"))
    assert done.outcome is Outcome.PASS and "expected rejection tconv-dilation did not happen" in done.stale


def test_the_registry_explains_only_its_signature():
    border = {"max_lsb": 2, "n_over": 3, "n_total": 1000, "sqnr_db": 30.0, "where": {"border": 12, "interior": 0}}
    known = classify(DYNAMIC_PAD, Observation(Outcome.MISMATCH, "vs integer-exact: ...", "int-exact", border))
    assert (known.outcome, known.issue, known.actual_outcome) == (
        Outcome.KNOWN_ISSUE,
        "int-dynamic-pad-zero-point",
        "mismatch",
    )
    inside = classify(
        DYNAMIC_PAD, Observation(Outcome.MISMATCH, "", "int-exact", {**border, "where": {"border": 1, "interior": 1}})
    )
    assert inside.outcome is Outcome.MISMATCH and not inside.issue


def test_a_strict_known_issue_that_passes_is_stale():
    fixed = classify(RELU6, Observation(Outcome.PASS, rule="int-fake-quant"))
    assert fixed.outcome is Outcome.PASS and fixed.issue == "int-relu6-not-delegated"
    assert "no longer reproduces" in fixed.stale
    # a non-strict entry (data-dependent) lets a pass be a pass
    assert not classify(DYNAMIC_PAD, Observation(Outcome.PASS, rule="int-exact")).stale


def test_one_verdict_from_several_sizes():
    from harness.judging.judge import Judgement
    from harness.run.stages import combine

    sizes = [DYNAMIC_PAD, DYNAMIC_PAD.replace(input_size=(17, 18), batch=3)]
    ok = Judgement(Outcome.PASS, "int-exact", "", {"max_lsb": 0})
    bad = Judgement(Outcome.MISMATCH, "int-exact", "3 element(s) off", {"max_lsb": 4})
    j = combine([(sizes[0], ok), (sizes[1], bad)])
    assert (j.outcome, j.reason, j.metrics["max_lsb"]) == (Outcome.MISMATCH, "at n3 i17x18: 3 element(s) off", 4)
    assert [s["outcome"] for s in j.metrics["sizes"]] == ["pass", "mismatch"]
    assert combine([(sizes[0], ok)]).metrics == {"max_lsb": 0}


def test_root_cause_unwraps_the_pass_managers_wrapper():
    from harness.run.stages import StageError, root_cause

    try:
        try:
            raise ValueError("Pad mode 'reflect' does not support symbolic shape yet.")
        except ValueError as inner:
            raise Exception("An error occurred when running the '_ExportedProgramGraphPassAdapter' pass") from inner
    except Exception as wrapped:
        assert str(root_cause(wrapped)).startswith("Pad mode 'reflect'")
        assert (
            str(StageError("lower", wrapped))
            == "lower: ValueError: Pad mode 'reflect' does not support symbolic shape yet."
        )
    lone = RuntimeError("no chain")
    assert root_cause(lone) is lone


@pytest.mark.lowering
def test_the_stages_composed_are_run_case():
    """What a bisector or a packer gets by calling the stages is what a sweep records."""
    from harness.policy.targets import get_target
    from harness.run import stages
    from harness.run.execute import run_case
    from harness.runners.registry import get_runner

    c = parse_descriptor("conv2d_ic4_oc8_g4_i12x12_k3_s2_p1_qa16w8")
    p = stages.prepare(c, 5, get_target("tosa"))
    artifact = stages.lower(p)
    output = stages.run(p, artifact, 0, get_runner("tosa-ref"))
    verdict, _ = stages.judge(p, artifact, 0, output)
    result = run_case(c, 5)
    assert (verdict.outcome, verdict.rule, verdict.metrics) == (
        result.outcome,
        result.rule,
        {k: v for k, v in result.metrics.items() if k != "qparams"},
    )
    assert list(artifact.tosa_ops) == result.tosa_ops and artifact.target == result.target == "tosa"


@pytest.mark.lowering
@pytest.mark.parametrize("descriptor", ["conv2d_ic8_oc8_i12x12_k3_p1_qa8w8", "conv2d_ic8_oc8_i12x12_k3_p1_qfp32"])
def test_a_second_executor_is_the_last_stage_of_the_attribution(descriptor):
    """Without the emulation stack here, a stand-in second executor: agreeing, it is a stage that changed nothing;
    giving NaN where the first gives a number, the case fails and names the executor as the stage that did."""
    from harness.run.evidence import Evidence
    from harness.run.execute import judged_observation

    setup_process()
    p = stages.prepare(parse_descriptor(descriptor), 0, get_target("tosa"))
    artifact = stages.lower(p)
    first = stages.run(p, artifact, 0, get_runner("tosa-ref"))
    agree = judged_observation(p, artifact, lambda i: first, {}, Evidence(), {}, second=lambda i: ("twin", first))
    assert agree.outcome is Outcome.PASS and agree.metrics["attribution"]["executor"]["worst"] == 0.0
    broken = first.clone()
    broken.view(-1)[3] = float("nan")
    o = judged_observation(p, artifact, lambda i: first, {}, Evidence(), {}, second=lambda i: ("twin", broken))
    a = o.metrics["attribution"]
    assert o.outcome is Outcome.MISMATCH and o.rule == "executors" and a["added_by"] == "executor"
    assert o.reason.startswith("executors disagree: tosa-ref and twin disagree on 1 element(s) where only one")
    assert a["executor"]["worst"] is None and a["executor"]["at"] == [int(i) for i in np.unravel_index(3, first.shape)]


@pytest.mark.lowering  # torch.cond in eager torch: Dynamo
def test_a_cond_case_runs_in_eager_whatever_ran_before_it_in_the_process(monkeypatch):
    """Dynamo compiles a second cond shape with symbolic sizes, where torch cannot run this strided conv: without
    a fresh Dynamo per control-flow case, the case was a harness error after another cond case, not alone."""
    setup_process()
    tosa = get_target("tosa")
    before = parse_descriptor("conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxcond")
    strided = parse_descriptor("conv2d_n1_ic4_oc8_g1_i16x17_k3x3_s2x2_p0x0_d1x1_b1_pmzeros_qfp32_dsnormal_cxcond")
    with monkeypatch.context() as m:
        m.setattr(stages, "fresh_dynamo", lambda model: None)
        stages.prepare(before, 0, tosa)
        with pytest.raises(stages.StageError, match=r"^build: RuntimeError: .*cond.s output stride is not a simple"):
            stages.prepare(strided, 0, tosa)
    stages.prepare(before, 0, tosa)
    assert stages.prepare(strided, 0, tosa).model.context.control_flow


@pytest.mark.lowering
def test_a_multiplier_halfway_between_two_is_the_backends_choice_either_way():
    """The 1.5.1 nightly case whose channel-3 scale is exactly halfway between two 16-bit multipliers: ExecuTorch
    rounds to even, and the integer-exact oracle accepts that conforming choice on that channel only."""
    from harness.run.execute import run_case

    r = run_case(parse_descriptor("conv1d_n1_ic4_oc4_g4_i7_k3_s4_p4_d2_b0_pmzeros_qa16w8_dsnormal_cxnone"), 0)
    assert (r.outcome, r.rule) == (Outcome.PASS, "int-exact"), r.reason
    assert r.metrics["rescale"]["tied_channels"] == [3] and r.metrics["max_lsb"] == 0
