"""Every canary fault is caught by the smoke tier: proof that the harness can fail.

For each canary the smoke cases are tried, those that reach the faulty branch
first, until one is not green; the test fails if none is. (The clean smoke
run is tests/test_sweep.py in the same session: all green.)
"""

from __future__ import annotations

import pytest

from harness.canaries import CANARIES
from harness.cases.sweeps import smoke
from harness.execute import run_case


@pytest.mark.parametrize("name", list(CANARIES))
def test_canary_is_caught_by_the_smoke_tier(name):
    canary = CANARIES[name]
    cases = smoke()
    ordered = [c for c in cases if canary.relevant(c)] + [c for c in cases if not canary.relevant(c)]
    assert canary.relevant(ordered[0]), f"no smoke case reaches the branch of {name}: the tier misses it"
    tried = []
    for config in ordered:
        result = run_case(config, 0, canary=name)
        tried.append(config.descriptor)
        if not result.green:
            assert result.canary == name and "--canary" in result.repro
            return
    pytest.fail(f"canary {name} ({canary.fault}) was not caught by any of {len(tried)} smoke cases")


def test_a_canary_leaves_no_trace():
    from executorch.backends.arm._passes import rewrite_conv_pass

    before = rewrite_conv_pass.RewriteConvPass.insert_output_rescale
    from harness.canaries import injected

    with injected("per-channel-rescale"):
        assert rewrite_conv_pass.RewriteConvPass.insert_output_rescale is not before
    assert rewrite_conv_pass.RewriteConvPass.insert_output_rescale is before
