"""ConvConfig validation and the descriptor: round trip, rules, errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config import ConfigError, ConvConfig, parse_descriptor
from harness.contexts.names import CONTEXT_NAMES
from harness.descriptor import format_descriptor
from harness.policy.schemes import SCHEME_NAMES
from harness.validation import DATASETS, DYNAMICS, PADDING_MODES


@st.composite
def configs(draw) -> ConvConfig:
    """Valid configs over every field (invalid draws are rejected by assume)."""
    rank = draw(st.sampled_from([1, 2, 3]))
    dims = lambda lo, hi: st.tuples(*[st.integers(lo, hi)] * rank)  # noqa: E731
    transposed = draw(st.booleans())
    groups = draw(st.sampled_from([1, 2, 3, 4]))
    in_ch = groups * draw(st.integers(1, 4))
    out_ch = groups * draw(st.integers(1, 4))
    kernel = draw(dims(1, 5))
    stride = draw(dims(1, 3))
    dilation = draw(dims(1, 3))
    if transposed:
        padding = draw(dims(0, 2))
        output_padding = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
        padding_mode = "zeros"
    else:
        padding = draw(st.one_of(dims(0, 3), st.sampled_from(["valid", "same"])))
        if padding == "same":
            stride = (1,) * rank
        output_padding = (0,) * rank
        padding_mode = draw(st.sampled_from(PADDING_MODES))
    input_size = draw(dims(6, 20))
    try:
        return ConvConfig(
            rank=rank,
            transposed=transposed,
            batch=draw(st.integers(1, 3)),
            in_channels=in_ch,
            out_channels=out_ch,
            input_size=input_size,
            kernel=kernel,
            stride=stride,
            padding=padding,
            dilation=dilation,
            output_padding=output_padding,
            groups=groups,
            bias=draw(st.booleans()),
            padding_mode=padding_mode,
            scheme=draw(st.sampled_from(SCHEME_NAMES)),
            dataset=draw(st.sampled_from(DATASETS)),
            context=draw(st.sampled_from(CONTEXT_NAMES)),
            dynamic=draw(st.sampled_from(DYNAMICS)),
        )
    except ConfigError:
        from hypothesis import assume

        assume(False)


@settings(max_examples=400, deadline=None)
@given(configs())
def test_descriptor_round_trips_and_is_safe_as_id_and_file_name(c):
    """One set of drawn configs for both properties (a draw is most of the cost: many are rejected)."""
    d = format_descriptor(c)
    assert parse_descriptor(d) == c
    assert format_descriptor(parse_descriptor(d)) == d
    assert re.fullmatch(r"[a-z0-9_x-]+", c.descriptor)
    assert len(c.descriptor) < 200


def test_short_descriptor_takes_defaults():
    c = parse_descriptor("conv2d_ic8_oc16_i32x32_k3")
    assert c == ConvConfig(rank=2, in_channels=8, out_channels=16, input_size=(32, 32), kernel=(3, 3))
    assert c.stride == (1, 1) and c.padding == (0, 0) and c.scheme == "fp32" and c.bias


def test_tokens_in_any_order():
    a = parse_descriptor("conv2d_ic8_oc16_i32x32_k3_s2_p1_qa8w8")
    b = parse_descriptor("conv2d_qa8w8_p1_s2_k3_i32x32_oc16_ic8")
    assert a == b


def test_canonical_descriptor_is_stable():
    # A baseline written today must parse to the same config next year: pin the format.
    c = ConvConfig(
        rank=2,
        in_channels=8,
        out_channels=16,
        input_size=(32, 32),
        kernel=(3, 3),
        stride=(2, 2),
        padding=(1, 1),
        scheme="a8w8",
    )
    assert c.descriptor == "conv2d_n1_ic8_oc16_g1_i32x32_k3x3_s2x2_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxnone"
    t = parse_descriptor("tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1")
    assert t.descriptor == "tconv2d_n1_ic8_oc4_g1_i8x8_k3x3_s2x2_p1x1_d1x1_op1x1_b1_pmzeros_qfp32_dsnormal_cxnone"
    # Dynamic dims are the one token printed only when set: static ids never changed.
    dyn = parse_descriptor("conv2d_n2_ic8_oc16_i32x32_k3_dyall")
    assert dyn.descriptor.endswith("_cxnone_dyall") and dyn.dynamic == "all"


BASE = dict(rank=2, in_channels=4, out_channels=4, input_size=(8, 8), kernel=(3, 3))


@pytest.mark.parametrize(
    "changes, field, rule",
    [
        ({"rank": 4}, "rank", "one of 1, 2, 3"),
        ({"batch": 0}, "batch", ">= 1"),
        ({"in_channels": 0}, "in_channels", ">= 1"),
        ({"groups": 3}, "groups", "divide in_channels"),
        ({"in_channels": 6, "groups": 3}, "groups", "divide out_channels"),
        ({"kernel": (3,)}, "kernel", "needs 2 value"),
        ({"stride": (0, 1)}, "stride", ">= 1"),
        ({"dilation": (1, 0)}, "dilation", ">= 1"),
        ({"padding": (-1, 0)}, "padding", ">= 0"),
        ({"padding": "full"}, "padding", "same, valid"),
        ({"padding": "same", "stride": (2, 2)}, "padding", "stride 1"),
        ({"kernel": (9, 3)}, "kernel", "output size in dim 0 would be 0"),
        ({"kernel": (5, 5), "dilation": (2, 2)}, "kernel", "must be >= 1"),
        ({"output_padding": (1, 0)}, "output_padding", "only a transposed conv"),
        ({"transposed": True, "output_padding": (1, 0)}, "output_padding", "smaller than max(stride, dilation)"),
        ({"transposed": True, "padding": "same"}, "padding", "integer padding only"),
        ({"transposed": True, "padding_mode": "reflect"}, "padding_mode", "only zeros"),
        ({"padding_mode": "wrap"}, "padding_mode", "one of zeros"),
        ({"padding_mode": "reflect", "padding": (8, 1)}, "padding", "padding <= 7"),
        ({"scheme": "int4"}, "scheme", "one of fp32"),
        ({"dataset": "weird"}, "dataset", "one of normal"),
        ({"context": "relu9"}, "context", "one of"),
        ({"bias": 1}, "bias", "a bool"),
        ({"dynamic": "height"}, "dynamic", "one of none, batch"),
        ({"dynamic": "spatial", "context": "cat"}, "dynamic", "need a context of none"),
        ({"dynamic": "batch"}, "dynamic", "example batch >= 2"),
        ({"dynamic": "spatial-even", "input_size": (8, 9)}, "dynamic", "multiple of 2, not (8, 9)"),
        ({"scheme": "fp8e4m3", "context": "relu"}, "scheme", "fp8e4m3 runs the conv alone"),
        ({"scheme": "fp8e5m2", "dynamic": "spatial"}, "scheme", "dy none"),
    ],
)
def test_validation_rule(changes, field, rule):
    with pytest.raises(ConfigError) as e:
        ConvConfig(**{**BASE, **changes})
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"invalid {field}=")
    assert rule in message


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty descriptor"),
        ("conv4d_ic1_oc1_i4_k1", "bad descriptor head"),
        ("conv2d_ic8_oc8_i8x8_k3_zz9", "unknown descriptor token 'zz9'"),
        ("conv2d_ic8_oc8_i8x8_k3_ic4", "repeats field in_channels"),
        ("conv2d_ic8_oc8_k3", "lacks required field(s) input_size"),
        ("conv2d_ic8_oc8_i8x8_k3_qa8w9", "invalid scheme=a8w9"),
        ("conv2d_ic8_oc8_i8x8_k3x3x3", "invalid kernel=3x3x3"),
    ],
)
def test_parse_errors_are_one_line(text, fragment):
    with pytest.raises(ConfigError) as e:
        parse_descriptor(text)
    assert fragment in str(e.value)
    assert "\n" not in str(e.value)


def test_output_size_matches_torch_formula():
    c = parse_descriptor("conv2d_ic3_oc8_i17x15_k3x5_s3x2_p1x2")
    assert c.output_size() == ((17 + 2 - 2 - 1) // 3 + 1, (15 + 4 - 4 - 1) // 2 + 1)
    t = parse_descriptor("tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1")
    assert t.output_size() == (16, 16)
    s = parse_descriptor("conv2d_ic4_oc8_i12x12_k4_psame")
    assert s.output_size() == (12, 12) and s.explicit_padding() == ((1, 2), (1, 2))


def test_depthwise_facts():
    assert parse_descriptor("conv2d_ic4_oc8_g4_i8x8_k3").depth_multiplier == 2
    assert not parse_descriptor("conv2d_ic8_oc12_g4_i8x8_k3").is_depthwise


@pytest.mark.processes
def test_a_config_too_big_for_a_worker_is_refused_before_anything_is_allocated():
    """The check is arithmetic on the config: no torch, no tensor (harness/policy/limits.py derives the limit)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom harness.config import ConfigError, parse_descriptor\n"
        "try:\n    parse_descriptor('conv2d_ic4096_oc4096_i512x512_k3')\nexcept ConfigError as e:\n    print(e)\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert "over the limit of 16,777,216" in out[0] and out[1] == "False"
    from harness.cases.network_convs import entries
    from harness.cases.tiers import cases_of
    from harness.config import elements
    from harness.policy.limits import MAX_CASE_ELEMENTS

    # No tier case comes within 2x of it: the largest are real networks' convs (7.1M elements: R3D-18's
    # 512x512x3x3x3 weight); the synthetic ones stay under 1% of it.
    networks = {e["base"] for e in entries()}
    sized = {c.descriptor.split("_pm")[0]: elements(c) for c in cases_of("full")}  # a shape's size, once
    assert max(sized.values()) * 2 < MAX_CASE_ELEMENTS
    assert max(n for base, n in sized.items() if base not in networks) * 100 < MAX_CASE_ELEMENTS
