"""The context grammar: spelling, old names, well-formedness, the bound, and the tier strategy."""

from __future__ import annotations

import itertools

import pytest
import torch

from harness.build.data import make_tensors
from harness.build.model import build_model
from harness.config import ConfigError, parse_descriptor
from harness.contexts.grammar import SLOTS, Composed, GrammarError, compositions, parse, spell
from harness.contexts.names import CONTEXT_NAMES, CONTEXTS, OUTSIDE_GRAMMAR, all_contexts, context_error

# What each named context was before the grammar (name: conv_layout, dynamic, exact_arithmetic, pools).
OLD_FLAGS = {
    "none": (True, True, True, False),
    "relu": (True, True, True, False),
    "relu6": (True, True, True, False),
    "hardtanh": (True, True, True, False),
    "add": (True, False, True, False),
    "relu-add": (True, False, True, False),
    "cat": (False, False, True, False),
    "relu6-cat": (False, False, True, False),
    "bn": (True, True, False, False),
    "permute-in": (True, False, True, False),
    "view-in": (True, False, True, False),
    "maxpool": (False, True, True, True),
    "avgpool": (False, True, False, True),
}


def test_every_composition_spells_itself_and_parses_back():
    names = compositions()
    assert len(names) == len(set(names)) > 1000 and names[0] == "none"
    for name in names:
        assert spell(parse(name)) == name and CONTEXTS[name].name == name


@pytest.mark.parametrize("name", sorted(OLD_FLAGS))
def test_old_names_are_compositions_with_their_old_facts(name):
    cx = CONTEXTS[name]
    assert isinstance(cx, Composed) and cx.name == name
    assert (cx.conv_layout, cx.dynamic, cx.exact_arithmetic, cx.pools) == OLD_FLAGS[name]


def test_the_named_contexts_are_the_old_list_in_its_order():
    assert list(CONTEXTS) == list(CONTEXT_NAMES) and len(CONTEXT_NAMES) == 19
    # The list froze with the grammar; contexts outside the grammar added since are not in it.
    assert set(CONTEXT_NAMES) == set(OLD_FLAGS) | (set(OUTSIDE_GRAMMAR) - {"cond-nested"})
    assert set(all_contexts()) >= set(CONTEXT_NAMES)


@pytest.mark.parametrize(
    "name, why",
    [
        ("relu-relu", "needs a merge before it"),
        ("add-bn", "'bn' cannot come there"),
        ("maxpool-add", "never matches in size"),
        ("relu9", "cannot come there"),
        ("view-in-conv-in", "'conv-in' cannot come there"),
    ],
)
def test_ill_formed_compositions_get_one_line(name, why):
    with pytest.raises(GrammarError, match=why):
        parse(name)
    message = context_error(name)
    assert why in message and "\n" not in message and message.startswith(f"invalid context={name}")
    with pytest.raises(ConfigError, match="invalid context="):
        parse_descriptor(f"conv2d_ic8_oc8_i12x12_k3_p1_qfp32_cx{name}")
    assert name not in CONTEXTS


def test_each_slot_takes_at_most_one_token_in_order():
    assert parse("conv-in-bn-relu6-maxpool-cat-relu") == {
        "feed": "conv-in",
        "norm": "bn",
        "act": "relu6",
        "pool": "maxpool",
        "merge": "cat",
        "after": "relu",
    }
    assert parse("relu-add-relu") == {"act": "relu", "merge": "add", "after": "relu"}
    assert parse("none") == {}


COMPOSED_BASE = "conv2d_n2_ic4_oc4_i10x10_k3_p1_b1"


def _admitted(names: list[str], base: str) -> list[str]:
    """The compositions `base` admits (a residual add needs matching shapes, an FPN join an even output)."""
    out = []
    for n in names:
        try:
            parse_descriptor(f"{base}_qfp32_cx{n}")
        except ConfigError:
            continue
        out.append(n)
    return out


_BOUNDED = [n for n in compositions() if parse(n).get("feed") not in ("view-in", "permute-in")]


@pytest.mark.parametrize("name", _admitted(_BOUNDED[:: max(1, len(_BOUNDED) // 450)], COMPOSED_BASE))
def test_the_bound_dominates_the_output(name):
    """The DOT_PRODUCT bound is computed on |x|, |w|, |b|: it must be at least |output| everywhere."""
    c = parse_descriptor(f"{COMPOSED_BASE}_qfp32_cx{name}")
    tensors = make_tensors(c, seed=3)
    model = build_model(c, tensors, seed=3).double()
    xs = tuple(t.double() for t in tensors.inputs)
    with torch.no_grad():
        out, bound = model(*xs), model.bound(*xs)
    assert out.shape == bound.shape and bool((bound + 1e-12 >= out.abs()).all())
    assert model.dot_product_length() >= c.fan_in


def test_the_strategy_meets_every_activation_with_every_merge_in_every_scheme():
    from harness.cases.compositions import PRODUCT_BASES, pairwise, products
    from harness.policy.schemes import GRAPH_SCHEMES

    got = {
        (parse(c.context).get("act"), parse(c.context).get("merge"), c.scheme)
        for c in products()
        if c.descriptor.startswith("conv2d_") and "after" not in parse(c.context)
    }
    want = set(itertools.product((None, *SLOTS["act"]), (None, *SLOTS["merge"]), GRAPH_SCHEMES))
    assert got == want and len(PRODUCT_BASES) >= 2
    pairs = {
        (a, parse(c.context).get(a), b, parse(c.context).get(b))
        for c in pairwise()
        for a, b in itertools.combinations(SLOTS, 2)
    }
    for a, b in itertools.combinations(SLOTS, 2):
        for va, vb in itertools.product((None, *SLOTS[a]), (None, *SLOTS[b])):
            parts = {k: v for k, v in ((a, va), (b, vb)) if v}
            try:
                if parse(spell(parts)) != parts:  # a lone 'after' relu is the activation
                    continue
            except GrammarError:
                continue
            assert (a, va, b, vb) in pairs, (a, va, b, vb)


def test_every_pool_knows_the_output_size_torch_gives():
    """The second input of a merge after a pool is built from `Pool.size`: it must be torch's, ceil_mode too."""
    import torch

    from harness.contexts.grammar import POOLS

    for name, pool in POOLS.items():
        for n in range(pool.least, 20):
            y = pool(torch.zeros(1, 1, n, n + 1))
            assert tuple(y.shape[2:]) == (pool.size(n), pool.size(n + 1)), (name, n)


def test_ops_after_the_conv_count_as_roundings_in_the_output_format_not_as_ks():
    """An fp16 or bf16 graph adds, multiplies and folds a BN in fp16 or bf16: each of those is a whole unit of
    the DOT_PRODUCT rule, where KS terms accumulate in fp32 and shrink by 2^((23 - nf)/2)."""
    from harness.contexts.grammar import BN_FOLD_ROUNDINGS, Composed

    c = parse_descriptor("conv2d_ic4_oc4_g4_i10x10_k3_p1_qbf16")
    assert Composed.of("none").format_roundings(c) == 0
    assert Composed.of("bn-clamp-maxpool5p2-mul-relu").format_roundings(c) == BN_FOLD_ROUNDINGS + 1
    assert Composed.of("conv-in-sigmoid-addz").format_roundings(c) == 3
    assert Composed.of("conv-in-bn").dot_product_length(c) == c.fan_in + c.in_channels


NEW_BASE = "conv2d_n2_ic4_oc4_i10x10_k3_p1_b1"


@pytest.mark.parametrize(
    "act", ["silu", "hardswish", "hardsigmoid", "lrelu", "lrelu01", "gelu", "gelutanh", "tanh", "elu", "sigmoid"]
)
def test_each_activation_has_the_lipschitz_constant_and_magnitude_its_rule_states(act):
    """The rule's constants against the functions: max |f'| is the stated L (within 0.1%, never above), and a
    result with no cap is never larger than its input."""
    from harness.contexts.grammar import ACTIVATIONS

    a = ACTIVATIONS[act]
    y = torch.linspace(-12, 12, 240_001, dtype=torch.float64, requires_grad=True)
    f = a(act, y)
    (slope,) = torch.autograd.grad(f.sum(), y)
    steepest = float(slope.abs().max())
    assert steepest <= a.lipschitz * 1.0001 and steepest >= a.lipschitz * 0.999, (act, steepest)
    with torch.no_grad():
        assert (
            bool((f.abs() <= (y.abs() if a.cap is None else torch.full_like(y, a.cap)) + 1e-12).all()) or act == "elu"
        ), act  # elu: |f| <= |y| too; its cap stands for exp's absolute rounding near 0
        assert bool((f.abs() <= a.bound(y.abs()) + 1e-12).all()), act


@pytest.mark.parametrize("feed", ["pad-in", "reflect-in", "replicate-in", "up-in"])
def test_a_feed_gives_the_conv_its_own_input_size_from_a_smaller_model_input(feed):
    c = parse_descriptor(f"{NEW_BASE}_qfp32_cx{feed}-fpn")
    tensors = make_tensors(c, seed=1)
    model = build_model(c, tensors, seed=1)
    x, z = tensors.inputs
    assert tuple(x.shape[2:]) == ((8, 8) if feed != "up-in" else (5, 5))
    assert tuple(z.shape[2:]) == (5, 5), "the FPN join's second input is half the conv's output"
    with torch.no_grad():
        assert tuple(model(*tensors.inputs).shape) == (2, 4, 10, 10)


@pytest.mark.parametrize(
    "descriptor, why",
    [
        ("conv2d_ic4_oc4_i3x8_k3_p1_qfp32_cxreflect-in", "an input of at least 4"),
        ("conv2d_ic4_oc4_i2x8_k3_p1_qfp32_cxpad-in", "an input of at least 3"),
        ("conv2d_ic4_oc4_i9x8_k3_p1_qfp32_cxup-in", "must be even"),
        ("conv1d_ic4_oc4_i8_k3_p1_qfp32_cxup-in", "2D conv"),
        ("conv2d_ic4_oc4_i9x9_k3_p1_qfp32_cxfpn", "must be even"),
    ],
)
def test_the_new_parts_say_which_shapes_they_take(descriptor, why):
    with pytest.raises(ConfigError, match=why):
        parse_descriptor(descriptor)


def test_an_average_pool_is_a_dot_product_of_its_window():
    """TOSA's AVG_POOL2D takes the DOT_PRODUCT rule with KS its window: the window joins the conv's length, a global
    pool's is the whole map; a max pool rounds nothing."""
    c = parse_descriptor(f"{NEW_BASE}_qfp32")
    assert Composed.of("gap").dot_product_length(c) == c.fan_in + 100
    assert Composed.of("gapmean").dot_product_length(c) == c.fan_in + 100
    assert Composed.of("avgpool").dot_product_length(c) == c.fan_in + 9
    assert Composed.of("maxpool").dot_product_length(c) == c.fan_in
    assert Composed.of("silu").format_roundings(c) == 2 and Composed.of("hardsigmoid").format_roundings(c) == 3
