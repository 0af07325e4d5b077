"""No expectation matches on its outcome alone, and a registered case that fails another way is a new failure."""

from __future__ import annotations

import pytest

from harness.config import parse_descriptor
from harness.expectations.applies import Backend, holds
from harness.expectations.classify import Observation, classify
from harness.expectations.known_issues import ERROR_OUTCOMES, registry
from harness.expectations.rejections import REJECTIONS
from harness.results.case_result import Outcome

UNRELATED = (
    "lower: RuntimeError: something else went wrong in a pass",
    "left on CPU: aten.convolution.default; the partitioner: convolution: some other reason",
    "reference model refused the graph: an unrelated ERROR_IF",
)


@pytest.mark.parametrize("issue", registry(), ids=lambda i: i.id)
def test_every_registry_entry_has_a_signature_for_each_outcome(issue):
    for outcome in issue.outcomes:
        pattern = issue.error_for(outcome)
        if outcome in ERROR_OUTCOMES:
            assert pattern is not None, f"{issue.id}: {outcome} without an error pattern"
        if pattern is not None:
            assert not any(pattern.search(text) for text in UNRELATED), (
                f"{issue.id}: {pattern.pattern} matches anything"
            )
        if outcome == "mismatch":
            b = issue.mismatch
            assert b is not None and (b.max_lsb is not None or b.max_err is not None or b.replay) and b.max_share <= 1
            assert "PROVISIONAL" not in b.measured and len(b.measured) > 20, (
                f"{issue.id}: say what the bounds come from"
            )
    assert str(issue.holds).startswith("executorch ")


@pytest.mark.parametrize("rule", REJECTIONS, ids=lambda r: r.name)
def test_every_rejection_names_its_message_and_releases(rule):
    assert rule.error_pattern and not any(rule.matches_error(text) for text in UNRELATED), rule.name
    assert rule.holds(Backend("1.5.1")) or rule.holds(Backend("1.4.1"))


def _case(descriptor: str):
    return parse_descriptor(descriptor)


def _issue(issue_id: str):
    return next(i for i in registry() if i.id == issue_id)


def test_a_registered_crash_with_another_message_is_a_new_failure():
    c = _case("tconv2d_ic4_oc8_g2_i6x6_k3_qa8w8-pt_cxbn")
    issue = _issue("bn-fold-grouped-tconv")
    assert issue.matches(c.descriptor, "tosa", Backend("1.5.1"))
    message = "quantize: RuntimeError: The size of tensor a (2) must match the size of tensor b (8)"
    ok = classify(
        c, Observation(Outcome.LOWERING_ERROR, message, stage="quantize", error=message), "tosa", Backend("1.5.1")
    )
    assert (ok.outcome, ok.issue) == (Outcome.KNOWN_ISSUE, "bn-fold-grouped-tconv")
    other = "quantize: KeyError: 'bias'"
    new = classify(
        c, Observation(Outcome.LOWERING_ERROR, other, stage="quantize", error=other), "tosa", Backend("1.5.1")
    )
    assert new.outcome is Outcome.LOWERING_ERROR and new.issue == ""
    assert new.reason == f"{other} [a new failure: outside the signature of bn-fold-grouped-tconv]"


def test_a_registered_mismatch_beyond_its_bounds_is_a_new_failure():
    issue = _issue("int32-bias-quantize-wraps")
    c = _case("conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dssilent")
    b = issue.mismatch
    said = "SQNR 0 dB against fp32 is below the 14 dB floor"
    inside = {
        "max_lsb": b.max_lsb,
        "n_over": int(b.max_share * 1000),
        "n_total": 1000,
        "sqnr_db": (b.min_sqnr_db or 0) + 1,
        "where": {"border": 3, "interior": 7},
    }
    seen = Observation(Outcome.MISMATCH, said, metrics=inside)
    assert classify(c, seen, "tosa", Backend("1.5.1")).issue == issue.id
    for worse in (
        {"max_lsb": b.max_lsb + 1},
        {"n_over": int(b.max_share * 1000) + 1},
        {"sqnr_db": (b.min_sqnr_db if b.min_sqnr_db is not None else 0) - 1},
    ):
        if "sqnr_db" in worse and b.min_sqnr_db is None:
            continue
        got = classify(c, Observation(Outcome.MISMATCH, said, metrics={**inside, **worse}), "tosa", Backend("1.5.1"))
        assert got.outcome is Outcome.MISMATCH and "a new failure" in got.reason, worse


def test_a_replayed_mismatch_is_explained_only_where_the_output_is_the_mechanisms():
    issue = _issue("int-fused-relu-shared-qparams")
    c = _case("conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxrelu-cat")
    name = issue.mismatch.replay
    for fit, expected in ((True, Outcome.KNOWN_ISSUE), (False, Outcome.MISMATCH)):
        metrics = {"max_lsb": 94, "replays": {name: {"max_lsb": 0 if fit else 5, "fits": fit}}}
        got = classify(
            c, Observation(Outcome.MISMATCH, "vs fake-quant: ...", metrics=metrics), "tosa", Backend("1.5.1")
        )
        assert got.outcome is expected, got.reason


def test_a_border_only_mismatch_inside_the_image_is_a_new_failure():
    issue = _issue("int-dynamic-pad-zero-point")
    assert issue.mismatch.locus == "border"
    c = _case("conv2d_n2_ic8_oc8_i12x12_k3_s2_p1_dyspatial_qa8w8")
    metrics = {"max_lsb": 1, "n_over": 1, "n_total": 1000, "sqnr_db": 40.0}
    border = classify(
        c,
        Observation(Outcome.MISMATCH, "m", metrics={**metrics, "where": {"border": 4, "interior": 0}}),
        "tosa",
        Backend("1.5.1"),
    )
    inside = classify(
        c,
        Observation(Outcome.MISMATCH, "m", metrics={**metrics, "where": {"border": 4, "interior": 1}}),
        "tosa",
        Backend("1.5.1"),
    )
    assert border.outcome is Outcome.KNOWN_ISSUE and inside.outcome is Outcome.MISMATCH


def test_a_rejection_left_on_the_cpu_for_another_reason_is_not_expected():
    c = _case("tconv2d_ic4_oc4_i6x6_k3_d2")
    rule = next(r for r in REJECTIONS if r.name == "tconv-dilation")
    said = (
        "left on CPU: aten.convolution.default; the partitioner: convolution: Transpose convolutions with "
        "dilation are not supported."
    )
    ok = classify(c, Observation(Outcome.NOT_DELEGATED, said, error=said.split("partitioner: ")[1]), "tosa")
    assert (ok.outcome, ok.rejection) == (Outcome.EXPECTED_REJECTION, rule.name)
    other = "left on CPU: aten.convolution.default; the partitioner: convolution: Node was not marked as quantized"
    got = classify(c, Observation(Outcome.NOT_DELEGATED, other, error=other.split("partitioner: ")[1]), "tosa")
    assert got.outcome is Outcome.NOT_DELEGATED and got.rejection == ""


def test_an_entry_holds_only_for_its_releases():
    issue = _issue("bf16-tconv-acc-type")
    c = _case("tconv2d_ic4_oc4_i6x6_k3_s2_p1_qbf16")
    message = "reference model refused the graph: OpFactory could not allocate op TRANSPOSE_CONV2D input=(BF16 rank 4)"
    seen = Observation(Outcome.RUNNER_ERROR, message, stage="run", error=message)
    assert classify(c, seen, "tosa", Backend("1.5.1")).issue == issue.id
    outside = Backend("0.9.0")
    assert not issue.holds(outside)
    assert classify(c, seen, "tosa", outside).outcome is Outcome.RUNNER_ERROR
    passed = classify(c, Observation(Outcome.PASS), "tosa", outside)
    assert passed.outcome is Outcome.PASS and passed.stale == ""  # not stale where it does not apply


def test_a_source_tree_is_placed_by_its_version_and_its_commits():
    h = holds(">=1.4.0", introduced_by="a" * 40, fixed_by="b" * 40)
    tree = "src@0123456789ab"
    assert h(Backend("1.5.0", tree, (("a" * 40, True), ("b" * 40, False))))
    assert not h(Backend("1.5.0", tree, (("a" * 40, True), ("b" * 40, True))))  # has the fix
    assert not h(Backend("1.5.0", tree, (("a" * 40, False), ("b" * 40, False))))  # before the bug
    assert h(Backend("1.5.0", tree))  # commits unknown to the tree: the version decides
    assert h(Backend("1.3.1", tree, (("a" * 40, True), ("b" * 40, False))))  # history outranks the label
    assert not holds(">=1.4.0")(Backend("1.3.1", tree))  # no commit known: the label decides
    assert holds(">=1.4.0")(Backend("1.6.0a0", tree))


def test_a_trees_version_label_is_the_development_of_that_release():
    """main's version.txt names the release it leads to: a tree that says 1.5.0 lacks what was fixed for 1.5.0
    after it, and has what 1.5.0 introduced only where its history says so."""
    tree = "src@0123456789ab"
    assert holds("<1.5.0")(Backend("1.5.0", tree)) and not holds(">=1.5.0")(Backend("1.5.0", tree))
    assert not holds("<1.5.0")(Backend("1.5.0")) and holds(">=1.5.0")(Backend("1.5.0"))  # the release itself
    fixed_later = holds("<1.5.0", fixed_by="b" * 40)
    assert not fixed_later(Backend("1.5.0", tree, (("b" * 40, True),)))
    assert fixed_later.basis(Backend("1.5.0", tree, (("b" * 40, False),))) == f"placed by history: lacks {'b' * 12}"
    assert fixed_later.basis(Backend("1.5.0", tree)).startswith("placed by version label 1.5.0.dev0")
    assert fixed_later.basis(Backend("1.5.0")) == ""


def test_a_known_issue_on_a_tree_says_how_the_tree_was_placed():
    issue = _issue("a16w8-add-rescale-beyond-shift-range")
    c = _case("conv2d_ic8_oc8_i12x12_k3_p1_qa16w8_cxadd")
    message = "TOSA_UNPREDICTABLE: OpRescale failure: apply_scale_32(): value should stay within [-262144, 262143]"
    seen = Observation(Outcome.RUNNER_ERROR, message, stage="run", error=message)
    before_fix = Backend("1.5.0", "src@0123456789ab", ((issue.holds.fixed_by, False),))
    got = classify(c, seen, "tosa", before_fix)
    assert got.issue == issue.id and got.reason.endswith(f"[placed by history: lacks {issue.holds.fixed_by[:12]}]")
    after_fix = Backend("1.5.0", "src@0123456789ab", ((issue.holds.fixed_by, True),))
    assert classify(c, seen, "tosa", after_fix).outcome is Outcome.RUNNER_ERROR  # a tree with the fix: new failure
    assert classify(c, seen, "tosa", Backend("1.4.1")).reason == message  # a release: nothing to add
