"""The `network_convs` strategy: the convs of real networks, as their definitions here run them."""

from __future__ import annotations

import pytest

from harness.cases import network_convs
from harness.cases.classes import structural_class
from harness.cases.tiers import cases_of
from harness.networks import convs


@pytest.mark.parametrize("network", list(convs.NETWORKS))
def test_the_stored_convs_are_the_networks_own(network):
    """network_convs.json is what the definitions run: regenerate it with `python -m harness.networks.convs --write`."""
    stored = [e for e in network_convs.entries() if e["network"] == network]
    assert stored == convs.extract(network)


def test_the_networks_and_their_size():
    per = {n: sum(1 for e in network_convs.entries() if e["network"] == n) for n in convs.NETWORKS}
    assert per == {
        "mobilenet_v2": 52,
        "mobilenet_v3_large": 62,
        "mobilenet_v3_small": 52,
        "resnet18": 20,
        "efficientnet_b0": 81,
        "shufflenet_v2": 56,
        "squeezenet1_1": 26,
        "r3d_18": 20,
        "r2plus1d_18": 37,
        "ds_cnn": 9,
        "mobilenet_v1_025_vww": 27,
        "resnet8": 9,
        "m5": 4,
    }
    ranks = {e["base"][:6] for e in network_convs.entries()}
    assert ranks == {"conv1d", "conv2d", "conv3d"}


def test_nightly_has_one_conv_per_class_of_the_networks_and_full_every_one():
    nightly, full = {c.descriptor for c in cases_of("nightly")}, {c.descriptor for c in cases_of("full")}
    one_per_class = network_convs.cases()
    every_conv = network_convs.cases(by="conv")
    assert {c.descriptor for c in one_per_class} <= nightly and {c.descriptor for c in every_conv} <= full
    every_class = {structural_class(c) for c in network_convs.cases(by="conv")}
    assert {structural_class(c) for c in one_per_class} == every_class
    assert len(network_convs.distinct("class")) == len(every_class) < len(network_convs.distinct("conv"))
    with pytest.raises(ValueError, match="invalid distinct-by 'layer'"):
        network_convs.distinct("layer")


def test_each_conv_records_what_its_network_puts_around_it_in_the_grammar_or_why_not():
    from harness.contexts.names import context_error

    for e in network_convs.entries():
        assert context_error(e["context"]) == "", e
        assert e["unspelled"] == "" or ": " in e["unspelled"], e  # what stops the grammar, then why
    spelled = {e["context"] for e in network_convs.entries()}
    assert {
        "bn-relu6",
        "bn-hardswish",
        "bn-silu",
        "hardsigmoid-mul",
        "sigmoid-mul",
        "bn-addz-relu",
        "bn-relu-maxpool3p1",
        "relu-maxpool3ceil",
        "bn-silu-gapmean",
    } <= spelled
    assert any("2 users (mean, mul)" in why for why in network_convs.unspelled()), "the squeeze-excite fork is named"


def test_nightly_runs_every_neighbourhood_the_grammar_spells_around_its_smallest_conv():
    from harness.policy.schemes import GRAPH_SCHEMES

    nightly = {c.descriptor for c in cases_of("nightly")}
    cases = network_convs.in_context()
    assert {c.descriptor for c in cases} <= nightly
    assert {c.context for c in cases} == {e["context"] for e in network_convs.entries()} - {"none"}
    assert len(cases) == len(network_convs.neighbourhoods()) * len(GRAPH_SCHEMES)
