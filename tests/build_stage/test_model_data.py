"""Model, oracle conv and data: agree with torch, deterministic everywhere."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.build.data import make_tensors
from harness.build.model import build_model
from harness.config import ConfigError, ConvConfig, parse_descriptor
from harness.conv_ref import conv_forward


@settings(max_examples=300, deadline=None)
@given(
    rank=st.sampled_from([1, 2]),
    transposed=st.booleans(),
    groups=st.sampled_from([1, 2, 3]),
    in_ch=st.integers(1, 6),
    out_ch=st.integers(1, 6),
    size=st.integers(1, 7),
    kernel=st.integers(1, 6),
    stride=st.integers(1, 3),
    padding=st.one_of(st.integers(0, 4), st.sampled_from(["same", "valid"])),
    dilation=st.integers(1, 3),
    output_padding=st.integers(0, 2),
    padding_mode=st.sampled_from(["zeros", "reflect", "replicate", "circular"]),
)
def test_validation_accepts_exactly_what_torch_runs(
    rank, transposed, groups, in_ch, out_ch, size, kernel, stride, padding, dilation, output_padding, padding_mode
):
    if not transposed:
        output_padding = 0  # nn.ConvNd has no such argument; our own rule is tested in test_config
    fields = dict(
        rank=rank,
        transposed=transposed,
        groups=groups,
        in_channels=in_ch,
        out_channels=out_ch,
        input_size=(size,) * rank,
        kernel=(kernel,) * rank,
        stride=(stride,) * rank,
        padding=padding if isinstance(padding, str) else (padding,) * rank,
        dilation=(dilation,) * rank,
        output_padding=(output_padding,) * rank,
        padding_mode=padding_mode,
    )
    try:
        ConvConfig(**fields)
    except ConfigError:
        ours = False
    else:
        ours = True
    try:
        c2 = ConvConfig.__new__(ConvConfig)  # bypass validation to build the torch module
        for k, v in {**ConvConfig.__dataclass_fields__}.items():
            object.__setattr__(c2, k, fields.get(k, v.default))
        from harness.build.model import conv_module

        with torch.no_grad():
            out = conv_module(c2)(torch.randn(1, in_ch, *(size,) * rank))
        theirs = out.numel() > 0  # an empty output (a transposed conv can give one) is no case
    except (RuntimeError, ValueError, TypeError):
        theirs = False
    assert ours == theirs, f"ours={ours} torch={theirs} for {fields}"


@pytest.mark.parametrize(
    "descriptor",
    [
        "conv2d_n2_ic4_oc6_g2_i9x7_k3x2_s2x1_p1x0_d1x2_qa8w8",
        "tconv2d_ic4_oc8_i7x7_k4_s2_p1_b0",
        "conv1d_ic4_oc4_i12_k3_p2_pmreflect",
        "conv3d_ic2_oc4_i5x6x7_k2x3x1_s2x1x1",
        "conv2d_ic4_oc8_i12x12_k4_psame",
    ],
)
def test_oracle_conv_equals_the_module(descriptor):
    c = parse_descriptor(descriptor)
    t = make_tensors(c, 3)
    with torch.no_grad():
        expected = build_model(c, t)(*t.inputs)
    assert torch.equal(conv_forward(c, t.inputs[0], t.weight, t.bias), expected)


def _digest(descriptor: str, seed: int) -> str:
    t = make_tensors(parse_descriptor(descriptor), seed)
    h = hashlib.sha256()
    for x in (*t.inputs, t.weight, t.bias):
        h.update(x.numpy().tobytes())
    return h.hexdigest()


@pytest.mark.processes
def test_tensors_are_identical_in_another_process():
    d = "conv2d_ic8_oc16_i16x16_k3_s2_p1_qa8w8"
    code = f"from tests.build_stage.test_model_data import _digest; print(_digest({d!r}, 5))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == _digest(d, 5)


def test_tensors_depend_on_seed_and_descriptor():
    d = "conv2d_ic8_oc16_i16x16_k3_s2_p1_qa8w8"
    assert _digest(d, 0) != _digest(d, 1)
    assert _digest(d, 0) != _digest(d.replace("qa8w8", "qfp32"), 0)
