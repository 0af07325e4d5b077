"""Config shrinking: the search on synthetic failures (fast), then on canaries through the real backend.

The synthetic runner stands in for a case run: it fails with a chosen signature whenever a predicate over the
config holds, so the minimum is known in advance and the search's result and run count can be checked exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from harness.bisect.shrink import ShrinkError, Signature, candidates, complexity, shrink, signature, size
from harness.config import ConfigError, parse_descriptor
from harness.results.case_result import CaseResult, Outcome
from tests.canary_cases import FIRST_CATCHING_SMOKE_CASE, SMALLEST_FAILING_SMOKE_SIZE

START = parse_descriptor("conv2d_n2_ic8_oc16_g2_i12x10_k3x3_s2x2_p1x1_d1x1_b1_qa8w8_dsoffset_cxrelu")


@dataclass
class FakeRunner:
    """Fails (mismatch in the interior) whenever `fails(config)`; counts the runs."""

    fails: object
    calls: list = field(default_factory=list)

    def __call__(self, c):
        self.calls.append(c.descriptor)
        if self.fails(c):
            return CaseResult(
                c.descriptor,
                0,
                Outcome.MISMATCH,
                metrics={"where": {"border": 0, "interior": 3, "border_positions_share": 0.5}},
            )
        return CaseResult(c.descriptor, 0, Outcome.PASS)


def test_every_candidate_is_valid_simpler_and_one_step_away():
    seen = candidates(START)
    assert seen, "no candidate for a config with every field above its plainest value"
    for label, c in seen:
        assert complexity(c) < complexity(START), label
        assert c.descriptor != START.descriptor
        assert c.scheme == START.scheme, "the scheme is the fault's setting, never shrunk"


def test_a_grouped_fault_shrinks_to_its_smallest_config():
    runner = FakeRunner(lambda c: c.groups >= 2 and c.in_channels // c.groups >= 2)
    s = shrink(START, runner, max_runs=60)
    minimal = parse_descriptor(s.minimal)
    assert (minimal.groups, minimal.in_channels, minimal.out_channels) == (2, 4, 2)
    assert (minimal.rank, minimal.input_size, minimal.kernel, minimal.batch, minimal.bias) == (1, (1,), (1,), 1, False)
    assert (minimal.context, minimal.dataset) == ("none", "normal")
    assert s.runs == len(runner.calls) <= 60 and not s.exhausted
    assert s.minimal_size == size(minimal) < s.start_size


def test_the_result_is_one_minimal():
    """No single further simplification of the minimum keeps the failure."""
    fails = lambda c: c.kernel[-1] >= 3 and c.stride[-1] >= 2  # noqa: E731
    s = shrink(START, FakeRunner(fails), max_runs=200)
    assert not any(fails(c) for _, c in candidates(parse_descriptor(s.minimal)))


def test_the_budget_is_respected_and_reported():
    runner = FakeRunner(lambda c: True)
    s = shrink(START, runner, max_runs=5)
    assert s.runs == len(runner.calls) == 5 and s.exhausted


def test_a_green_case_has_nothing_to_shrink():
    with pytest.raises(ShrinkError, match="no failure to shrink"):
        shrink(START, FakeRunner(lambda c: False))


def test_a_bad_budget_is_a_usage_error():
    with pytest.raises(ConfigError, match="--max-runs=0"):
        shrink(START, FakeRunner(lambda c: True), max_runs=0)


def test_the_signature_keeps_outcome_stage_error_and_locus():
    def result(outcome, interior, share=0.5, stage="", error=""):
        return CaseResult(
            "d",
            0,
            outcome,
            stage=stage,
            error_type=error,
            metrics={"where": {"border": 1, "interior": interior, "border_positions_share": share}},
        )

    border, interior = signature(result(Outcome.MISMATCH, 0)), signature(result(Outcome.MISMATCH, 2))
    assert (border.locus, interior.locus) == ("border", "interior")
    assert not border.matches(interior)
    everywhere_border = signature(result(Outcome.MISMATCH, 0, share=1.0))
    assert everywhere_border.matches(interior) and everywhere_border.matches(border)
    crash = Signature("lowering_error", "lower", "RuntimeError")
    assert not crash.matches(Signature("lowering_error", "lower", "ValueError"))
    assert not crash.matches(Signature("runner_error", "run", "RunnerError"))


# One canary per kind of failure: a refused graph, a wrong shape, a wrong INT rescale, a grouped-conv pass;
# benchmarks/bench_shrink.py shrinks all of them.
SHRUNK_HERE = ("pad-off-by-one", "tconv-output-padding", "per-channel-rescale", "grouped-slices")


@pytest.mark.lowering
@pytest.mark.parametrize("canary", SHRUNK_HERE)
def test_a_canary_case_shrinks_within_60_runs_below_the_smallest_failing_smoke_case(canary):
    from harness.run.execute import run_case

    start = parse_descriptor(FIRST_CATCHING_SMOKE_CASE[canary])
    s = shrink(start, lambda c: run_case(c, 0, "tosa", canary=canary), max_runs=60)
    assert s.runs <= 60
    assert s.minimal_size <= SMALLEST_FAILING_SMOKE_SIZE[canary], (s.minimal, s.minimal_size)
    again = run_case(parse_descriptor(s.minimal), 0, "tosa", canary=canary)
    assert not again.green and s.signature.matches(signature(again))
    assert run_case(parse_descriptor(s.minimal), 0, "tosa").green, "the minimal case fails without the canary"
