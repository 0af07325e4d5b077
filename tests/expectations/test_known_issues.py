"""The known-issue registry and the documented rejections."""

from __future__ import annotations

import functools
import re

import pytest

from harness.config import parse_descriptor
from harness.expectations.applies import ANY
from harness.expectations.known_issues import RegistryError, known_issue, parse_registry, registry
from harness.expectations.rejections import expected_rejection
from harness.policy.targets import TARGETS


def test_registry_loads_and_every_entry_matches_something_plausible():
    issues = registry()
    assert issues, "the shipped registry parses and is not empty"
    for issue in issues:
        assert issue.reason and issue.link and issue.outcomes


def test_known_issue_matching():
    same = parse_descriptor("conv2d_ic4_oc8_i12x12_k4_psame_qa8w8").descriptor
    assert known_issue(same).id == "int-same-asymmetric-pad"
    assert known_issue(parse_descriptor("conv2d_ic4_oc8_i12x12_k4_psame_qfp32").descriptor) is None
    # Field matching: an even kernel at dilation 2 pads symmetrically, no issue.
    assert known_issue(parse_descriptor("conv2d_ic4_oc8_i12x12_k4_d2_psame_qa8w8").descriptor) is None
    assert (
        known_issue(parse_descriptor("conv1d_ic4_oc8_i12_k2_psame_qa16w8").descriptor).id == "int-same-asymmetric-pad"
    )


def test_a_case_hitting_two_issues_is_explained_by_the_one_matching_its_outcome():
    d = parse_descriptor("conv2d_n2_ic8_oc8_i12x12_k3_s2_p1_cxrelu6_dyspatial_qa8w8").descriptor
    refused = (
        "left on CPU: aten.hardtanh.default; the partitioner: hardtanh: Node was not marked as quantized in the Arm "
        "backend."
    )
    assert known_issue(d, "not_delegated", {}, refused).id == "int-relu6-not-delegated"
    assert known_issue(d, "not_delegated", {}, "left on CPU: aten.hardtanh.default") is None  # not its message
    border = {"max_lsb": 2, "n_over": 3, "n_total": 1000, "sqnr_db": 30.0, "where": {"border": 12, "interior": 0}}
    assert known_issue(d, "mismatch", border).id == "int-dynamic-pad-zero-point"
    # its signature: a mismatch inside the image is another bug
    assert known_issue(d, "mismatch", {**border, "where": {"border": 12, "interior": 1}}) is None
    assert known_issue(d, "mismatch", {}) is None
    assert known_issue(d, "runner_error") is None
    # stride 1: the padding stays static, the zero point is right
    assert (
        known_issue(parse_descriptor("conv2d_ic8_oc8_i12x12_k3_p1_dyspatial_qa8w8").descriptor, "mismatch", border)
        is None
    )


def test_error_signature_limits_what_an_entry_explains():
    d = parse_descriptor("tconv2d_n2_ic4_oc8_i7x8_k3_s2_p1_op1_dyspatial").descriptor
    crash = "lower: RuntimeError: Unknown operator tosa.TRANSPOSE_CONV2D.default for TOSA : TOSA-1.1+FP+shape"
    assert known_issue(d, "lowering_error", {}, crash).id == "dynamic-tconv-no-tosa-1.1-visitor"
    assert known_issue(d, "lowering_error", {}, "lower: KeyError: 'something else'") is None


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[[issue]]\nid='x'\n", "missing field 'tier'"),
        (
            "[[issue]]\nid='x'\ntier='weekly'\ndescriptor='a'\noutcomes=['mismatch']\nreason='r'\nlink='l'\nexecutorch='>=1.4'\n",
            "unknown tier 'weekly'; tiers: smoke, nightly, full",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='('\noutcomes=['mismatch']\nreason='r'\nlink='l'\nexecutorch='>=1.4'\n",
            "bad descriptor regex",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['pass']\nreason='r'\nlink='l'\nexecutorch='>=1.4'\n",
            "unknown outcome",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['lowering_error']\nreason='r'\nlink='l'\n",
            "missing field 'executorch'",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['lowering_error']\nreason='r'\nlink='l'\n"
            "executorch='1.4+'\nerror='x'\n",
            "executorch='1.4+' is not a PEP 440 specifier set",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['lowering_error']\nreason='r'\nlink='l'\n"
            "executorch='>=1.4'\n",
            "lowering_error needs an error pattern",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['not_delegated']\nreason='r'\nlink='l'\n"
            "executorch='>=1.4'\n",
            "not_delegated needs an error pattern",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['mismatch']\nreason='r'\nlink='l'\n"
            "executorch='>=1.4'\n",
            "a mismatch needs an [issue.mismatch] table",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['mismatch']\nreason='r'\nlink='l'\n"
            "executorch='>=1.4'\n[issue.mismatch]\nmax_share=0.1\nlocus='any'\nmeasured='m'\n",
            "need max_lsb (INT) or max_err",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['mismatch']\nreason='r'\nlink='l'\n"
            "executorch='>=1.4'\n[issue.mismatch]\nmax_lsb=3\nmax_share=0.1\nlocus='edge'\nmeasured='m'\n",
            "locus 'edge'",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['lowering_error']\nreason='r'\nlink='l'\n"
            "executorch='>=1.4'\nerror='x'\nfixed_by='main'\n",
            "fixed_by='main' is not a commit hash",
        ),
        ("[[issue]\n", "not valid TOML"),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['mismatch']\nreason='r'\nlink='l'\nexecutorch='>=1.4'\nfields={colour='red'}\n",
            "unknown config field 'colour'",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['mismatch']\nreason='r'\nlink='l'\nexecutorch='>=1.4'\nerror='('\n",
            "bad error regex",
        ),
        (
            "[[issue]]\nid='x'\ntier='smoke'\ndescriptor='a'\noutcomes=['lowering_error']\nreason='r'\nlink='l'\nexecutorch='>=1.4'\nerror='x'\nstrict='no'\n",
            "strict must be true or false",
        ),
    ],
)
def test_bad_registry_is_one_clear_line(text, fragment):
    with pytest.raises(RegistryError) as e:
        parse_registry(text, "test.toml")
    assert fragment in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "descriptor, rule",
    [
        ("tconv2d_ic4_oc4_i6x6_k3_d2", "tconv-dilation"),
        ("tconv1d_ic4_oc4_i6_k3", "tconv-not-2d"),
        ("tconv3d_ic4_oc4_i6x6x6_k3", "tconv-not-2d"),
        ("tconv2d_ic4_oc4_g2_i6x6_k3_qa8w8", "tconv-grouped-per-channel"),
        ("tconv2d_ic4_oc4_i6x6_k3_p3", "tconv-out-pad-exceeds-kernel"),
    ],
)
def test_documented_rejections(descriptor, rule):
    assert expected_rejection(parse_descriptor(descriptor)).name == rule


@pytest.mark.parametrize(
    "descriptor",
    ["tconv2d_ic4_oc4_g2_i6x6_k3_qa8w8-pt", "tconv2d_ic4_oc4_i6x6_k3_p2", "conv2d_ic4_oc4_i6x6_k3_d2"],
)
def test_supported_configs_are_not_rejected(descriptor):
    assert expected_rejection(parse_descriptor(descriptor)) is None


@functools.cache
def _tier(name: str, target: str) -> tuple[str, ...]:
    from harness.cases.tiers import cases_of

    return tuple(c.descriptor for c in cases_of(name, target=target))


def _target_for(issue) -> str:
    """The target whose tier an entry is checked against: tosa, or the first of its families'."""
    from harness.policy.targets import TARGETS

    if not issue.families or "tosa" in issue.families:
        return "tosa"
    return next(t.name for t in TARGETS.values() if t.family in issue.families and t.runner == "tosa-ref")


@pytest.mark.parametrize("issue", registry(), ids=lambda i: i.id)
def test_every_entry_matches_a_case_of_the_tier_it_names(issue):
    target = _target_for(issue)
    assert any(issue.matches(d, TARGETS[target].family, ANY) for d in _tier(issue.tier, target)), (
        f"{issue.id} names tier {issue.tier}, which has no case it matches: move it, or drop the entry"
    )


ERROR_ENTRIES = [i for i in registry() if "lowering_error" in i.outcomes]
ELSEWHERE = (
    "executorch/backends/arm/_passes/some_other_pass.py:SomeOtherPass.call",
    "torch/fx/interpreter.py:Interpreter.run_node[SomeOtherPass]",
)


@pytest.mark.parametrize("issue", ERROR_ENTRIES, ids=lambda i: i.id)
def test_an_error_entry_names_where_its_error_arises_and_a_frame_elsewhere_is_a_new_failure(issue):
    """The entry's own message from another pass is another failure: every error entry names a frame (a function,
    file or pass of the traceback, measured), and an observation whose frames lack it is not explained."""
    import dataclasses

    anything = dataclasses.replace(issue, errors=tuple((o, re.compile("")) for o, _ in issue.errors))
    if issue.from_check:  # the harness's check of the lowered graph: the same words raised anywhere are not it
        assert anything.explains("lowering_error", {}, "any message", None)
        assert not anything.explains("lowering_error", {}, "any message", ELSEWHERE)
        return
    assert issue.frame, f"{issue.id} matches its message anywhere: name the frame it arises in (frame = ...)"
    own = (ELSEWHERE[0], f"torch/x.py:f[{issue.frame[0]}]")
    assert anything.explains("lowering_error", {}, "any message", own)
    assert not anything.explains("lowering_error", {}, "any message", ELSEWHERE), (
        f"{issue.id} explains an error raised elsewhere"
    )
    assert anything.explains("lowering_error", {}, "any message", None)  # a result from before frames were kept


LEFT_ON_CPU = [i for i in registry() if "not_delegated" in i.outcomes]


@pytest.mark.parametrize("issue", LEFT_ON_CPU, ids=lambda i: i.id)
def test_a_left_on_the_cpu_entry_names_every_node_and_its_reason(issue):
    """Another node left on the CPU, or a node refused for another reason, is a new failure even while the
    registered line is in the partitioner's text."""
    import dataclasses

    assert issue.left_on_cpu, f"{issue.id} matches the partitioner's whole text: name each node (left_on_cpu = ...)"
    anything = dataclasses.replace(
        issue,
        errors=tuple((o, re.compile("")) for o, _ in issue.errors),
        left_on_cpu=tuple((op, re.compile("")) for op, _ in issue.left_on_cpu),
    )
    ops = [op for op, _ in issue.left_on_cpu]

    def reason(nodes: list[str], said: str = "whatever") -> str:
        return f"left on CPU: {', '.join(f'aten.{op}.default' for op in nodes)}; the partitioner: " + "; ".join(
            f"{op}: {said}" for op in nodes
        )

    assert anything.explains("not_delegated", {}, reason(ops))
    assert not anything.explains("not_delegated", {}, reason([*ops, "max_pool2d_with_indices"]))
    assert not anything.explains("not_delegated", {}, reason(ops[1:] or ["relu"]))
    assert not issue.explains("not_delegated", {}, reason(ops, "refused for another reason entirely"))
