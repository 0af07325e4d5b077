"""The context grammar: spelling, old names, well-formedness, the bound, and the tier strategy."""

from __future__ import annotations

import itertools

import pytest
import torch

from harness.contexts.grammar import SLOTS, Composed, GrammarError, compositions, parse, spell
from harness.build.data import make_tensors
from harness.build.model import build_model
from harness.contexts.names import CONTEXT_NAMES, CONTEXTS, OUTSIDE_GRAMMAR, all_contexts, context_error
from harness.config import ConfigError, parse_descriptor

# What each named context was before the grammar (name: conv_layout, dynamic, exact_arithmetic, pools).
OLD_FLAGS = {
    "none": (True, True, True, False), "relu": (True, True, True, False), "relu6": (True, True, True, False),
    "hardtanh": (True, True, True, False), "add": (True, False, True, False), "relu-add": (True, False, True, False),
    "cat": (False, False, True, False), "relu6-cat": (False, False, True, False), "bn": (True, True, False, False),
    "permute-in": (True, False, True, False), "view-in": (True, False, True, False),
    "maxpool": (False, True, True, True), "avgpool": (False, True, False, True),
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


@pytest.mark.parametrize("name, why", [
    ("relu-relu", "needs a merge before it"),
    ("add-bn", "'bn' cannot come there"),
    ("maxpool-add", "never matches in size"),
    ("relu9", "cannot come there"),
    ("view-in-conv-in", "'conv-in' cannot come there"),
])
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
        "feed": "conv-in", "norm": "bn", "act": "relu6", "pool": "maxpool", "merge": "cat", "after": "relu"}
    assert parse("relu-add-relu") == {"act": "relu", "merge": "add", "after": "relu"}
    assert parse("none") == {}


COMPOSED_BASE = "conv2d_n2_ic4_oc4_i9x9_k3_p1_b1"


@pytest.mark.parametrize("name", [n for n in compositions() if "feed" not in parse(n) or n.startswith("conv-in")][::7])
def test_the_bound_dominates_the_output(name):
    """The DOT_PRODUCT bound is computed on |x|, |w|, |b|: it must be at least |output| everywhere."""
    try:
        c = parse_descriptor(f"{COMPOSED_BASE}_qfp32_cx{name}")
    except ConfigError:
        pytest.skip("the base does not admit it")
    tensors = make_tensors(c, seed=3)
    model = build_model(c, tensors, seed=3).double()
    xs = tuple(t.double() for t in tensors.inputs)
    with torch.no_grad():
        out, bound = model(*xs), model.bound(*xs)
    assert out.shape == bound.shape and bool((bound + 1e-12 >= out.abs()).all())
    assert model.dot_product_length() >= c.fan_in


def test_the_strategy_meets_every_activation_with_every_merge_in_every_scheme():
    from harness.tiers.compositions import PRODUCT_BASES, pairwise, products
    from harness.policy.schemes import GRAPH_SCHEMES

    got = {(parse(c.context).get("act"), parse(c.context).get("merge"), c.scheme) for c in products()
           if c.descriptor.startswith("conv2d_") and "after" not in parse(c.context)}
    want = set(itertools.product((None, *SLOTS["act"]), (None, *SLOTS["merge"]), GRAPH_SCHEMES))
    assert got == want and len(PRODUCT_BASES) >= 2
    pairs = {(a, parse(c.context).get(a), b, parse(c.context).get(b)) for c in pairwise()
             for a, b in itertools.combinations(SLOTS, 2)}
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
