"""The registry under mutation: for every entry, an observation inside its signature is explained, and one
just outside it (another message, another frame, another node left out or refused for another reason, a larger
error, another locus, another outcome) is not: it is reported as a new failure. The same for the documented
rejections, node by node. The observations are built from the entries' own patterns (`regex_example`), so a
widened signature (any message of its outcome) fails here."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from harness.config import parse_descriptor
from harness.expectations.applies import ANY
from harness.expectations.classify import Observation, classify
from harness.expectations.known_issues import registry
from harness.expectations.rejections import REJECTIONS
from harness.policy.targets import TARGETS
from harness.results.case_result import Outcome
from tests.expectations.regex_example import example
from tests.expectations.test_known_issues import _target_for, _tier

UNRELATED = "RuntimeError: an unrelated failure in SomeOtherPass"
ELSEWHERE = ("executorch/backends/arm/_passes/some_other_pass.py:SomeOtherPass.call",)
TOTAL = 1000


def _left(nodes: dict[str, str]) -> str:
    return f"left on CPU: {', '.join(f'aten.{op}.default' for op in nodes)}; the partitioner: " + "; ".join(
        f"{op}: {said}" for op, said in nodes.items()
    )


@dataclasses.dataclass
class Seen:
    reason: str
    metrics: dict
    frames: tuple[str, ...] | None


def inside(issue, outcome: str) -> Seen:
    """An observation the entry explains: its own words, frame, nodes, and its mismatch at its bounds."""
    pattern = issue.error_for(outcome)
    reason = example(pattern) if pattern is not None else ""
    if outcome == "not_delegated" and issue.left_on_cpu:
        reason = _left({op: example(said) for op, said in issue.left_on_cpu})
    frames = (issue.frame[0],) if issue.frame else () if issue.from_check else None
    metrics: dict = {}
    if outcome == "mismatch" and issue.mismatch.replay:  # the output is what the mechanism gives
        return Seen(reason, {"replays": {issue.mismatch.replay: {"max_lsb": 0, "fits": True}}, "max_lsb": 255}, frames)
    if outcome == "mismatch":
        b = issue.mismatch
        over = math.floor(b.max_share * TOTAL)
        metrics = {
            "n_total": TOTAL,
            "n_over": over,
            "where": {"border": 0 if b.locus == "interior" else over, "interior": over if b.locus == "interior" else 0},
        }
        metrics |= {
            k: v
            for k, v in (("max_lsb", b.max_lsb), ("max_err", b.max_err), ("sqnr_db", b.min_sqnr_db))
            if v is not None
        }
    return Seen(reason, metrics, frames)


def just_outside(issue, outcome: str, seen: Seen) -> dict[str, Seen]:
    """Observations one step outside the signature, each named for what changed."""
    out: dict[str, Seen] = {}
    if issue.error_for(outcome) is not None:
        nodes = [op for op, _ in issue.left_on_cpu] or ["convolution"]
        out["another message"] = dataclasses.replace(
            seen,
            reason=UNRELATED
            if outcome != "not_delegated"
            else _left({op: "refused for another reason" for op in nodes}),
        )
    if issue.frame or issue.from_check:
        out["another frame"] = dataclasses.replace(seen, frames=ELSEWHERE)
    if outcome == "not_delegated" and issue.left_on_cpu:
        nodes = {op: example(said) for op, said in issue.left_on_cpu}
        out["another node left out"] = dataclasses.replace(seen, reason=_left(nodes | {"max_pool2d": "Kernel too big"}))
        first = next(iter(nodes))
        out["a node refused for another reason"] = dataclasses.replace(seen, reason=_left(nodes | {first: UNRELATED}))
        fewer = {op: s for op, s in nodes.items() if op != first} or {"relu": nodes[first]}
        out["another set of nodes"] = dataclasses.replace(seen, reason=_left(fewer))
    if outcome == "mismatch" and issue.mismatch.replay:
        name = issue.mismatch.replay
        out["an output off the mechanism's"] = dataclasses.replace(
            seen, metrics=seen.metrics | {"replays": {name: {"max_lsb": 2, "fits": False}}}
        )
        out["another mechanism"] = dataclasses.replace(
            seen, metrics=seen.metrics | {"replays": {"some-other-mechanism": {"max_lsb": 0, "fits": True}}}
        )
        out["no mechanism at work"] = dataclasses.replace(seen, metrics={"max_lsb": 1})
    elif outcome == "mismatch":
        b, m = issue.mismatch, seen.metrics
        if b.max_lsb is not None:
            out["a larger error"] = dataclasses.replace(seen, metrics=m | {"max_lsb": b.max_lsb + 1})
        if b.max_err is not None:
            out["a larger error"] = dataclasses.replace(seen, metrics=m | {"max_err": b.max_err * 1.01 + 1e-6})
        if b.max_share < 1.0:
            out["more elements off"] = dataclasses.replace(
                seen, metrics=m | {"n_over": math.floor(b.max_share * TOTAL) + 11}
            )
        if b.min_sqnr_db is not None:
            out["a lower SQNR"] = dataclasses.replace(seen, metrics=m | {"sqnr_db": b.min_sqnr_db - 1})
        if b.locus != "any":
            other = "interior" if b.locus == "border" else "border"
            out["another locus"] = dataclasses.replace(seen, metrics=m | {"where": m["where"] | {other: 1}})
    return out


CASES = [(i, o) for i in registry() for o in i.outcomes]


@pytest.mark.parametrize("issue,outcome", CASES, ids=[f"{i.id}-{o}" for i, o in CASES])
def test_an_entry_explains_its_signature_and_nothing_just_outside_it(issue, outcome):
    seen = inside(issue, outcome)
    assert issue.explains(outcome, seen.metrics, seen.reason, seen.frames), f"{issue.id} does not explain {seen}"
    outside = just_outside(issue, outcome, seen)
    assert outside, f"{issue.id}: {outcome} has no signature to step out of: it would explain any {outcome}"
    explained = [what for what, s in outside.items() if issue.explains(outcome, s.metrics, s.reason, s.frames)]
    assert not explained, f"{issue.id} explains {', '.join(explained)}"
    other = next(o for o in ("timeout", "runner_error", "lowering_error") if o not in issue.outcomes)
    assert not issue.explains(other, seen.metrics, seen.reason, seen.frames)


WORDED = [(i, o) for i, o in CASES if i.error_for(o) is not None]  # a mismatch bounded by numbers alone is above


@pytest.mark.parametrize("issue,outcome", WORDED, ids=[f"{i.id}-{o}" for i, o in WORDED])
def test_a_widened_signature_is_caught(issue, outcome):
    """The test above has teeth: the entry widened to any message of its outcome explains the unrelated one."""
    widened = dataclasses.replace(
        issue,
        errors=tuple((o, re.compile("")) for o, _ in issue.errors),
        left_on_cpu=tuple((op, re.compile("")) for op, _ in issue.left_on_cpu),
    )
    seen = just_outside(issue, outcome, inside(issue, outcome))["another message"]
    assert widened.explains(outcome, seen.metrics, seen.reason, seen.frames)


@pytest.mark.parametrize(
    "issue",
    [i for i in registry() if set(i.outcomes) & {"lowering_error", "runner_error", "not_delegated", "mismatch"}],
    ids=lambda i: i.id,
)
def test_a_case_of_the_entry_outside_its_signature_is_reported_as_a_new_failure(issue):
    """Through classify, on a case of its tier: not a known issue, and its reason names the entry."""
    target = _target_for(issue)
    family = TARGETS[target].family
    config = parse_descriptor(next(d for d in _tier(issue.tier, target) if issue.matches(d, family, ANY)))
    outcome = issue.outcomes[0]
    seen = next(iter(just_outside(issue, outcome, inside(issue, outcome)).values()))
    result = classify(
        config,
        Observation(
            Outcome(outcome), seen.reason, metrics=seen.metrics, stage="lower", error=seen.reason, frames=seen.frames
        ),
        family,
        ANY,
    )
    assert result.outcome.value == outcome, "neither a known issue nor the case's documented rejection"
    assert "a new failure: outside the signature of" in result.reason and issue.id in result.reason


@pytest.mark.parametrize("rule", REJECTIONS, ids=lambda r: r.name)
def test_a_rejection_counts_only_for_the_conv_refused_in_its_words(rule):
    said = example(re.compile(rule.error_pattern, re.IGNORECASE))
    assert rule.refuses(_left({"convolution": said}), f"convolution: {said}")
    consequence = {"relu": "Was first node in partition and input aten_convolution_default had fp dtype."}
    assert rule.refuses(_left({"convolution": said} | consequence), "")
    if rule.subjects:  # the rule is about the conv: its words for another node are not it
        assert not rule.refuses(_left({"convolution": UNRELATED, "max_pool2d": said}), f"max_pool2d: {said}")
    else:  # a symbolic shape, refused wherever it meets an op
        assert rule.refuses(_left({"max_pool2d": said}), f"max_pool2d: {said}")
    assert not rule.refuses(_left({"convolution": said, "max_pool2d": "Kernel too big"}), ""), (
        "another node left out for a reason of its own"
    )
    assert rule.refuses(_left({"convolution": said, "hardtanh": "x"}), "", lambda op, s: op == "hardtanh"), (
        "another node a known issue accounts for"
    )
    assert not rule.refuses(_left({"convolution": UNRELATED}), UNRELATED)


def test_the_nodes_left_on_the_cpu_are_read_node_by_node_from_the_partitioners_words():
    """One reason given for several nodes names each of them (ExecuTorch 1.4.1 refuses a dynamic conv and the
    pool after it in the same words); bookkeeping nodes are not compute."""
    from harness.expectations.left_on_cpu import causes, cpu_nodes
    from harness.run.execute import partitioner_said

    words = "Node has symbolic shape, has the TOSA spec shape extension support?"
    said = partitioner_said(
        [
            (None, "aten.convolution.default", words),
            (None, "aten.max_pool2d_with_indices.default", f" {words}"),
            (None, "quantized_decomposed.dequantize_per_channel.default", "x"),
            (None, "aten.relu.default", "Was first node in partition and input aten_convolution_default had fp dtype."),
        ]
    )
    assert said == (
        f"convolution, max_pool2d_with_indices: {words}; relu: Was first node in partition and input "
        "aten_convolution_default had fp dtype."
    )
    nodes = cpu_nodes(
        "left on CPU: quantized_decomposed.dequantize_per_channel.default, aten.convolution.default, "
        f"aten.max_pool2d_with_indices.default, aten.relu.default; the partitioner: {said}"
    )
    assert nodes == {
        "convolution": words,
        "max_pool2d_with_indices": words,
        "relu": "Was first node in partition and input aten_convolution_default had fp dtype.",
    }
    assert set(causes(nodes)) == {"convolution", "max_pool2d_with_indices"}
    assert cpu_nodes("left on CPU: Vela placed 2 operator(s) on the CPU") is None


def test_every_replayed_entry_names_a_registered_mechanism():
    from harness.judging.replays import FLOAT_REPLAYS, REPLAYS

    named = {i.id: i.mismatch.replay for i in registry() if i.mismatch is not None and i.mismatch.replay}
    assert all(r in REPLAYS or r in FLOAT_REPLAYS for r in named.values()), named
