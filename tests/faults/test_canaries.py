"""Every canary fault is caught by the smoke tier: proof that the harness can fail.

For each canary the smoke cases are tried, those that reach the faulty branch
first, until one is not green; the test fails if none is. (The clean smoke
run is tests/test_sweep.py in the same session: all green.)
"""

from __future__ import annotations

import pytest

from harness.cases.tiers import cases_of
from harness.faults.canaries import CANARIES
from harness.run.execute import run_case

pytestmark = pytest.mark.lowering


# The fp8 canary's branch (the FP16 bias of an fp8 conv) needs an FP profile: Ethos-U targets lower INT only.
UNREACHABLE = {"ethos-u55-128": ("fp8-bias",)}
PAIRS = [(t, n) for t in ("tosa", "ethos-u55-128") for n in CANARIES if n not in UNREACHABLE.get(t, ())]


@pytest.mark.tier
@pytest.mark.parametrize("target, name", PAIRS, ids=[f"{t}-{n}" for t, n in PAIRS])
def test_canary_is_caught_by_the_smoke_tier(target, name):
    canary = CANARIES[name]
    cases = cases_of("smoke", target=target)
    ordered = [c for c in cases if canary.relevant(c)] + [c for c in cases if not canary.relevant(c)]
    assert canary.relevant(ordered[0]), f"no smoke case reaches the branch of {name}: the tier misses it"
    tried = []
    for config in ordered:
        result = run_case(config, 0, target, canary=name)
        tried.append(config.descriptor)
        if not result.green:
            assert result.canary == name and "--canary" in result.repro
            return
    pytest.fail(f"canary {name} ({canary.fault}) was not caught by any of {len(tried)} smoke cases on {target}")


@pytest.mark.parametrize("target", list(UNREACHABLE))
def test_a_canary_left_out_cannot_reach_the_target(target):
    """No case of the target's full tier reaches the branch of a canary left out for it."""
    for name in UNREACHABLE[target]:
        assert not any(CANARIES[name].relevant(c) for c in cases_of("full", target=target)), name


def _arm_backend_state() -> dict:
    """Every attribute of every loaded module of the Arm backend, and of the classes they define, by identity."""
    import sys

    state = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("executorch.backends.arm"):
            continue
        for attr, value in list(vars(module).items()):
            state[(name, attr)] = id(value)
            if isinstance(value, type) and value.__module__ == name:
                state.update({(name, attr, k): id(v) for k, v in vars(value).items()})
    return state


@pytest.mark.parametrize("name", list(CANARIES))
def test_a_canary_is_undone_without_a_trace(name):
    from harness.faults.canaries import injected
    from harness.run.process import setup_process

    setup_process()  # the backend's modules are loaded
    before = _arm_backend_state()
    with injected(name):
        during = _arm_backend_state()
    after = _arm_backend_state()
    changed = {k for k in before if during.get(k) != before[k]}
    assert changed, f"canary {name} changed nothing in the Arm backend"
    assert after == before, f"canary {name} left {sorted(k for k in before if after.get(k) != before[k])}"
