"""Policy is data, and complete: every scheme, context and target defines every
fact the harness reads about it, and the facts hold on a real case."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from harness.build.data import make_tensors, scheme_dtype
from harness.build.model import build_model
from harness.config import ConfigError, parse_descriptor
from harness.contexts.base import Context
from harness.contexts.grammar import POOLS, compositions
from harness.contexts.names import CONTEXTS
from harness.judging.compare import FP_FORMATS
from harness.judging.oracles import fp64_with_bound
from harness.policy.schemes import DECIDING_RULES, INT_RULE, RULES, SCHEMES
from harness.policy.targets import TARGETS
from harness.runners.registry import RUNNERS

# A conv whose output shape equals its input shape fits every context.
BASE = "conv2d_n2_ic8_oc8_i12x12_k3_p1"


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_every_scheme_defines_every_fact(name):
    s = SCHEMES[name]
    assert s.tosa_spec.startswith("TOSA-1.0+") and s.rule in RULES
    if s.quantized:
        assert s.rule == INT_RULE and s.dtype is None and s.conv_format is None
        assert (
            s.quantizer.kind in ("a8w8", "a16w8", "a8w4")
            and s.sqnr is not None
            and s.sqnr.db > 0
            and s.sqnr.basis != "none"
        )
        assert "+INT" in s.tosa_spec
    else:
        assert isinstance(getattr(torch, s.dtype), torch.dtype) and s.conv_format in FP_FORMATS
        assert name in FP_FORMATS  # the output format of the DOT_PRODUCT rule
        assert "+FP" in s.tosa_spec
    assert any(r.startswith(s.rule) for r in DECIDING_RULES)
    # the table and the descriptor agree: the scheme parses, where the table says it may run
    assert parse_descriptor(f"{BASE}_q{name}").scheme == name
    if not s.in_graphs:
        with pytest.raises(ConfigError):
            parse_descriptor(f"{BASE}_q{name}_cxrelu")


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_target_names_a_runner_and_its_schemes(name):
    t = TARGETS[name]
    assert t.runner in RUNNERS and set(t.schemes) <= set(SCHEMES) and t.description


_FACTS = {f.name: f.type for f in dataclasses.fields(Context)}


# Every named context and about 70 compositions of the grammar (harness.contexts.grammar), spread over it.
def _admitted(name: str) -> bool:
    try:
        parse_descriptor(f"{BASE}_cx{name}")
    except ConfigError:  # a shape the composition refuses (an FPN join needs an even output): not this test's
        return False
    return True


_CONTEXTS = sorted(set(CONTEXTS) | {n for n in compositions()[:: len(compositions()) // 80] if _admitted(n)})


def _sample(name: str):
    c = parse_descriptor(f"{BASE}_cx{name}")
    t = make_tensors(c, 0)
    return c, t, build_model(c, t)


@pytest.mark.parametrize("name", _CONTEXTS)
def test_every_context_defines_every_fact(name):
    cx = CONTEXTS[name]
    assert cx.name == name
    for fact in _FACTS:
        assert getattr(cx, fact) is not None, f"context {name} leaves {fact} undefined"
    assert isinstance(cx.conv_layout, bool) and isinstance(cx.dynamic, bool)
    assert isinstance(cx.exact_arithmetic, bool) and isinstance(cx.conv_index, int)


@pytest.mark.parametrize("name", _CONTEXTS)
def test_context_facts_hold_on_a_real_case(name):
    cx = CONTEXTS[name]
    c, t, m = _sample(name)
    # the inputs it asks for are the ones its forward takes, and it runs
    with torch.no_grad():
        out = m(*t.inputs)
    conv_out = (c.batch, c.out_channels, *c.output_size())
    # conv_layout: the output is the conv's own (N, C, spatial) tensor in shape and layout; a pool that keeps
    # the size (stride 1, padded: SPPF's 5x5, Inception's 3x3) gives that shape with other values
    same_size_pool = getattr(cx, "pool", None) and POOLS[cx.pool].size(c.output_size()[0]) == c.output_size()[0]
    assert (tuple(out.shape) == conv_out) == cx.conv_layout or (same_size_pool and not cx.conv_layout)
    # the bound has the output's shape and bounds it
    ref, bnd = fp64_with_bound(m, t.inputs)
    assert bnd.shape == ref.shape == out.shape and bool((bnd >= ref.abs() - 1e-9).all())
    # the dot-product length counts at least the conv's own products
    assert m.dot_product_length() >= c.fan_in
    # every calibration sample fits the forward
    for sample in t.calibration:
        assert len(sample) == len(t.inputs)
    # dynamic dims are admitted exactly where the context says
    if cx.dynamic:
        parse_descriptor(f"{BASE}_cx{name}_dybatch")
    else:
        with pytest.raises(ConfigError, match="dynamic dims need a context"):
            parse_descriptor(f"{BASE}_cx{name}_dybatch")


class _Q:
    """Quantization parameters shaped like harness.qparams', for the tolerance arithmetic."""

    def __init__(self, scale_in, scale_out, w_scales, w_int):
        self.input = type("T", (), {"scale": scale_in})()
        self.output = type("T", (), {"scale": scale_out})()
        self.weight = type("W", (), {"scales": w_scales, "axis": 0, "values": w_int})()


@pytest.mark.parametrize("name", sorted(CONTEXTS))
def test_every_context_gives_an_int_tolerance_of_at_least_one_lsb(name):
    conv = _Q(0.02, 0.05, (0.01, 0.02), torch.ones(2, 3, dtype=torch.int8))
    quantized = type("QM", (), {"qparams": conv, "output": conv.output, "convs": [conv, conv]})()
    tol = CONTEXTS[name].int_tolerance(quantized)
    assert isinstance(tol, int) and tol >= 1
    if name in ("add", "relu-add", "permute-add"):  # a requantized output through an add
        assert tol == 1 + math.ceil(0.05 / 0.05)
    if name in ("chain", "chain3"):  # gain = 3 * 0.02 * 0.02 / 0.05 per further conv
        assert tol == math.ceil(1 + 3 * 0.02 * 0.02 / 0.05)


def test_float_scheme_dtypes_come_from_the_table():
    assert scheme_dtype("bf16") is torch.bfloat16 and scheme_dtype("a8w8") is None
    assert scheme_dtype("fp8e5m2") is torch.float8_e5m2
